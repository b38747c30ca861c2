import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, type RestPlan, waitForPlan } from "../support/executions.js";
import { instantWork } from "../support/stage-work.js";

/**
 * During a rolling upgrade a newer version may write a plan of an outcome
 * this one does not have. Found by a test review: this version read such a
 * plan as a website and ran its stages so. It now leaves the plan's stages
 * to an instance that knows its outcome.
 */
describe("a plan of an outcome this version does not know", () => {
  const work = instantWork();
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ stageWork: work });
  });
  afterAll(() => app.close());

  it("is left waiting for an instance that knows it, while other plans run", async () => {
    const { apiKey, accountId } = await createAccountWithKey(app, ["read", "build"]);
    // As a newer version would write it: a plan and its first stage, ready to run.
    await sql`insert into plans (id, account_id, goal, outcome, status, progress, resumable)
      values ('pln_newerOutcome000000000', ${accountId}, 'A slide deck about the sea', 'slides', 'running', 0, false)`.execute(app.store.db);
    await sql`insert into plan_stages (plan_id, position, stage_id, title, state, attempts, ready_at)
      values ('pln_newerOutcome000000000', 0, 'understand', 'Understand the goal', 'running', 0, now())`.execute(app.store.db);
    const known = await postExecution<{ plan: RestPlan }>(app.url, { apiKey }, { goal: "A website for a bakery in Lyon" });
    expect(known.status).toBe(202);
    await waitForPlan(app.url, { apiKey }, known.body.plan.id, (plan) => plan.status === "awaiting_approval");
    const stage = await app.store.db
      .selectFrom("plan_stages")
      .select(["state", "attempts", "lease_token"])
      .where("plan_id", "=", "pln_newerOutcome000000000")
      .executeTakeFirstOrThrow();
    expect(stage).toEqual({ state: "running", attempts: 0, lease_token: null });
    expect(work.calls.map((call) => call.planId)).not.toContain("pln_newerOutcome000000000");
  });
});
