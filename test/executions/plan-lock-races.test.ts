import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StageClaim } from "../../src/engine/stage-store.js";
import { Notifier } from "../../src/executions/notifier.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { onRealPostgres } from "../support/database.js";
import { authHeaders, getExecution, postExecution, waitForPlan, type RestAnswer, type RestPlan } from "../support/executions.js";
import { HeldWork } from "../support/stage-work.js";

interface RestEvent {
  type: string;
  stage: string | null;
  at: string;
}

const DRAFT_STAGES = ["understand", "outline", "write", "build"];

/**
 * Two requests on one plan, the second waiting for the plan's lock while the
 * first is written: the first is sent while a transaction of the test holds
 * that lock, the second once the first waits for it, and the test lets go
 * once both wait. Postgres hands the lock on in that order, so the second
 * always reads the plan just after the first committed, and the test needs
 * no luck to meet the interleaving. (Only on a real Postgres: PGlite has one
 * connection, so its transactions never wait on each other.)
 */
describe.runIf(onRealPostgres)("a request that waited for another's write to a plan", () => {
  let app: TestApp;
  let account: TestAccount;
  let holder: pg.Client;
  let observer: pg.Client;
  const work = new HeldWork();
  const credential = () => ({ apiKey: account.apiKey });

  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_GENERATION_LIMIT: "1000" }, stageWork: work.resolver });
    account = await createAccountWithKey(app, ["build", "read"]);
    holder = new pg.Client({ connectionString: app.databaseUrl });
    observer = new pg.Client({ connectionString: app.databaseUrl });
    await Promise.all([holder.connect(), observer.connect()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([holder?.end(), observer?.end()]);
    await app?.close();
  });

  /** A new plan waiting at the gate with its first draft; the stages a revision or approval starts are then held. */
  async function planAtGate(goal: string): Promise<string> {
    work.instant = new Set(DRAFT_STAGES);
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential(), { goal });
    await waitForPlan(app.url, credential(), created.body.plan.id, (p) => p.status === "awaiting_approval");
    work.instant = new Set();
    return created.body.plan.id;
  }

  async function waitingForLocks(count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await observer.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      if (rows[0]!.n >= count) return;
      if (Date.now() > deadline) throw new Error(`${rows[0]!.n} of ${count} requests wait for the plan's lock`);
      await sleep(5);
    }
  }

  /** Sends `first`, then `second` once `first` waits for the plan's lock, and lets both go once `second` waits too. */
  async function inOrder(planId: string, first: unknown, second: unknown): Promise<[RestAnswer<{ plan: RestPlan }>, RestAnswer<{ plan: RestPlan }>]> {
    await holder.query("BEGIN");
    const answers: Promise<RestAnswer<{ plan: RestPlan }>>[] = [];
    try {
      await holder.query("SELECT 1 FROM plans WHERE id = $1 FOR UPDATE", [planId]);
      answers.push(postExecution<{ plan: RestPlan }>(app.url, credential(), first));
      await waitingForLocks(1);
      answers.push(postExecution<{ plan: RestPlan }>(app.url, credential(), second));
      await waitingForLocks(2);
    } finally {
      await holder.query("COMMIT");
    }
    const [firstAnswer, secondAnswer] = await Promise.all(answers);
    return [firstAnswer!, secondAnswer!];
  }

  async function stored(planId: string): Promise<RestPlan> {
    return (await getExecution<{ plan: RestPlan }>(app.url, credential(), planId)).body.plan;
  }

  async function historyOf(planId: string): Promise<RestEvent[]> {
    const res = await fetch(`${app.url}/api/execution/history?id=${planId}`, { headers: authHeaders(app.url, credential()) });
    return ((await res.json()) as { events: RestEvent[] }).events;
  }

  const states = (plan: RestPlan) => plan.stages.map((s) => `${s.id}:${s.state}/${s.attempts}`);

  it("a cancel after a revision stops the revision's draft, and the plan stays cancelled", async () => {
    const planId = await planAtGate("A website for a calm bakery");
    const [revise, cancel] = await inOrder(planId, { planId, feedback: "Make it calmer" }, { planId, cancel: true });
    expect(revise.status).toBe(202);
    expect(cancel.status).toBe(202);
    // The revision's outline had not succeeded: the cancel stops it with the rest.
    expect(cancel.body.plan).toMatchObject({ status: "cancelled", resumable: false, progress: 16 });
    expect(states(cancel.body.plan)).toEqual([
      "understand:succeeded/1",
      "outline:cancelled/2",
      "write:cancelled/1",
      "build:cancelled/1",
      "review:cancelled/1",
      "publish:cancelled/0",
    ]);
    // Workers claim the oldest ready stage first: once a plan created after the cancel reached the gate, they
    // have been past any stage the cancel left. Nothing of theirs was kept: the plan is as the cancel answered it.
    await planAtGate("A website for a control bakery");
    expect(await stored(planId)).toEqual(cancel.body.plan);
    expect((await historyOf(planId)).at(-1)?.type).toBe("cancelled");
  });

  it("a cancel after an approval keeps the approval, and stops only the publish it started", async () => {
    const planId = await planAtGate("A website for an approved bakery");
    const [approve, cancel] = await inOrder(planId, { planId, approve: ["review"] }, { planId, cancel: true });
    expect(approve.status).toBe(202);
    expect(states(approve.body.plan).slice(-2)).toEqual(["review:succeeded/1", "publish:running/1"]);
    expect(cancel.status).toBe(202);
    expect(cancel.body.plan).toMatchObject({ status: "cancelled", progress: 83 });
    expect(states(cancel.body.plan).slice(-2)).toEqual(["review:succeeded/1", "publish:cancelled/1"]);
    expect(await stored(planId)).toEqual(cancel.body.plan);
    const events = (await historyOf(planId)).map((e) => `${e.type}:${e.stage}`);
    expect(events.slice(-3)).toEqual(["approved:review", "stage_started:publish", "cancelled:null"]);
  });

  it("an approval after a cancel answers the cancelled plan as the cancel left it", async () => {
    const planId = await planAtGate("A website for a cancelled bakery");
    const [cancel, approve] = await inOrder(planId, { planId, cancel: true }, { planId, approve: ["review"] });
    expect(cancel.status).toBe(202);
    expect(approve.status).toBe(202);
    expect(approve.body.plan.status).toBe("cancelled");
    expect(states(approve.body.plan).slice(-2)).toEqual(["review:cancelled/1", "publish:cancelled/0"]);
    expect(approve.body.plan).toEqual(cancel.body.plan);
  });

  it("an approval after a revision answers the revision's draft, running", async () => {
    const planId = await planAtGate("A website for a revised bakery");
    const [revise, approve] = await inOrder(planId, { planId, feedback: "Make it warmer" }, { planId, approve: ["review"] });
    expect(revise.status).toBe(202);
    expect(approve.status).toBe(202);
    expect(approve.body.plan).toMatchObject({ status: "running", progress: 16 });
    expect(approve.body.plan.revisions).toHaveLength(1);
    expect(states(approve.body.plan)).toEqual([
      "understand:succeeded/1",
      "outline:running/2",
      "write:pending/1",
      "build:pending/1",
      "review:pending/1",
      "publish:pending/0",
    ]);
    expect(approve.body.plan).toEqual(revise.body.plan);
  });

  it("the second of two approvals answers the plan past the gate", async () => {
    const planId = await planAtGate("A website for a twice approved bakery");
    const [first, second] = await inOrder(planId, { planId, approve: ["review"] }, { planId, approve: ["review"] });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(states(second.body.plan).slice(-2)).toEqual(["review:succeeded/1", "publish:running/1"]);
    expect(second.body.plan).toEqual(first.body.plan);
    expect((await historyOf(planId)).filter((e) => e.type === "approved")).toHaveLength(1);
  });

  // Found by the soak: a cancel whose transaction began before a stage's write to the plan, but took the plan's
  // lock after it, was listed after that write with an earlier time, as if it had come first.
  it("the history's times follow its order, whichever of two writes began first", async () => {
    const planId = await planAtGate("A website for a bakery whose history reads in order");
    const event = `INSERT INTO plan_events (plan_id, type, stage, attempt) VALUES ($1, 'stage_started', 'understand', 1)`;
    await holder.query("BEGIN");
    try {
      // The holder's transaction begins first; another takes the plan's lock, writes and commits while it waits.
      await holder.query("SELECT 1");
      await sleep(20);
      await observer.query("BEGIN");
      await observer.query("SELECT 1 FROM plans WHERE id = $1 FOR UPDATE", [planId]);
      await observer.query(event, [planId]);
      await observer.query("COMMIT");
      await holder.query("SELECT 1 FROM plans WHERE id = $1 FOR UPDATE", [planId]);
      await holder.query(event, [planId]);
      await holder.query("COMMIT");
    } catch (error) {
      await holder.query("ROLLBACK");
      throw error;
    }
    const times = (await historyOf(planId)).map((e) => Date.parse(e.at));
    for (let i = 1; i < times.length; i++) expect(times[i], `event ${i}`).toBeGreaterThanOrEqual(times[i - 1]!);
  });
});

