import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { Pool } from "undici";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { openStore } from "../../src/db/database.js";
import { initialStages } from "../../src/executions/plan-transitions.js";
import { insertPlansWithinLimit } from "../../src/executions/plan-repository.js";
import { createLogger } from "../../src/observability/logger.js";
import { freshBenchDatabase } from "./support/postgres.js";
import { serverCommand } from "../support/server-process.js";
import { peakRssMb, resetPeakRss } from "./support/rss.js";

/**
 * Executions on a real Postgres, each figure beside a baseline measured in
 * the same run against the same server:
 *
 * - create throughput: CONCURRENCY clients posting `POST /api/execution`
 *   back to back (API key auth, limit check, plan + 6 stages) versus the same
 *   number of `pg` clients each running one raw transaction inserting a
 *   plan-sized row and its six stage rows;
 * - create latency: the same two, one connection, back to back (under
 *   saturation latency is only connections ÷ throughput);
 * - engine throughput: stage runs per second of one server process whose
 *   stages return at once, draining a backlog of pre-approved plans, versus a
 *   raw `FOR UPDATE SKIP LOCKED` claim-and-complete loop over an identical
 *   backlog with the same number of workers;
 * - peak RSS (VmHWM) of each server process; the API server's counts from
 *   after the sign-ups that made the benchmark's keys.
 */

const CONCURRENCY = 32;
const THROUGHPUT_MS = Number(process.env.BENCH_THROUGHPUT_MS ?? 4000);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 2500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const ENGINE_PLANS = Number(process.env.BENCH_ENGINE_PLANS ?? 1500);
const ENGINE_WORKERS = Number(process.env.BENCH_ENGINE_WORKERS ?? 16);
const STAGE_RUNS_PER_PLAN = 5; // six stages; the pre-approved gate is no run

const root = path.resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

/** A database of its own for one part of the bench, dropped at the end. */
async function freshDatabase(label: string): Promise<string> {
  const database = await freshBenchDatabase(label);
  cleanups.push(database.drop);
  return database.url;
}

