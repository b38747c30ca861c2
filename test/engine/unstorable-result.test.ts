import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Notifier } from "../../src/executions/notifier.js";
import { StageEngine } from "../../src/engine/stage-engine.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { type HeldStage, HeldWork, ScriptedWork } from "../support/stage-work.js";

// Long enough that no heartbeat misses it on a busy machine, short enough that a result left unwritten shows as `interrupted` quickly.
const LEASE_MS = 5000;

describe("a stage result the database cannot store", () => {
  let app: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    // The app runs no stages itself but reaps expired leases; the test runs its own engine beside it.
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_STAGE_LEASE_MS: String(LEASE_MS) } });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  it("fails its own stage with a clear error, and the results written beside it are kept", async () => {
    const work = new HeldWork();
    const logger = createLogger("silent");
    const engine = new StageEngine({
      store: new PlanStageStore(app.store, new Notifier(app.store.db, logger)),
      logger,
      instanceId: "ins_unstorable",
      resolveWork: work.resolver,
      concurrency: 4,
      leaseMs: LEASE_MS,
    });
    await engine.start();
    try {
      const cred = { apiKey: account.apiKey };
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: `A site for bakery number ${i}` });
        ids.push(created.body.plan.id);
      }
      const held = new Map<string, HeldStage>();
      for (let i = 0; i < 4; i++) {
        const stage = await work.next();
        held.set(stage.input.planId, stage);
      }
      const [good, bad, ...others] = ids as [string, string, string, string];
      // Finished in one turn, as runs finishing together are: the first result is written alone, the others share a statement.
      held.get(good)!.succeed();
      held.get(bad)!.succeed({ output: { text: "a NUL \u0000 in the result" } });
      for (const id of others) held.get(id)!.succeed();

      const failed = await waitForPlan(app.url, cred, bad, (p) => p.status !== "running");
      expect(failed).toMatchObject({ status: "failed", resumable: true });
      expect(failed.stages[0]).toMatchObject({
        state: "failed",
        error: { type: "stage_failed", message: expect.stringContaining("the stage's result could not be stored") },
      });
      for (const id of [good, ...others]) {
        const plan = await waitForPlan(app.url, cred, id, (p) => p.stages[1]!.state === "running");
        expect(plan.status).toBe("running");
        expect(plan.stages[0]).toMatchObject({ state: "succeeded", error: null });
      }
    } finally {
      await engine.stop();
    }
  });
});

describe("a stage result the database cannot store, in the metrics", () => {
  it("counts the run as failed, not succeeded", async () => {
    const work = new ScriptedWork();
    const app = await startTestApp({ stageWork: work.resolver });
    try {
      const account = await createAccountWithKey(app, ["build", "read"]);
      const cred = { apiKey: account.apiKey };
      const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: "A site for my bakery hold@understand" });
      const planId = created.body.plan.id;
      (await work.held(planId, "understand")).succeed({ output: { text: "a NUL \u0000 in the result" } });
      await waitForPlan(app.url, cred, planId, (p) => p.status === "failed");

      const counted = async () => {
        const text = await (await fetch(`${app.url}/metrics`)).text();
        const count = (metric: string, result: string) =>
          Number(new RegExp(`${metric}\\{outcome="website",stage="understand",result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
        return {
          runs: { succeeded: count("zero_stage_runs_total", "succeeded"), failed: count("zero_stage_runs_total", "failed") },
          durations: { succeeded: count("zero_stage_duration_seconds_count", "succeeded"), failed: count("zero_stage_duration_seconds_count", "failed") },
        };
      };
      let seen = await counted();
      for (let i = 0; i < 100 && seen.runs.succeeded + seen.runs.failed === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        seen = await counted();
      }
      expect(seen).toEqual({ runs: { succeeded: 0, failed: 1 }, durations: { succeeded: 0, failed: 1 } });
    } finally {
      await app.close();
    }
  });
});
