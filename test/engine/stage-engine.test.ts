import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StageEngine, type StageEngineOptions } from "../../src/engine/stage-engine.js";
import type { StageStore } from "../../src/engine/stage-store.js";
import { Notifier } from "../../src/executions/notifier.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, type RestPlan } from "../support/executions.js";
import { HeldWork, instantWork, StageFailure } from "../support/stage-work.js";
import { InMemoryStageStore } from "./in-memory-store.js";

/** The states these tests tell apart, whichever store holds the stages. */
type Seen = "pending" | "waiting" | "leased" | "succeeded" | "failed" | "interrupted" | "cancelled" | "other";

/** One store under test, with what the tests need to set it up and look inside. */
interface Harness {
  store(): StageStore;
  /** A plan whose stages begin understand, outline, write, build; the first one waiting. */
  addPlan(): Promise<string>;
  states(planId: string): Promise<Seen[]>;
  /** Ends the plan's live leases now, as if its worker froze past them. */
  expireLeases(planId: string): Promise<void>;
}

const logger = createLogger("silent");
const LEASE_MS = 1000;

function memoryHarness(): Harness & { memory: InMemoryStageStore } {
  const memory = new InMemoryStageStore();
  let plans = 0;
  return {
    memory,
    store: () => memory,
    async addPlan() {
      const id = `pln_memory_${++plans}`;
      memory.addPlan(id, ["understand", "outline", "write", "build"]);
      return id;
    },
    async states(planId) {
      return memory.states(planId);
    },
    async expireLeases() {
      memory.expireLeases();
    },
  };
}

function postgresHarness(): Harness & { start(): Promise<void>; close(): Promise<void> } {
  let app: TestApp;
  let account: TestAccount;
  return {
    async start() {
      // The app runs no stages; the engines under test do. Its own reaper runs beside theirs, as another instance's would.
      app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_STAGE_LEASE_MS: String(LEASE_MS) } });
      account = await createAccountWithKey(app, ["build", "read"]);
    },
    close: () => app.close(),
    store: () => new PlanStageStore(app.store, new Notifier(app.store.db, logger)),
    async addPlan() {
      const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal: "A site for the engine's own tests" });
      return created.body.plan.id;
    },
    async states(planId) {
      const rows = await app.store.db
        .selectFrom("plan_stages")
        .select(["state", "lease_token", "error_type"])
        .where("plan_id", "=", planId)
        .orderBy("position")
        .execute();
      return rows.map((row): Seen => {
        if (row.state === "running") return row.lease_token === null ? "waiting" : "leased";
        if (row.state === "failed") return row.error_type === "interrupted" ? "interrupted" : "failed";
        if (row.state === "pending" || row.state === "succeeded") return row.state;
        return "other";
      });
    },
    async expireLeases(planId) {
      await sql`UPDATE plan_stages SET lease_expires_at = now() - interval '1 second' WHERE plan_id = ${planId} AND lease_token IS NOT NULL`.execute(
        app.store.db,
      );
    },
  };
}

const memory = memoryHarness();
const postgres = postgresHarness();

