import { randomBytes } from "node:crypto";
import os from "node:os";
import { Logger as GraphileLogger, makeWorkerUtils, run as runGraphileWorker } from "graphile-worker";
import { sql } from "kysely";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { Pool } from "undici";
import { startApp } from "../../src/app.js";
import { createAccount, createApiKey } from "../../src/auth/accounts.js";
import { insertPlansWithinLimit, STAGE_READY_CHANNEL } from "../../src/executions/plan-repository.js";
import { initialStages } from "../../src/executions/plan-transitions.js";
import { createLogger } from "../../src/observability/logger.js";
import { benchConfig } from "./support/bench-config.js";
import { freshBenchDatabase } from "./support/postgres.js";

/**
 * The stage engine beside two Postgres job queues, graphile-worker and
 * pg-boss, on the same throwaway Postgres, each in this process with its own
 * database, and each job doing what a stage's own bookkeeping does: one row
 * update (`UPDATE work_rows SET n = n + 1`).
 *
 * - throughput: a backlog of JOBS jobs (for us, plans of five stage runs,
 *   pre-approved), WORKERS workers; jobs/s from the first job started to
 *   the last one finished, so start-up is not counted;
 * - add-to-start latency at idle: one job at a time, from the call that adds
 *   it (for us `POST /api/execution`, whose 202 includes the plan's insert)
 *   to its handler starting; p50 and p99 of LATENCY_SAMPLES. Ours goes
 *   over HTTP, so it also counts a request's parsing, key check and answer,
 *   which the peers' in-process calls do not have; so ours is measured a
 *   second way too, added as the peers add: a library call in this process
 *   that inserts the plan and then sends the NOTIFY, which the engine hears
 *   on its LISTEN connection as the peers' workers hear theirs.
 *
 * graphile-worker and pg-boss do not record a job's result with the job's
 * state the way a stage does (a stage's output, the plan's progress and
 * status move in the statement that finishes it), so they do less per job.
 */

const JOBS = Number(process.env.BENCH_PEER_JOBS ?? 5000);
const WORKERS = 16;
const LATENCY_SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const STAGE_RUNS_PER_PLAN = 5; // six stages; the pre-approved gate is no run

interface Figures {
  jobsPerSecond: number;
  /** This process's CPU time (user + system) per job while the backlog drained: the queue's own cost on the Node side. */
  cpuMicrosPerJob: number;
  latencyP50: number;
  latencyP99: number;
  /** Ours only: add-to-start when the plan is added as the peers add a job, a library call in this process (insert, then NOTIFY), with no HTTP. */
  libraryAddP50?: number;
  libraryAddP99?: number;
}

const drops: (() => Promise<void>)[] = [];

async function freshDatabase(label: string): Promise<string> {
  const database = await freshBenchDatabase(label);
  drops.push(database.drop);
  return database.url;
}

/** The work every system runs per job: one row update on its own pool. */
async function workTable(url: string): Promise<{ pool: pg.Pool; bump: () => Promise<void> }> {
  const pool = new pg.Pool({ connectionString: url, max: WORKERS });
  await pool.query("CREATE TABLE work_rows (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0); INSERT INTO work_rows SELECT g FROM generate_series(1, 64) g");
  let next = 0;
  return {
    pool,
    bump: async () => {
      await pool.query("UPDATE work_rows SET n = n + 1 WHERE id = $1", [(next++ % 64) + 1]);
    },
  };
}

/** Counts handler starts and ends; `drained` resolves when `expected` have ended. */
function tracker(expected: number) {
  let firstStart = 0;
  let lastEnd = 0;
  let cpuAtStart: NodeJS.CpuUsage | undefined;
  let cpuAtEnd: NodeJS.CpuUsage | undefined;
  let ended = 0;
  let onStart: (() => void) | undefined;
  let resolveDrained!: () => void;
  const drained = new Promise<void>((resolve) => (resolveDrained = resolve));
  return {
    started() {
      if (firstStart === 0) {
        firstStart = performance.now();
        cpuAtStart = process.cpuUsage();
      }
      onStart?.();
    },
    ended() {
      lastEnd = performance.now();
      if (++ended === expected) {
        cpuAtEnd = process.cpuUsage(cpuAtStart);
        resolveDrained();
      }
    },
    drained,
    rate: () => expected / ((lastEnd - firstStart) / 1000),
    cpuMicrosPerJob: () => (cpuAtEnd ? (cpuAtEnd.user + cpuAtEnd.system) / expected : Number.NaN),
    /** Runs one job's work between a start and an end. */
    async run(work: () => Promise<void>) {
      this.started();
      await work();
      this.ended();
    },
    /** Resolves at the next handler start. */
    nextStart: () => new Promise<void>((resolve) => (onStart = resolve)),
  };
}

