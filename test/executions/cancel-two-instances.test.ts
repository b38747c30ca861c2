import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { getExecution, postExecution, type RestPlan } from "../support/executions.js";
import { HeldWork } from "../support/stage-work.js";

interface RestEvent {
  type: string;
  stage: string | null;
}

// Two instances on one real Postgres: A only answers the API (no workers),
// B runs every stage. A cancel sent to A must stop what runs on B.
describe.runIf(onRealPostgres)("cancel across two instances on one Postgres", () => {
  let a: TestApp;
  let b: TestApp;
  let account: TestAccount;
  const work = new HeldWork();
  const cred = () => ({ apiKey: account.apiKey });

  beforeAll(async () => {
    const databaseUrl = (await createTestDatabase())!;
    // A lease of a minute: a heartbeat (every 20 s) cannot be what stops the stage in these tests.
    a = await startTestApp({ databaseUrl, env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_STAGE_LEASE_MS: "60000", ZERO_GENERATION_LIMIT: "1000" } });
    b = await startTestApp({
      databaseUrl,
      env: { ZERO_WORKER_CONCURRENCY: "8", ZERO_STAGE_LEASE_MS: "60000", ZERO_GENERATION_LIMIT: "1000" },
      stageWork: work.resolver,
    });
    account = await createAccountWithKey(a, ["build", "read"]);
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  async function historyOf(id: string): Promise<RestEvent[]> {
    const res = await fetch(`${a.url}/api/execution/history?id=${id}`, { headers: { authorization: `Bearer ${account.apiKey}` } });
    return ((await res.json()) as { events: RestEvent[] }).events;
  }

  it("a cancel sent to A stops the stage running on B through the revocation notification", { timeout: 60_000 }, async () => {
    work.instant = new Set(["understand", "outline"]);
    const created = await postExecution<{ plan: RestPlan }>(a.url, cred(), { goal: "A website for a lighthouse museum" });
    const planId = created.body.plan.id;
    const held = await work.next();
    expect(held.input).toMatchObject({ planId, stageId: "write" });
    const answer = await postExecution<{ plan: RestPlan }>(a.url, cred(), { planId, cancel: true });
    expect(answer.status).toBe(202);
    const reason = await new Promise<unknown>((resolve) => {
      if (held.input.signal.aborted) resolve(held.input.signal.reason);
      else held.input.signal.addEventListener("abort", () => resolve(held.input.signal.reason), { once: true });
    });
    // "revoked", not "lease lost": B heard of it through LISTEN/NOTIFY, not at a heartbeat.
    expect(String((reason as Error).message)).toContain("revoked");
    const plan = (await getExecution<{ plan: RestPlan }>(b.url, cred(), planId)).body.plan;
    expect(plan.status).toBe("cancelled");
    expect(plan.stages.find((s) => s.id === "write")?.state).toBe("cancelled");
  });

  it("a cancel racing a stage that is just finishing ends in exactly one outcome, never a mix", { timeout: 120_000 }, async () => {
    work.instant = new Set(["outline", "write", "build"]);
    const ROUNDS = 40;
    const results: { id: string; outcome: "finished_first" | "cancelled_first" }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const created = await postExecution<{ plan: RestPlan }>(a.url, cred(), { goal: `A website for race round ${round}` });
      const planId = created.body.plan.id;
      const held = await work.next();
      expect(held.input).toMatchObject({ planId, stageId: "understand" });
      // The stage's result and the cancel, at once; a little jitter so that either can come first.
      const finish = sleep(Math.random() * 8).then(() => held.succeed());
      const [answer] = await Promise.all([postExecution<{ plan: RestPlan }>(a.url, cred(), { planId, cancel: true }), finish]);
      expect(answer.status).toBe(202);
      const plan = answer.body.plan;
      expect(plan.status).toBe("cancelled");
      const events = await historyOf(planId);
      const understood = plan.stages.find((s) => s.id === "understand")!.state;
      const succeededEvent = events.findIndex((e) => e.type === "stage_succeeded" && e.stage === "understand");
      const cancelledEvent = events.findIndex((e) => e.type === "cancelled");
      expect(events.filter((e) => e.type === "cancelled")).toHaveLength(1);
      if (understood === "succeeded") {
        // The stage finished first: its success is recorded before the cancel.
        expect(succeededEvent).toBeGreaterThan(-1);
        expect(succeededEvent).toBeLessThan(cancelledEvent);
      } else {
        // The cancel came first: the stage's result was dropped, nothing recorded for it.
        expect(understood).toBe("cancelled");
        expect(succeededEvent).toBe(-1);
      }
      expect(cancelledEvent).toBe(events.length - 1);
      const now = await getExecution<{ plan: RestPlan }>(a.url, cred(), planId);
      results.push({ id: planId, outcome: understood === "succeeded" ? "finished_first" : "cancelled_first" });
      expect(now.body.plan).toEqual(plan);
    }
    // Let B finish whatever it was still doing, then check nothing was written after any cancel.
    work.instant = new Set(["understand", "outline", "write", "build"]);
    const control = await postExecution<{ plan: RestPlan }>(a.url, cred(), { goal: "A website for a control plan" });
    for (;;) {
      const { body } = await getExecution<{ plan: RestPlan }>(a.url, cred(), control.body.plan.id);
      if (body.plan.status === "awaiting_approval") break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    for (const { id } of results) {
      const events = await historyOf(id);
      expect(events.at(-1)?.type).toBe("cancelled");
      const { body } = await getExecution<{ plan: RestPlan }>(a.url, cred(), id);
      expect(body.plan.status).toBe("cancelled");
      expect(body.plan.stages.filter((s) => s.state === "running")).toEqual([]);
    }
  });
});