describe.each([
  { name: "in memory", harness: memory as Harness },
  { name: "in Postgres", harness: postgres as Harness },
])("stage engine, stages $name", ({ name, harness }) => {
  const engines: StageEngine[] = [];
  if (name === "in Postgres") {
    beforeAll(() => postgres.start());
    afterAll(() => postgres.close());
  }
  afterEach(async () => {
    await Promise.all(engines.map((engine) => engine.stop()));
    engines.length = 0;
  });

  async function startEngine(options: Pick<StageEngineOptions, "resolveWork"> & Partial<StageEngineOptions>): Promise<StageEngine> {
    const engine = new StageEngine({
      store: harness.store(),
      logger,
      instanceId: `ins_${engines.length}`,
      concurrency: 2,
      leaseMs: LEASE_MS,
      pollMs: 50,
      stopGraceMs: 2000,
      ...options,
    });
    engines.push(engine);
    await engine.start();
    return engine;
  }

  it("runs each stage once, in order, each seeing the outputs of the stages before it", async () => {
    const work = instantWork();
    await startEngine({ resolveWork: work });
    const planId = await harness.addPlan();
    await waitFor(async () => (await harness.states(planId))[3] === "succeeded");

    const calls = work.calls.filter((call) => call.planId === planId);
    expect(calls.map((call) => call.stageId)).toEqual(["understand", "outline", "write", "build"]);
    expect(calls.map((call) => call.attempt)).toEqual([1, 1, 1, 1]);
    expect(Object.keys(calls[3]!.previous).sort()).toEqual(["outline", "understand", "write"]);
    expect((await harness.states(planId)).slice(0, 4)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
  });

  it("stops a run whose lease expired and writes nothing it reports afterwards", async () => {
    const work = new HeldWork();
    const engine = await startEngine({ resolveWork: work.resolver });
    const planId = await harness.addPlan();
    const held = await work.next();
    await held.input.progress(0.5);

    await harness.expireLeases(planId);
    await waitFor(async () => (await harness.states(planId))[0] === "interrupted");
    await waitFor(async () => held.input.signal.aborted);
    expect(String(held.input.signal.reason)).toContain("lease");
    await expect(held.input.progress(0.9)).rejects.toThrow(/lease/);

    held.succeed();
    await waitFor(async () => engine.activeCount === 0);
    expect((await harness.states(planId)).slice(0, 2)).toEqual(["interrupted", "pending"]);
  });

  it("hands a running stage back on stop, and another engine runs it", async () => {
    const held = new HeldWork();
    const first = await startEngine({ resolveWork: held.resolver, concurrency: 1 });
    const planId = await harness.addPlan();
    await held.next();
    await first.stop();
    expect((await harness.states(planId))[0]).toBe("waiting");

    const work = instantWork();
    await startEngine({ resolveWork: work });
    await waitFor(async () => (await harness.states(planId))[3] === "succeeded");
    expect(work.calls.filter((call) => call.planId === planId).map((call) => call.stageId)).toEqual(["understand", "outline", "write", "build"]);
  });

  it("keeps renewing a stopping stage's lease through the grace period, then hands it back", async () => {
    // The work outlasts several leases before it notices the stop, as a stage blocked in a write does.
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => (unblock = resolve));
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    // A longer lease than the other tests': a heartbeat late on a busy machine must not decide what this test sees.
    const leaseMs = 3 * LEASE_MS;
    const leaving = await startEngine({
      concurrency: 1,
      leaseMs,
      stopGraceMs: 10 * leaseMs,
      resolveWork: () => async (input) => {
        markStarted();
        await blocked;
        throw input.signal.reason;
      },
    });
    // Another instance, which interrupts the stages of leases it finds expired.
    await startEngine({ resolveWork: instantWork(), concurrency: 0, leaseMs });
    const planId = await harness.addPlan();
    await started;

    const stopped = leaving.stop();
    await new Promise((resolve) => setTimeout(resolve, 2.5 * leaseMs));
    expect((await harness.states(planId))[0]).toBe("leased");
    unblock();
    await stopped;
    expect((await harness.states(planId))[0]).toBe("waiting");
  });

  it("never runs one stage in two engines at once", async () => {
    const work = instantWork();
    await Promise.all([startEngine({ resolveWork: work }), startEngine({ resolveWork: work }), startEngine({ resolveWork: work })]);
    const planIds = await Promise.all(Array.from({ length: 6 }, () => harness.addPlan()));
    for (const planId of planIds) await waitFor(async () => (await harness.states(planId))[3] === "succeeded");
    const runs = work.calls.filter((call) => planIds.includes(call.planId)).map((call) => `${call.planId}/${call.stageId}`);
    expect(runs).toHaveLength(planIds.length * 4);
    expect(new Set(runs).size).toBe(runs.length);
  });
});

