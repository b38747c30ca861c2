import path from "node:path";
import type { AppPart } from "../app.js";
import type { Config } from "../config.js";
import { StageFailure, type StageWork, type StageWorkResolver } from "../engine/stage-work.js";
import { registerArtifactRoutes } from "./artifact-routes.js";
import { createFileArtifactStore, type ArtifactStore } from "./artifact-store.js";
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

/** The artifact store the service uses: files under `ZERO_DATA_DIR/artifacts`. */
export function createArtifactStore(config: Pick<Config, "dataDir">): ArtifactStore {
  return createFileArtifactStore(path.join(config.dataDir, "artifacts"));
}

/** Serves previews and published sites and books from the store (`/preview/`, `/sites/`, `/books/`). */
export function outcomesPart(artifacts: ArtifactStore): AppPart {
  return { registerRoutes: (router) => registerArtifactRoutes(router, artifacts) };
}