async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; pid: number }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "zero-bench-"));
  const command = await serverCommand("test/bench/support/executions-server.ts");
  const [node, ...args] = command.argv;
  const child = spawn(node!, args, {
    cwd: root,
    env: {
      ...process.env,
      ...command.env,
      PORT: "0",
      LOG_LEVEL: "warn",
      ZERO_DATA_DIR: dataDir,
      ZERO_GENERATION_LIMIT: "1000000000",
      ZERO_SIGNUPS_PER_ADDRESS_PER_HOUR: "1000000",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.startsWith('{"url"')) {
        const info = JSON.parse(line) as { url: string; pid: number };
        resolve({ child, url: info.url, pid: info.pid });
      }
    });
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** Signs up through the Console and makes an API key with `build`, as a person would. */
async function apiKeyFor(url: string, n: number): Promise<string> {
  const client = createClient(ConsoleService, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
  let cookie = "";
  await client.signUp(
    { email: `bench-${n}-${randomBytes(4).toString("hex")}@example.test`, password: `pw-${randomBytes(12).toString("hex")}` },
    { onHeader: (h) => (cookie = (h.get("set-cookie") ?? "").split(";")[0]!) },
  );
  const { secret } = await client.createApiKey({ name: "bench", scopes: ["build", "read"] }, { headers: { cookie, origin: new URL(url).origin } });
  return secret;
}

/** Runs `op` on `workers` loops for `ms`; answers operations/s and per-operation latencies (ms). */
async function drive(workers: number, ms: number, op: (worker: number) => Promise<void>): Promise<{ rate: number; latencies: number[] }> {
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < until) {
        const t = performance.now();
        await op(worker);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { rate: latencies.length / ((performance.now() - started) / 1000), latencies };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const f = (n: number, digits = 2) => n.toFixed(digits);

async function main(): Promise<void> {
  // ---- creates: the service (an API-only instance) versus a raw transaction ----
  const createDb = await freshDatabase("create");
  const api = await startServer({ DATABASE_URL: createDb, ZERO_WORKER_CONCURRENCY: "0" });
  const keys = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => apiKeyFor(api.url, i)));
  resetPeakRss(api.pid);
  const http = new Pool(api.url, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  const body = JSON.stringify({ goal: "A website for a small bakery with a menu and opening hours", outcome: "website" });
  const createAs = async (key: string) => {
    const res = await http.request({
      path: "/api/execution",
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body,
    });
    await res.body.dump();
    if (res.statusCode !== 202) throw new Error(`create answered ${res.statusCode}`);
  };
  const create = (worker: number) => createAs(keys[worker % keys.length]!);
  // One key for every client: a service integrating with one key is the common case.
  const createOneAccount = () => createAs(keys[0]!);

  const raw = new pg.Pool({ connectionString: createDb, max: CONCURRENCY });
  // Same shapes, indexes and defaults as the service's tables, without the foreign keys to accounts.
  await raw.query("CREATE TABLE raw_plans (LIKE plans INCLUDING ALL); CREATE TABLE raw_stages (LIKE plan_stages INCLUDING ALL)");
  const stages = initialStages("website");
  const rawCreate = async () => {
    const client = await raw.connect();
    try {
      const id = `pln_${randomBytes(10).toString("hex")}`;
      await client.query("BEGIN");
      await client.query("INSERT INTO raw_plans (id, account_id, goal, outcome, status) VALUES ($1, $2, $3, 'website', 'running')", [
        id,
        "acc_raw",
        "A website for a small bakery with a menu and opening hours",
      ]);
      await client.query(
        `INSERT INTO raw_stages (plan_id, position, stage_id, title, state, attempts, ready_at)
         SELECT $1, s.position, s.stage_id, s.title, s.state, s.attempts, CASE WHEN s.state = 'running' THEN now() END
         FROM unnest($2::smallint[], $3::text[], $4::text[], $5::text[], $6::int[]) AS s(position, stage_id, title, state, attempts)`,
        [id, stages.map((s) => s.position), stages.map((s) => s.id), stages.map((s) => s.title), stages.map((s) => s.state), stages.map((s) => s.attempts)],
      );
      await client.query("COMMIT");
    } finally {
      client.release();
    }
  };

  await drive(CONCURRENCY, 1000, create);
  await drive(CONCURRENCY, 1000, rawCreate);
  const createRates = { service: [] as number[], oneAccount: [] as number[], raw: [] as number[] };
  const createP50 = { service: [] as number[], raw: [] as number[] };
  const createP99 = { service: [] as number[], raw: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    createRates.raw.push((await drive(CONCURRENCY, THROUGHPUT_MS, rawCreate)).rate);
    createRates.service.push((await drive(CONCURRENCY, THROUGHPUT_MS, create)).rate);
    createRates.oneAccount.push((await drive(CONCURRENCY, THROUGHPUT_MS, createOneAccount)).rate);
    const rawLatency = await drive(1, LATENCY_MS, rawCreate);
    const serviceLatency = await drive(1, LATENCY_MS, create);
    createP50.raw.push(median(rawLatency.latencies));
    createP50.service.push(median(serviceLatency.latencies));
    createP99.raw.push(percentile(rawLatency.latencies, 0.99));
    createP99.service.push(percentile(serviceLatency.latencies, 0.99));
  }
  const apiRss = peakRssMb(api.pid);
  await http.close();
  await raw.end();
  api.child.kill("SIGTERM");

  // ---- the engine: one server process draining a backlog versus a raw SKIP LOCKED loop ----
  const engineDb = await freshDatabase("engine");
  const store = await openStore({ databaseUrl: engineDb, dataDir: os.tmpdir(), logger: createLogger("silent") });
  await store.db.insertInto("accounts").values({ id: "acc_bench", email: "bench@example.test", password_hash: "x" }).execute();
  const backlog = Array.from({ length: ENGINE_PLANS }, (_, i) => i);
  for (let i = 0; i < backlog.length; i += 50) {
    await Promise.all(
      backlog
        .slice(i, i + 50)
        .map((n) =>
          insertPlansWithinLimit(
            store.db,
            [{ id: `pln_bench${n}`, accountId: "acc_bench", goal: "A website for a small bakery", outcome: "website", stages }],
            { limit: 1_000_000_000, windowSeconds: 3600 },
          ),
        ),
    );
  }
  await store.db
    .updateTable("plans")
    .set({ approved: ["review"] })
    .execute();
  const ep = new pg.Pool({ connectionString: engineDb, max: ENGINE_WORKERS + 2 });
  await ep.query("CREATE TABLE raw_stages (LIKE plan_stages INCLUDING ALL)");
  await ep.query("INSERT INTO raw_stages SELECT * FROM plan_stages WHERE stage_id <> 'review'");
  await ep.query("UPDATE raw_stages SET position = position - 1 WHERE stage_id = 'publish'");
  await ep.query("CREATE SEQUENCE raw_tokens");
  await ep.query("ANALYZE");
  await store.close();

  // The raw loop: claim one ready stage, complete it and ready the next, in two statements.
  const rawTotal = ENGINE_PLANS * STAGE_RUNS_PER_PLAN;
  let rawDone = 0;
  const rawStarted = performance.now();
  await Promise.all(
    Array.from({ length: ENGINE_WORKERS }, async () => {
      for (;;) {
        const { rows } = await ep.query<{ plan_id: string; position: number; lease_token: string }>(
          `WITH picked AS (
             SELECT plan_id, position FROM raw_stages WHERE state = 'running' AND lease_token IS NULL
             ORDER BY ready_at LIMIT 1 FOR UPDATE SKIP LOCKED)
           UPDATE raw_stages s SET lease_token = nextval('raw_tokens'), lease_expires_at = now() + interval '30 seconds'
           FROM picked WHERE s.plan_id = picked.plan_id AND s.position = picked.position
           RETURNING s.plan_id, s.position, s.lease_token`,
        );
        const claimed = rows[0];
        if (!claimed) {
          if (rawDone >= rawTotal) return;
          await new Promise((r) => setTimeout(r, 1));
          continue;
        }
        await ep.query(
          `WITH done AS (
             UPDATE raw_stages SET state = 'succeeded', lease_token = NULL, lease_expires_at = NULL
             WHERE plan_id = $1 AND position = $2 AND lease_token = $3 RETURNING plan_id, position)
           UPDATE raw_stages s SET state = 'running', attempts = 1, ready_at = now()
           FROM done WHERE s.plan_id = done.plan_id AND s.position = done.position + 1`,
          [claimed.plan_id, claimed.position, claimed.lease_token],
        );
        rawDone++;
      }
    }),
  );
  const rawRate = rawTotal / ((performance.now() - rawStarted) / 1000);

  const engineStarted = performance.now();
  const engine = await startServer({ DATABASE_URL: engineDb, ZERO_WORKER_CONCURRENCY: String(ENGINE_WORKERS) });
  for (;;) {
    const { rows } = await ep.query<{ n: string }>("SELECT count(*) AS n FROM plans WHERE status = 'succeeded'");
    if (Number(rows[0]!.n) === ENGINE_PLANS) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const engineSeconds = (performance.now() - engineStarted) / 1000;
  // Timed on the database clock from the first stage finished to the last, so the process start does not count.
  const { rows: span } = await ep.query<{ seconds: number }>(
    "SELECT extract(epoch FROM max(updated_at) - min(updated_at))::float8 AS seconds FROM plan_stages WHERE state = 'succeeded' AND stage_id <> 'review'",
  );
  const engineRate = (rawTotal - 1) / Number(span[0]!.seconds);
  const { rows: runs } = await ep.query<{ n: string }>("SELECT count(*) AS n FROM plan_stages WHERE state = 'succeeded' AND attempts = 1");
  const engineRss = peakRssMb(engine.pid);
  engine.child.kill("SIGTERM");
  await ep.end();

  const rawCreates = median(createRates.raw);
  const serviceCreates = median(createRates.service);
  const oneAccountCreates = median(createRates.oneAccount);
  console.log(`\nexecutions on Postgres (${ROUNDS} rounds, medians; ${os.cpus().length} CPUs)`);
  console.table({
    [`creates/s at ${CONCURRENCY} concurrent`]: {
      service: f(serviceCreates, 0),
      baseline: f(rawCreates, 0),
      ratio: f(serviceCreates / rawCreates),
      goal: ">= 0.60",
    },
    [`creates/s at ${CONCURRENCY} concurrent, one account`]: {
      service: f(oneAccountCreates, 0),
      baseline: f(rawCreates, 0),
      ratio: f(oneAccountCreates / rawCreates),
      goal: ">= 0.60",
    },
    "create p50 at 1 connection (ms)": {
      service: f(median(createP50.service), 3),
      baseline: f(median(createP50.raw), 3),
      ratio: `+${f(median(createP50.service) - median(createP50.raw), 3)} ms`,
      goal: "< +1 ms",
    },
    "create p99 at 1 connection (ms)": { service: f(median(createP99.service), 3), baseline: f(median(createP99.raw), 3), ratio: "", goal: "" },
    [`stage runs/s, ${ENGINE_WORKERS} workers`]: { service: f(engineRate, 0), baseline: f(rawRate, 0), ratio: f(engineRate / rawRate), goal: ">= 0.50" },
    "peak RSS of the API server (MB)": { service: f(apiRss, 1), baseline: "", ratio: "", goal: "" },
    "peak RSS of the engine server (MB)": { service: f(engineRss, 1), baseline: "", ratio: "", goal: "< 150" },
  });
  console.log(
    `engine: ${ENGINE_PLANS} plans, ${rawTotal} stage runs; ${f(engineSeconds)} s including the server's start; ${runs[0]!.n} stages succeeded on their first attempt`,
  );
}

try {
  await main();
} finally {
  for (const child of children) child.kill("SIGKILL");
  for (const cleanup of cleanups) await cleanup().catch(() => {});
}