describe("stage engine, store outages (in memory)", () => {
  it("keeps retrying a finished stage's result while the store is away, then writes it once", async () => {
    const harness = memoryHarness();
    const work = new HeldWork();
    const engine = new StageEngine({
      store: harness.store(),
      logger,
      instanceId: "ins_outage",
      resolveWork: work.resolver,
      concurrency: 1,
      leaseMs: 5000,
      pollMs: 50,
    });
    await engine.start();
    try {
      const planId = await harness.addPlan();
      const held = await work.next();
      harness.memory.failingCalls = 3;
      held.succeed();
      await waitFor(async () => harness.memory.states(planId)[0] === "succeeded");
      expect(harness.memory.failingCalls).toBe(0);
      expect(held.input.signal.aborted).toBe(false);
      const next = await work.next();
      expect(next.input.stageId).toBe("outline");
    } finally {
      await engine.stop();
    }
  });
});

describe("stage engine, the wait before a retry (in memory)", () => {
  // A backoff of at most 10 ms: any longer wait is the failure's own.
  const retry = { maxAttempts: 2, baseMs: 10, capMs: 10, isTransient: () => true };

  async function waitAfter(failure: StageFailure): Promise<number> {
    const harness = memoryHarness();
    const store = harness.store();
    const waits: number[] = [];
    const record = store.record.bind(store);
    store.record = async (claim, change, options) => {
      if (change.kind === "retrying") waits.push(change.waitMs);
      return record(claim, change, options);
    };
    const engine = new StageEngine({
      store,
      logger,
      instanceId: "ins_retry",
      resolveWork: () => async (input) => {
        if (input.stageId === "understand" && waits.length === 0) throw failure;
        return { output: null };
      },
      concurrency: 1,
      leaseMs: 5000,
      pollMs: 50,
      retry,
    });
    await engine.start();
    try {
      const planId = await harness.addPlan();
      await waitFor(async () => harness.memory.states(planId)[0] === "succeeded");
      expect(waits).toHaveLength(1);
      return waits[0]!;
    } finally {
      await engine.stop();
    }
  }

  it("is at least what the failure asks for (an upstream's Retry-After), up to a minute", async () => {
    expect(await waitAfter(new StageFailure("upstream_error", "busy"))).toBeLessThanOrEqual(10);
    expect(await waitAfter(new StageFailure("upstream_error", "busy", { retryAfterMs: 30_000 }))).toBe(30_000);
    expect(await waitAfter(new StageFailure("upstream_error", "busy", { retryAfterMs: 5 * 3_600_000 }))).toBe(60_000);
  });
});

describe("stage engine, revoked runs (in memory)", () => {
  async function setUp(leaseMs: number) {
    const harness = memoryHarness();
    const work = new HeldWork();
    const engine = new StageEngine({
      store: harness.store(),
      logger,
      instanceId: "ins_revoke",
      resolveWork: work.resolver,
      concurrency: 1,
      leaseMs,
      pollMs: 50,
    });
    await engine.start();
    return { harness, work, engine };
  }
  const abortReason = (signal: AbortSignal) =>
    new Promise<string>((resolve) => {
      if (signal.aborted) resolve(String((signal.reason as Error).message));
      else signal.addEventListener("abort", () => resolve(String((signal.reason as Error).message)), { once: true });
    });

  // A lease of a minute when announced: its heartbeat (every 20 s) cannot be what stops the run.
  it.each([
    { how: "as soon as the store announces its token revoked", announce: true, leaseMs: 60_000, reason: "revoked" },
    {
      how: "at the next heartbeat, which finds the lease gone, without the announcement",
      announce: false,
      leaseMs: 300,
      reason: "lease on this stage was lost",
    },
  ])("aborts a revoked run $how, and writes nothing for it", async ({ announce, leaseMs, reason }) => {
    const { harness, work, engine } = await setUp(leaseMs);
    try {
      const planId = await harness.addPlan();
      const held = await work.next();
      harness.memory.revoke(planId, { announce });
      expect(await abortReason(held.input.signal)).toContain(reason);
      await waitFor(async () => engine.activeCount === 0);
      expect(harness.memory.states(planId)).toEqual(["cancelled", "cancelled", "cancelled", "cancelled"]);
    } finally {
      await engine.stop();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