async function latency(add: () => Promise<unknown>, nextStart: () => Promise<void>): Promise<{ p50: number; p99: number }> {
  const samples: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20)); // idle in between
    const started = nextStart();
    const t0 = performance.now();
    await add();
    await started;
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(samples.length / 2)]!, p99: samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))]! };
}

async function graphileWorker(): Promise<Figures> {
  const url = await freshDatabase("graphile");
  const { pool, bump } = await workTable(url);
  const utils = await makeWorkerUtils({ connectionString: url, logger: new GraphileLogger(() => () => {}) });
  await utils.migrate();
  for (let i = 0; i < JOBS; i += 1000) {
    await utils.addJobs(Array.from({ length: Math.min(1000, JOBS - i) }, (_, j) => ({ identifier: "bump", payload: { n: i + j } })));
  }
  let track = tracker(JOBS);
  const runner = await runGraphileWorker({
    connectionString: url,
    concurrency: WORKERS,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: new GraphileLogger(() => () => {}),
    taskList: {
      bump: async () => {
        await track.run(bump);
      },
    },
  });
  await track.drained;
  const jobsPerSecond = track.rate();
  const cpuMicrosPerJob = track.cpuMicrosPerJob();
  track = tracker(Number.MAX_SAFE_INTEGER);
  const { p50, p99 } = await latency(() => utils.addJob("bump", {}), track.nextStart);
  await runner.stop();
  await utils.release();
  await pool.end();
  return { jobsPerSecond, cpuMicrosPerJob, latencyP50: p50, latencyP99: p99 };
}

async function pgBoss(): Promise<Figures> {
  const url = await freshDatabase("pgboss");
  const { pool, bump } = await workTable(url);
  const boss = new PgBoss({ connectionString: url, max: WORKERS + 4, useListenNotify: true });
  boss.on("error", () => {});
  await boss.start();
  await boss.createQueue("bump", { notify: true });
  for (let i = 0; i < JOBS; i += 1000) {
    await boss.insert(
      "bump",
      Array.from({ length: Math.min(1000, JOBS - i) }, (_, j) => ({ data: { n: i + j } })),
    );
  }
  let track = tracker(JOBS);
  // pg-boss's fast path for a backlog: with notify on, an idle worker polls every 30 s, so workers fetch
  // in batches and fetch again at once while batches come back full. Each job is still one update.
  await boss.work("bump", { batchSize: 4, burstWhenBatchFull: true, localConcurrency: WORKERS / 4, pollingIntervalSeconds: 0.5 }, async (jobs) => {
    await Promise.all(
      jobs.map(async () => {
        await track.run(bump);
      }),
    );
  });
  await track.drained;
  const jobsPerSecond = track.rate();
  const cpuMicrosPerJob = track.cpuMicrosPerJob();
  track = tracker(Number.MAX_SAFE_INTEGER);
  const { p50, p99 } = await latency(() => boss.send("bump", {}), track.nextStart);
  await boss.stop({ graceful: false });
  await pool.end();
  return { jobsPerSecond, cpuMicrosPerJob, latencyP50: p50, latencyP99: p99 };
}

async function stageEngine(): Promise<Figures> {
  const url = await freshDatabase("engine");
  const { pool, bump } = await workTable(url);
  const plans = JOBS / STAGE_RUNS_PER_PLAN;
  let track = tracker(JOBS);
  const config = benchConfig(url, { ZERO_WORKER_CONCURRENCY: String(WORKERS) });
  // Started with the backlog already waiting, like the peers; the first stage's start is when timing begins.
  const seed = await startApp({ ...config, workerConcurrency: 0 }, { logger: createLogger("silent") });
  const created = await createAccount(seed.store.db, { email: "bench@example.test", password: randomBytes(16).toString("hex"), onlyFirst: false });
  if (!("account" in created)) throw new Error("no bench account");
  const accountId = created.account.id;
  const { secret } = (await createApiKey(seed.store.db, { accountId, name: "bench", scopes: ["build"] }))!;
  const stages = initialStages("website");
  for (let i = 0; i < plans; i += 200) {
    const batch = Array.from({ length: Math.min(200, plans - i) }, (_, j) => ({
      id: `pln_peer${i + j}`,
      accountId,
      goal: "A website for a small bakery",
      outcome: "website" as const,
      stages,
    }));
    await insertPlansWithinLimit(seed.store.db, batch, { limit: 1_000_000_000, windowSeconds: 3600 });
  }
  await seed.store.db
    .updateTable("plans")
    .set({ approved: ["review"] })
    .execute();
  await seed.close();

  const app = await startApp(config, {
    logger: createLogger("silent"),
    stageWork: () => async () => {
      await track.run(bump);
      return { output: { ok: true } };
    },
  });
  await track.drained;
  const jobsPerSecond = track.rate();
  const cpuMicrosPerJob = track.cpuMicrosPerJob();
  track = tracker(Number.MAX_SAFE_INTEGER);
  // undici's request rather than fetch: on this VM fetch spent ~0.7 ms of the client's own per call, in this
  // process, and the peers' adds are library calls with no HTTP client at all.
  const client = new Pool(app.url, { connections: 1 });
  const create = () =>
    client
      .request({
        path: "/api/execution",
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
        body: JSON.stringify({ goal: "A website for a small bakery", outcome: "website" }),
      })
      .then((r) => r.body.text());
  const { p50, p99 } = await latency(create, track.nextStart);
  await client.close();
  let added = 0;
  const addAsLibrary = async () => {
    const plan = { id: `pln_lib${added++}`, accountId, goal: "A website for a small bakery", outcome: "website" as const, stages };
    await insertPlansWithinLimit(app.store.db, [plan], { limit: 1_000_000_000, windowSeconds: 3600 });
    await sql`SELECT pg_notify(${STAGE_READY_CHANNEL}, '')`.execute(app.store.db);
  };
  const library = await latency(addAsLibrary, track.nextStart);
  await app.close();
  await pool.end();
  return { jobsPerSecond, cpuMicrosPerJob, latencyP50: p50, latencyP99: p99, libraryAddP50: library.p50, libraryAddP99: library.p99 };
}

