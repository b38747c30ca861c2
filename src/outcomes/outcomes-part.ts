import type { ChatCompleter } from "../chat/chat-types.js";
import type { ArtifactsConfig } from "../config.js";
import type { Store } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import type { AppPart } from "../server/app-part.js";
import { ServiceError } from "../server/errors.js";
import { StageFailure, type StageWork, type StageWorkResolver } from "../engine/stage-work.js";
import { registerArtifactRoutes, type PlanArtifactsShown } from "./artifact-routes.js";
import { createFileArtifactStore, withSignal, type ArtifactStore } from "./artifact-store.js";
import { deletePlanArtifacts } from "./plan-artifacts.js";
import { planDownload, type Download } from "./downloads.js";
import { isOutcomeId, type OutcomeId } from "../api/outcomes.js";
import { ebookStages } from "./ebook/ebook-stages.js";
import type { OutcomeDeps } from "./stage-support.js";
import { websiteStages } from "./website/website-stages.js";
import { createPostgresArtifactStore } from "./postgres-artifact-store.js";
import { createS3ArtifactStore } from "./s3-artifact-store.js";

export type { ArtifactStore } from "./artifact-store.js";
export type { OutcomeDeps } from "./stage-support.js";

/**
 * The work of every stage of every outcome, except the `review` gate, which
 * the plan state machine holds. Each stage reads what earlier stages stored in
 * `previous`, writes its artifacts under its own plan's keys, and can be
 * re-run after a crash: it overwrites its own outputs, never adds to them.
 */
export function createStageWork(deps: OutcomeDeps): StageWorkResolver {
  const stagesWith = (artifacts: ArtifactStore): Record<OutcomeId, Record<string, StageWork>> => ({
    website: websiteStages({ ...deps, artifacts }),
    ebook: ebookStages({ ...deps, artifacts }),
  });
  const stages = stagesWith(deps.artifacts);
  return (outcome, stageId) => {
    if (!isOutcomeId(outcome)) return failWith(new StageFailure("stage_failed", `unknown outcome ${outcome}`));
    if (!stages[outcome][stageId]) return failWith(new StageFailure("internal", `The ${outcome} outcome has no work for stage "${stageId}".`));
    return async (input) => {
      // The run's signal on every store call: a cancel, a lost lease or a shutdown stops a request the store holds.
      const work = stagesWith(withSignal(deps.artifacts, input.signal))[outcome][stageId]!;
      try {
        return await work(input);
      } catch (error) {
        // A store away or refusing the service is an outage, tried again as an upstream's is, in its own words.
        if (error instanceof ServiceError && error.type === "unavailable") {
          // With the wait the store asked for (a full disk asks longer than a bucket's blip), up to the engine's minute.
          const retryAfterSeconds = Number(error.metadata.get("retry-after"));
          throw new StageFailure("unavailable", error.detail.message, retryAfterSeconds > 0 ? { retryAfterMs: retryAfterSeconds * 1000 } : {});
        }
        throw error;
      }
    };
  };
}

function failWith(failure: StageFailure): StageWork {
  return async () => {
    throw failure;
  };
}

/** The outcomes as the app mounts them, plus the work of their stages for the engine. */
export interface OutcomesPart extends AppPart {
  stageWork: StageWorkResolver;
  /** A plan's newest build as one file (zip or EPUB), for `GET /api/execution/download`; `signal` stops its reads. */
  download(plan: { id: string; outcome: string }, signal: AbortSignal): Promise<Download | undefined>;
  /** Removes every artifact file of a deleted plan: its preview, work files, project record and published site or book. */
  deleteArtifacts(planId: string, known: { slug?: string; revisions: number }, sweep: { last: boolean }): Promise<void>;
  /** Where built sites and books live (`ZERO_ARTIFACTS`). */
  artifacts: ArtifactStore;
}

/** The artifact store `ZERO_ARTIFACTS` names. */
export function openArtifactStore(config: ArtifactsConfig, store: Pick<Store, "db">, logger?: Logger): ArtifactStore {
  switch (config.kind) {
    case "file":
      return createFileArtifactStore(config.dir);
    case "postgres":
      return createPostgresArtifactStore(store.db);
    case "s3":
      return createS3ArtifactStore(config.s3, { logger });
  }
}

/**
 * Outcomes: the work of each stage, writing artifacts to the store
 * `ZERO_ARTIFACTS` names, and the routes that serve previews and published
 * sites and books from there (`/preview/`, `/sites/`, `/books/`).
 */
export function outcomesPart(deps: {
  config: OutcomeDeps["config"] & { artifacts: ArtifactsConfig };
  store: Pick<Store, "db">;
  chat: ChatCompleter;
  logger: Logger;
  /** Which of a plan's artifacts its routes may serve (the plan repository's `shownArtifacts`). */
  shown: PlanArtifactsShown;
}): OutcomesPart {
  const artifacts = openArtifactStore(deps.config.artifacts, deps.store, deps.logger);
  return {
    artifacts,
    stageWork: createStageWork({ config: deps.config, chat: deps.chat, artifacts, logger: deps.logger.child({ component: "outcomes" }) }),
    routes: (router) => registerArtifactRoutes(router, artifacts, deps.shown),
    download: (plan, signal) => planDownload(withSignal(artifacts, signal), plan),
    deleteArtifacts: (planId, known, sweep) => deletePlanArtifacts(artifacts, planId, known, sweep),
  };
}