/**
 * A stage left running on a plan that was cancelled: what a cancel that read
 * stale stages once left behind (above), set up here by hand. Whatever its
 * run reports, and its lease running out, the plan stays as the cancel left it.
 */
describe("a stage left running on a cancelled plan", () => {
  const LEASE_MS = 60_000;
  let app: TestApp;
  let account: TestAccount;
  let store: PlanStageStore;
  const credential = () => ({ apiKey: account.apiKey });

  beforeAll(async () => {
    // No engine of its own: the tests claim and write as a worker would.
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0" } });
    account = await createAccountWithKey(app, ["build", "read"]);
    store = new PlanStageStore(app.store, new Notifier(app.store.db, createLogger("silent")));
  });
  afterAll(() => app?.close());

  /** A cancelled plan whose first stage is running again, as the cancel answered it. */
  async function cancelledWithStrayStage(goal: string): Promise<{ planId: string; cancelled: RestPlan }> {
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential(), { goal });
    const planId = created.body.plan.id;
    const cancel = await postExecution<{ plan: RestPlan }>(app.url, credential(), { planId, cancel: true });
    expect(cancel.body.plan.status).toBe("cancelled");
    await sql`UPDATE plan_stages SET state = 'running', ready_at = now() WHERE plan_id = ${planId} AND position = 0`.execute(app.store.db);
    return { planId, cancelled: cancel.body.plan };
  }

  async function eventTypes(planId: string): Promise<string[]> {
    const rows = await app.store.db.selectFrom("plan_events").select("type").where("plan_id", "=", planId).orderBy("id").execute();
    return rows.map((r) => r.type);
  }

  async function leaseOf(planId: string): Promise<unknown> {
    const row = await app.store.db
      .selectFrom("plan_stages")
      .select("lease_token")
      .where("plan_id", "=", planId)
      .where("position", "=", 0)
      .executeTakeFirstOrThrow();
    return row.lease_token;
  }

  it("its run's result is refused as a lost lease, and the plan stays cancelled", async () => {
    const { planId, cancelled } = await cancelledWithStrayStage("A website for a stray run");
    let claim: StageClaim | undefined;
    while (!claim) {
      const batch = await store.claim("stray-worker", 50, LEASE_MS);
      if (batch.length === 0) throw new Error("the stray stage was not claimable");
      claim = batch.find((c) => c.planId === planId);
    }
    const written = await store.record(
      claim,
      { kind: "succeeded", outcome: { output: { stray: true }, project: { id: "prj_stray", name: "Stray", slug: "stray" } } },
      { chainFor: { owner: "stray-worker", leaseMs: LEASE_MS } },
    );
    expect(written).toBe("lost");
    const plan = (await getExecution<{ plan: RestPlan }>(app.url, credential(), planId)).body.plan;
    expect({ ...plan, updatedAt: cancelled.updatedAt }).toEqual(cancelled);
    expect(await eventTypes(planId)).toEqual(["created", "stage_started", "cancelled"]);
    expect(await leaseOf(planId)).toBeNull();
  });

  it("its lease running out does not interrupt the plan", async () => {
    const { planId, cancelled } = await cancelledWithStrayStage("A website for a stray lease");
    await sql`UPDATE plan_stages SET lease_token = nextval('plan_stage_lease_tokens'), lease_owner = 'gone', lease_expires_at = now() - interval '1 second'
      WHERE plan_id = ${planId} AND position = 0`.execute(app.store.db);
    const interrupted = await store.interruptExpired(100);
    expect(interrupted.map((s) => s.planId)).not.toContain(planId);
    const plan = (await getExecution<{ plan: RestPlan }>(app.url, credential(), planId)).body.plan;
    expect({ ...plan, updatedAt: cancelled.updatedAt }).toEqual(cancelled);
    expect(await eventTypes(planId)).toEqual(["created", "stage_started", "cancelled"]);
    expect(await leaseOf(planId)).toBeNull();
  });
});