try {
  // Rounds in alternating order, so no system always runs first on a cold machine or last on a warm one.
  const systems = { "stage engine": stageEngine, "graphile-worker 0.18": graphileWorker, "pg-boss 12": pgBoss } as const;
  type Name = keyof typeof systems;
  // BENCH_SYSTEMS=engine (or graphile, pg-boss): run only the systems whose names start so, e.g. under --cpu-prof.
  const only = process.env.BENCH_SYSTEMS?.split(",");
  const names = (Object.keys(systems) as Name[]).filter((name) => !only || only.some((prefix) => name.startsWith(prefix)));
  const runs = new Map<Name, Figures[]>(names.map((name) => [name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of round % 2 === 1 ? names : [...names].reverse()) {
      const figures = await systems[name]();
      runs.get(name)!.push(figures);
      console.log(
        `round ${round} ${name.padEnd(22)} ${figures.jobsPerSecond.toFixed(0).padStart(6)} jobs/s ${figures.cpuMicrosPerJob.toFixed(0).padStart(5)} µs CPU/job  add-to-start p50 ${figures.latencyP50.toFixed(2)} ms` +
          (figures.libraryAddP50 === undefined ? "" : ` (added as a library call: ${figures.libraryAddP50.toFixed(2)} ms)`),
      );
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const summary = (name: Name) => {
    const rows = runs.get(name)!;
    return {
      jobsPerSecond: median(rows.map((r) => r.jobsPerSecond)),
      cpuMicrosPerJob: median(rows.map((r) => r.cpuMicrosPerJob)),
      latencyP50: median(rows.map((r) => r.latencyP50)),
      latencyP99: median(rows.map((r) => r.latencyP99)),
      libraryAddP50: rows[0]!.libraryAddP50 === undefined ? undefined : median(rows.map((r) => r.libraryAddP50!)),
      libraryAddP99: rows[0]!.libraryAddP99 === undefined ? undefined : median(rows.map((r) => r.libraryAddP99!)),
    };
  };
  const f = (n: number, digits = 0) => n.toFixed(digits);
  console.log(
    `\nthe stage engine beside Postgres job queues (${JOBS} jobs, ${WORKERS} workers, one row update each; ${os.cpus().length} CPUs; medians of ${ROUNDS} rounds)`,
  );
  console.table(
    Object.fromEntries(
      names.map((name) => {
        const s = summary(name);
        return [
          name,
          {
            "jobs/s": f(s.jobsPerSecond),
            "Node CPU µs/job": f(s.cpuMicrosPerJob),
            "add-to-start p50 (ms)": f(s.latencyP50, 2),
            "p99 (ms)": f(s.latencyP99, 2),
            "library add p50": s.libraryAddP50 === undefined ? "(is one)" : f(s.libraryAddP50, 2),
            "library add p99": s.libraryAddP99 === undefined ? "(is one)" : f(s.libraryAddP99, 2),
          },
        ];
      }),
    ),
  );
  if (names.length === 3) {
    const [ours, graphile, boss] = names.map(summary) as [Figures, Figures, Figures];
    console.log(
      `stage engine / graphile-worker: ${f(ours.jobsPerSecond / graphile.jobsPerSecond, 2)}x (goal >= 0.50, aim > 1); ` +
        `stage engine / pg-boss: ${f(ours.jobsPerSecond / boss.jobsPerSecond, 2)}x (goal >= 1.00)`,
    );
  }
} finally {
  for (const drop of drops) await drop();
}
