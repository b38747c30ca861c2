import fs from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { StageFailure } from "../../src/engine/stage-work.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { outcomeDeps } from "./support/outcome-kit.js";

// The outcomes' resolver itself, with no engine or store: the Postgres store reads an outcome it does not know as the
// default one (toPlanState in plan-repository.ts), so no claim through it carries one, and only a fake store could.
describe("stage work of an outcome the service does not know", () => {
  it("fails the stage with `stage_failed`, naming the outcome", async () => {
    const deps = await outcomeDeps();
    try {
      const work = createStageWork(deps)("novel", "understand");
      const failure = await work({
        planId: "pln_novel",
        accountId: "acc_novel",
        outcome: "novel",
        goal: "A novel about the sea",
        stageId: "understand",
        attempt: 1,
        previous: {},
        signal: new AbortController().signal,
        progress: async () => {},
      }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StageFailure);
      expect(failure).toMatchObject({ type: "stage_failed", message: "unknown outcome novel" });
    } finally {
      await fs.rm(deps.dir, { recursive: true, force: true });
    }
  });
});
