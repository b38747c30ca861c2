import { Writable } from "node:stream";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/db/database.js";
import { StageEngine, type StageEngineOptions } from "../../src/engine/stage-engine.js";
import type { StageStore } from "../../src/engine/stage-store.js";
import type { StageInput } from "../../src/engine/stage-work.js";
import { Notifier } from "../../src/executions/notifier.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { CuttableProxy } from "../support/cuttable-proxy.js";
import { postExecution, type RestPlan } from "../support/executions.js";
import { HeldWork, instantWork, ScriptedWork, StageFailure, typicalOutcome } from "../support/stage-work.js";
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

function memoryHarness(): Harness {
  const memory = new InMemoryStageStore();
  let plans = 0;
  return {
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

function postgresHarness() {
  let app: TestApp;
  let account: TestAccount;
  const harness = {
    get app(): TestApp {
      return app;
    },
    async start() {
      // The app runs no stages; the engines under test do. Its own reaper runs beside theirs, as another instance's would.
      app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_STAGE_LEASE_MS: String(LEASE_MS) } });
      account = await createAccountWithKey(app, ["build", "read"]);
    },
    close: () => app.close(),
    store: (): StageStore => new PlanStageStore(app.store, new Notifier(app.store.db, logger)),
    /** A plan with this goal (ScriptedWork reads directives in it); its first stage waits for a worker. */
    async addPlan(goal = "A site for the engine's own tests") {
      const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal });
      expect(created.status).toBe(202);
      return created.body.plan.id;
    },
    /** Cancels the plan through the API, as its owner does. */
    async cancel(planId: string) {
      const cancelled = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { planId, cancel: true });
      expect(cancelled.status).toBe(202);
    },
    async states(planId: string) {
      const rows = await app.store.db
        .selectFrom("plan_stages")
        .select(["state", "lease_token", "error_type"])
        .where("plan_id", "=", planId)
        .orderBy("position")
        .execute();
      return rows.map((row): Seen => {
        if (row.state === "running") return row.lease_token === null ? "waiting" : "leased";
        if (row.state === "failed") return row.error_type === "interrupted" ? "interrupted" : "failed";
        if (row.state === "pending" || row.state === "succeeded" || row.state === "cancelled") return row.state;
        return "other";
      });
    },
    /** The plan's history: each event's type and stage, oldest first. */
    async events(planId: string) {
      return app.store.db.selectFrom("plan_events").select(["type", "stage"]).where("plan_id", "=", planId).orderBy("id").execute();
    },
    async expireLeases(planId: string) {
      await sql`UPDATE plan_stages SET lease_expires_at = now() - interval '1 second' WHERE plan_id = ${planId} AND lease_token IS NOT NULL`.execute(
        app.store.db,
      );
    },
  };
  return harness satisfies Harness;
}

const memory = memoryHarness();
const postgres = postgresHarness();

// One service for the file: the Postgres store of every block below is its database (PGlite, or the run's Postgres).
beforeAll(() => postgres.start());
afterAll(() => postgres.close());

const engines: StageEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((engine) => engine.stop()));
  engines.length = 0;
});

