import path from "node:path";
import type { ChatCompleter } from "../chat/chat-types.js";
import type { Logger } from "../observability/logger.js";
import type { AppPart } from "../server/app-part.js";
import { StageFailure, type StageWork, type StageWorkResolver } from "../engine/stage-work.js";
import { registerArtifactRoutes } from "./artifact-routes.js";
import { createFileArtifactStore } from "./artifact-store.js";
import { deletePlanArtifacts } from "./plan-artifacts.js";
import { planDownload, type Download } from "./downloads.js";
import type { OutcomeId } from "../api/outcomes.js";
import { ebookStages } from "./ebook/ebook-stages.js";
import type { OutcomeDeps } from "./stage-support.js";
import { websiteStages } from "./website/website-stages.js";

export type { ArtifactStore } from "./artifact-store.js";
export type { OutcomeDeps } from "./stage-support.js";

/**
 * The work of every stage of every outcome, except the `review` gate the
 * engine keeps for itself. Each stage reads what earlier stages stored in
 * `previous`, writes its artifacts under its own plan's keys, and can be
 * re-run after a crash: it overwrites its own outputs, never adds to them.
 */
export function createStageWork(deps: OutcomeDeps): StageWorkResolver {
  const stages: Record<OutcomeId, Record<string, StageWork>> = {
    website: websiteStages(deps),
    ebook: ebookStages(deps),
  };
  return (outcome, stageId) =>
    stages[outcome]?.[stageId] ??
    (async () => {
      throw new StageFailure("internal", `The ${outcome} outcome has no work for stage "${stageId}".`);
    });
}

/** The outcomes as the app mounts them, plus the work of their stages for the engine. */
export interface OutcomesPart extends AppPart {
  stageWork: StageWorkResolver;
  /** A plan's newest build as one file (zip or EPUB), for `GET /api/execution/download`. */
  download(plan: { id: string; outcome: string }): Promise<Download | undefined>;
  /** Removes every artifact file of a deleted plan: its preview, work files, project record and published site or book. */
  deleteArtifacts(planId: string, slug?: string): Promise<void>;
}

/**
 * Outcomes: the work of each stage, writing artifacts under
 * `ZERO_DATA_DIR/artifacts`, and the routes that serve previews and
 * published sites and books from there (`/preview/`, `/sites/`, `/books/`).
 */
export function outcomesPart(deps: { config: OutcomeDeps["config"]; chat: ChatCompleter; logger: Logger }): OutcomesPart {
  const artifacts = createFileArtifactStore(path.join(deps.config.dataDir, "artifacts"));
  return {
    stageWork: createStageWork({ config: deps.config, chat: deps.chat, artifacts, logger: deps.logger.child({ component: "outcomes" }) }),
    routes: (router) => registerArtifactRoutes(router, artifacts),
    download: (plan) => planDownload(artifacts, plan),
    deleteArtifacts: (planId, slug) => deletePlanArtifacts(artifacts, planId, slug),
  };
}
