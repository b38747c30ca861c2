import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Notifier } from "../../src/executions/notifier.js";
import { StageEngine } from "../../src/engine/stage-engine.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { HeldWork } from "../support/stage-work.js";

describe("lease fencing", () => {
  let app: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    // The app runs no stages itself but reaps expired leases; the test runs its own engine beside it.
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_STAGE_LEASE_MS: "300" } });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  it("a worker that lost its lease is told to stop, and its result is not written", async () => {
    const work = new HeldWork();
    const logger = createLogger("silent");
    const engine = new StageEngine({
      store: new PlanStageStore(app.store, new Notifier(app.store.db, logger)),
      logger,
      instanceId: "ins_fenced",
      resolveWork: work.resolver,
      concurrency: 1,
      leaseMs: 300,
    });
    await engine.start();
    try {
      const cred = { apiKey: account.apiKey };
      const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: "A site whose worker stalls" });
      const held = await work.next();
      expect(held.input.planId).toBe(created.body.plan.id);

      // The worker stalls past its lease (as if its process froze): the lease runs out and the reaper takes the stage.
      await sql`UPDATE plan_stages SET lease_expires_at = now() - interval '1 second' WHERE plan_id = ${held.input.planId}`.execute(app.store.db);
      const interrupted = await waitForPlan(app.url, cred, held.input.planId, (p) => p.status === "interrupted");
      expect(interrupted.stages[0]).toMatchObject({ state: "failed", error: { type: "interrupted" } });
      await waitFor(() => held.input.signal.aborted);
      expect(String(held.input.signal.reason)).toContain("lease");

      // The stale worker finishes anyway: nothing of it reaches the plan.
      held.succeed({ output: { stale: true }, project: { id: "prj_stale", name: "Stale", slug: "stale" } });
      await waitFor(() => engine.activeCount === 0);
      const after = await waitForPlan(app.url, cred, held.input.planId, () => true);
      expect(after).toMatchObject({ status: "interrupted", project: null, resumable: true });
      expect(after.stages[1]).toMatchObject({ state: "pending", attempts: 0 });
      const row = await app.store.db
        .selectFrom("plan_stages")
        .select(["output", "lease_token"])
        .where("plan_id", "=", held.input.planId)
        .where("position", "=", 0)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ output: null, lease_token: null });

      // A resume runs it again with attempts + 1, under a new token.
      await postExecution(app.url, cred, { planId: held.input.planId });
      const again = await work.next();
      expect(again.input).toMatchObject({ planId: held.input.planId, stageId: "understand", attempt: 2 });
      again.succeed();
      await work.next().then((next) => next.fail(new Error("stop here")));
    } finally {
      await engine.stop();
    }
  });
});

async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