/** An engine over `options.store`, stopped after the test. */
async function launchEngine(options: Pick<StageEngineOptions, "store" | "resolveWork"> & Partial<StageEngineOptions>): Promise<StageEngine> {
  const engine = new StageEngine({
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

describe.each([
  { name: "in memory", harness: memory },
  { name: "in Postgres", harness: postgres as Harness },
])("stage engine, stages $name", ({ harness }) => {
  const startEngine = (options: Pick<StageEngineOptions, "resolveWork"> & Partial<StageEngineOptions>) => launchEngine({ store: harness.store(), ...options });

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

/**
 * The real store with some of its methods replaced: a method given as
 * undefined is one this store lacks. `this` stays the real store, whose
 * private state its methods need.
 */
function alteredStore(real: StageStore, changes: Partial<Record<keyof StageStore, unknown>>): StageStore {
  return new Proxy(real, {
    get(target, name) {
      if (name in changes) return changes[name as keyof StageStore];
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A store of its own, on the service's database, that loses that database on `cut` until `restore`. */
interface StoreThatGoesAway {
  store: StageStore;
  cut(): void;
  restore(): void;
  /** Calls or connections the outage refused so far. */
  refused(): number;
  close(): Promise<void>;
}

async function storeThatGoesAway(): Promise<StoreThatGoesAway> {
  const { app } = postgres;
  if (app.databaseUrl) {
    // A real Postgres: a second instance's own pool, through a proxy whose cut resets its connections, as a network outage does.
    const target = new URL(app.databaseUrl);
    const proxy = await CuttableProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const own = await openStore({ databaseUrl: proxy.through(app.databaseUrl), dataDir: app.dataDir, logger });
    return {
      store: new PlanStageStore(own, new Notifier(own.db, logger)),
      cut: () => proxy.cut(),
      restore: () => proxy.restore(),
      refused: () => proxy.resets,
      close: async () => {
        await own.close();
        await proxy.close();
      },
    };
  }
  // PGlite runs in this process: no connection to cut, nothing takes it away and gives it back; so the real store, failing meanwhile as pg does.
  let down = false;
  let refused = 0;
  const real = postgres.store();
  const unlessDown =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      if (!down) return call.apply(real, args);
      refused++;
      return Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }));
    };
  return {
    store: alteredStore(real, {
      claim: unlessDown(real.claim),
      renew: unlessDown(real.renew),
      record: unlessDown(real.record),
      interruptExpired: unlessDown(real.interruptExpired),
    }),
    cut: () => (down = true),
    restore: () => (down = false),
    refused: () => refused,
    close: async () => {},
  };
}

/** Runs `test` on a store that can go away; then stops the engines, before that store's database closes under them. */
async function whileStoreCanGoAway(test: (away: StoreThatGoesAway) => Promise<void>): Promise<void> {
  const away = await storeThatGoesAway();
  try {
    await test(away);
  } finally {
    await Promise.all(engines.map((engine) => engine.stop()));
    away.restore();
    await away.close();
  }
}

describe("stage engine, stages in Postgres, while the store is away", () => {
  it("keeps retrying a finished stage's result until the store is back, then writes it once, on the lease it held", () =>
    whileStoreCanGoAway(async (away) => {
      const work = new ScriptedWork();
      const planId = await postgres.addPlan("A site for the engine's own tests hold@understand");
      await launchEngine({ store: away.store, resolveWork: work.resolver, concurrency: 1, leaseMs: 5000 });
      const held = await work.held(planId, "understand");

      away.cut();
      held.succeed();
      // The result cannot be written: the stage stays leased to its run, neither written nor interrupted.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(away.refused()).toBeGreaterThan(0);
      expect((await postgres.states(planId))[0]).toBe("leased");

      away.restore();
      await waitFor(async () => (await postgres.states(planId))[1] === "succeeded");
      expect(held.input.signal.aborted).toBe(false);
      expect(work.runs(planId, "understand")).toBe(1);
      const understand = (await postgres.events(planId)).filter((e) => e.stage === "understand").map((e) => e.type);
      expect(understand).toEqual(["stage_started", "stage_succeeded"]);
    }));
});

describe("stage engine, stages in Postgres, renewals that keep failing", () => {
  it("stops a run whose lease it could not renew for a whole lease: another instance may have taken the stage by then", () =>
    whileStoreCanGoAway(async (away) => {
      const work = new ScriptedWork();
      const planId = await postgres.addPlan("A site for the engine's own tests hold@understand");
      const engine = await launchEngine({ store: away.store, resolveWork: work.resolver, concurrency: 1, leaseMs: 600 });
      const ended: string[] = [];
      // This plan's runs only: the engine may run a stage an earlier test left waiting first.
      engine.events.on("stage:end", (claim, how) => {
        if (claim.planId === planId) ended.push(how);
      });
      const held = await work.held(planId, "understand");

      away.cut();
      // Within a lease and the renewal round that notices it; well before ten leases.
      await waitFor(async () => held.input.signal.aborted, 3_000);
      held.succeed();
      await waitFor(async () => ended.length > 0, 3_000);
      expect(ended).toEqual(["lost"]);
    }));
});

// Found operating the service: with Postgres stopped, each instance logged two warnings a second, each with a stack trace.
describe("stage engine, stages in Postgres, its log while the store is away", () => {
  it("logs each failing step once with its error, not once per poll, and its recovery", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    await whileStoreCanGoAway(async (away) => {
      await launchEngine({ store: away.store, resolveWork: instantWork(), logger: createLogger("info", sink), pollMs: 20 });
      away.cut();
      // Fifty polls' worth.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(away.refused()).toBeGreaterThan(0);
      away.restore();
      await new Promise((resolve) => setTimeout(resolve, 500));
    });
    // The steps' own lines (a stage an earlier test left leased may be reaped meanwhile, which is warned of too).
    const warnings = lines.filter(
      (line) => line.level === 40 && /^(claiming stages|checking for expired leases|renewing stage leases) /.test(String(line.msg)),
    );
    expect(warnings.map((line) => line.msg).sort()).toEqual(["checking for expired leases failed", "claiming stages failed"]);
    for (const warning of warnings) expect(warning.err).toMatchObject({ message: expect.any(String) });
    const recovered = lines.filter((line) => typeof line.msg === "string" && line.msg.endsWith("works again")).map((line) => line.msg);
    expect(recovered.sort()).toEqual(["checking for expired leases works again", "claiming stages works again"]);
  });
});

describe("stage engine, stages in Postgres, the wait before a retry", () => {
  // A backoff of at most 10 ms: any longer wait is the failure's own.
  const retry = { maxAttempts: 2, baseMs: 10, capMs: 10, isTransient: () => true };

  /**
   * The wait before the stage's retry: as its history records it, and as the stage row holds it, from the write that
   * recorded the retry (updated_at) to the time it may be claimed again (ready_at); the row's only while it waits.
   */
  async function heldWait(planId: string): Promise<{ asked: number; readyIn: number }> {
    const { rows } = await sql<{ asked: number; ready_in: number }>`
      SELECT (e.detail->>'waitMs')::int AS asked, round(extract(epoch FROM s.ready_at - s.updated_at) * 1000)::int AS ready_in
      FROM plan_stages s JOIN plan_events e ON e.plan_id = s.plan_id AND e.stage = s.stage_id AND e.type = 'stage_retrying'
      WHERE s.plan_id = ${planId} AND s.position = 0`.execute(postgres.app.store.db);
    expect(rows).toHaveLength(1);
    return { asked: rows[0]!.asked, readyIn: rows[0]!.ready_in };
  }

  /** Runs a plan whose first try of `understand` fails with `failure`; answers once its retry is written. */
  async function failOnce(failure: StageFailure) {
    const planId = await postgres.addPlan();
    const runs: StageInput[] = [];
    await launchEngine({
      store: postgres.store(),
      resolveWork: () => async (input) => {
        if (input.planId !== planId) return typicalOutcome(input);
        runs.push(input);
        if (input.stageId === "understand" && input.attempt === 1) throw failure;
        return typicalOutcome(input);
      },
      concurrency: 1,
      leaseMs: 5000,
      retry,
    });
    const understand = () => runs.filter((run) => run.stageId === "understand").map((run) => run.attempt);
    await waitFor(async () => (await postgres.events(planId)).some((e) => e.type === "stage_retrying"));
    return { planId, understand };
  }

  it("is the backoff's own when the failure asks for none, and the stage runs again at once", async () => {
    const { planId, understand } = await failOnce(new StageFailure("upstream_error", "busy"));
    expect((await heldWait(planId)).asked).toBeLessThanOrEqual(10);
    await waitFor(async () => (await postgres.states(planId))[0] === "succeeded");
    expect(understand()).toEqual([1, 2]);
  });

  it.each([
    { asks: "30 s", retryAfterMs: 30_000, waits: 30_000 },
    { asks: "5 h", retryAfterMs: 5 * 3_600_000, waits: 60_000 },
  ])("is what the failure asks for (an upstream's Retry-After of $asks), up to a minute: the stage is not claimed before", async ({ retryAfterMs, waits }) => {
    const { planId, understand } = await failOnce(new StageFailure("upstream_error", "busy", { retryAfterMs }));
    const { asked, readyIn } = await heldWait(planId);
    expect(asked).toBe(waits);
    expect(readyIn).toBe(waits);
    // Ten polls later it still waits, unclaimed.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await postgres.states(planId))[0]).toBe("waiting");
    expect(understand()).toEqual([1]);

    // Its ready_at is all that held it back: brought to now, the retry runs.
    await sql`UPDATE plan_stages SET ready_at = now() WHERE plan_id = ${planId} AND position = 0`.execute(postgres.app.store.db);
    await waitFor(async () => (await postgres.states(planId))[0] === "succeeded");
    expect(understand()).toEqual([1, 2]);
  });
});

describe("stage engine, stages in Postgres, revoked runs", () => {
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
      leaseMs: LEASE_MS,
      reason: "lease on this stage was lost",
    },
  ])("aborts a run its plan's cancel revoked $how, and writes nothing for it", async ({ announce, leaseMs, reason }) => {
    const work = new ScriptedWork();
    const planId = await postgres.addPlan("A site for the engine's own tests hold@understand");
    const real = postgres.store();
    // Without the announcement: an engine whose store never hears it, as when the NOTIFY is missed (its listener reconnecting).
    const store = announce ? real : alteredStore(real, { listenForRevoked: undefined });
    const engine = await launchEngine({ store, resolveWork: work.resolver, concurrency: 1, leaseMs });
    const held = await work.held(planId, "understand");

    await postgres.cancel(planId);
    expect(await abortReason(held.input.signal)).toContain(reason);
    await waitFor(async () => engine.activeCount === 0);
    await engine.stop();
    expect(new Set(await postgres.states(planId))).toEqual(new Set(["cancelled"]));
    expect((await postgres.events(planId)).map((e) => e.type)).toEqual(["created", "stage_started", "cancelled"]);
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
