import fs from "node:fs/promises";
import { describe, expect, it, vi } from "vitest";
import { StageEngine } from "../../src/engine/stage-engine.js";
import type { StageChange } from "../../src/engine/stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { InMemoryStageStore } from "../engine/in-memory-store.js";
import { outcomeDeps } from "./support/outcome-kit.js";

describe("stage work of an outcome the service does not know", () => {
  it("fails the stage with `stage_failed`, naming the outcome", async () => {
    const deps = await outcomeDeps();
    const store = new InMemoryStageStore();
    const changes: StageChange[] = [];
    const record = store.record.bind(store);
    store.record = (claim, change, options) => {
      changes.push(change);
      return record(claim, change, options);
    };
    // The engine is generic: the outcomes' resolver is what refuses the outcome.
    const engine = new StageEngine({
      store,
      logger: createLogger("silent"),
      instanceId: "ins_test",
      resolveWork: createStageWork(deps),
      concurrency: 1,
      leaseMs: 1000,
    });
    try {
      store.addPlan("pln_novel", ["understand"], { outcome: "novel" });
      await engine.start();
      await vi.waitFor(() => expect(store.states("pln_novel")).toEqual(["failed"]), { timeout: 10_000 });
    } finally {
      await engine.stop();
      await fs.rm(deps.dir, { recursive: true, force: true });
    }
    expect(changes).toEqual([{ kind: "failed", error: { type: "stage_failed", message: "unknown outcome novel" } }]);
  });
});
