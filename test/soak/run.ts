/**
 * `npm run soak`: the reliability soak of issue 7. Two real instances
 * (`src/main.ts` processes) on one throwaway Postgres, one fake upstream,
 * a sustained mixed load, then faults one after another with checks after
 * each: SIGKILL of an instance mid-stage, a Postgres restart, an upstream
 * that hangs, fails and drops mid-stream, clients that hang up. Afterwards
 * every accepted plan must finish (or, if the load cancelled or deleted it,
 * stay cancelled with no stage run after the cancel, or be 404; revised
 * plans must come back to the gate), no stage may have run twice, the free
 * pool must balance with what the upstream served, no 500 anywhere, no
 * secret in the logs; then the bad-input fuzz runs with more cases. Prints
 * a summary table; exits 1 when a check fails. Traffic stays on 127.0.0.1.
 *
 * SOAK_SECONDS (default 30) is the steady-load phase; with the faults, the
 * accounting and the fuzz the whole run takes about 100 s on a quiet 2-core
 * machine, three to four minutes on a busy one. SOAK_CONCURRENCY (default
 * 12), SOAK_FUZZ_RUNS (200). The instances' logs and every request's sample
 * (samples.json) stay in the work directory it prints.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { createAccountWithKey } from "../support/accounts.js";
import { LoadGenerator } from "./load.js";
import { PlanLedger } from "./plan-ledger.js";
import { auditPool, type PoolAudit } from "./pool-audit.js";
import { PostgresCluster } from "./postgres-cluster.js";
import { checksTable, countBy, loadTable, percentile, table, type Check } from "./report.js";
import { EventLoopWatch } from "./event-loop.js";
import { ServiceInstance } from "./service-instance.js";
import { slowConnections } from "./slow-connections.js";
import { SLOW_ANSWER, SLOW_STREAM, SoakUpstream } from "./soak-upstream.js";
import { chat, chatStream, createPlan, readPlan, sseData, type Credentials, type Sample, type Target } from "./traffic.js";

const root = path.resolve(import.meta.dirname, "../..");
const SOAK_SECONDS = positive("SOAK_SECONDS", 30);
const CONCURRENCY = positive("SOAK_CONCURRENCY", 12);
/** Runs per fast-check property of the fuzz file: with its 12 property-runs per unit, 8,334 is just over 100,000 inputs. */
const FUZZ_RUNS = positive("SOAK_FUZZ_RUNS", 8_334);
/** The deadlines the instances run with: short, so the slow-connection phase sees them bite. */
const HEADERS_TIMEOUT_MS = 2_000;
const REQUEST_TIMEOUT_MS = 4_000;
/** Phases that break something on purpose: event-loop delay is judged outside them. */
const FAULT_PHASES = new Set(["sigkill", "pg-restart", "upstream-hang", "upstream-storm", "upstream-drop", "disconnect", "slow-connections"]);
const EVENT_LOOP_BOUND_MS = 100;
const METRICS_TOKEN = `soak-metrics-${randomBytes(8).toString("hex")}`;
/**
 * Long enough that the Postgres restart below (about 3 s down) is a short
 * outage: leases are renewed every third of a lease, so they survive an
 * outage shorter than a third of one. The SIGKILL phase waits one lease.
 */
const LEASE_MS = 10_000;
/** How long Postgres stays stopped (its own stop and start add about a second). */
const OUTAGE_MS = 1500;
const FIRST_BYTE_TIMEOUT_MS = 2000;
/** Far above what the soak can spend: the audit is about units balancing, not about running dry (free-pool tests cover that). */
const POOL_CAPACITY = 500_000;
/** free-pool.ts: a block is at most maxBlock (1024); an instance holds at most a block and a prefetched one. */
const MAX_HELD_UNITS = 2 * 1024;
const UPSTREAM_KEY = `sk-soak-upstream-${randomBytes(12).toString("hex")}`;

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const t0 = performance.now();
function log(message: string): void {
  process.stdout.write(`[soak ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
}

const checks: Check[] = [];
function check(name: string, ok: boolean, detail: string): void {
  checks.push({ name, ok, detail });
  log(`${ok ? "PASS" : "FAIL"} ${name}: ${detail}`);
}

/** Polls until `probe` answers a value, or throws after `ms`. */
async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined> | T | undefined, every = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

async function main(): Promise<number> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "zero-soak-"));
  log(`work directory ${workDir} (instance logs, fuzz report)`);
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => {});
  };
  process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));

  try {
    // ---------------------------------------------------------------- set-up
    const cluster = await PostgresCluster.start();
    cleanups.push(() => cluster.destroy());
    log(`postgres at ${cluster.url} (${cluster.dir})`);
    // The soak's own connection must survive the database restart below: reconnect on demand.
    let dbClient: pg.Client | undefined;
    const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> => {
      if (!dbClient) {
        const fresh = new pg.Client({ connectionString: cluster.url });
        fresh.on("error", () => {
          if (dbClient === fresh) dbClient = undefined;
        });
        await fresh.connect();
        dbClient = fresh;
      }
      const client = dbClient;
      try {
        return (await client.query<R>(text, values)).rows;
      } catch (error) {
        if (dbClient === client) dbClient = undefined;
        void client.end().catch(() => {});
        throw error;
      }
    };
    cleanups.push(async () => dbClient?.end());

    const upstream = await SoakUpstream.start();
    cleanups.push(() => upstream.close());
    const dataDir = path.join(workDir, "data");
    // Built sites and books are not worth keeping; the logs are.
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const env: Record<string, string> = {
      HOST: "127.0.0.1",
      DATABASE_URL: cluster.url,
      ZERO_DATA_DIR: dataDir,
      ZERO_UPSTREAMS: JSON.stringify([{ name: "soak-upstream", baseUrl: upstream.url, apiKey: UPSTREAM_KEY, model: "soak-model-7b" }]),
      ZERO_STAGE_LEASE_MS: String(LEASE_MS),
      ZERO_GENERATION_LIMIT: "1000000",
      ZERO_FREE_POOL_DAILY_REQUESTS: String(POOL_CAPACITY),
      ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: String(FIRST_BYTE_TIMEOUT_MS),
      ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "2000",
      ZERO_SHUTDOWN_GRACE_MS: "5000",
      LOG_LEVEL: "info",
      ZERO_SIGNUPS_PER_ADDRESS_PER_HOUR: "1000000",
      ZERO_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      ZERO_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      ZERO_HTTP2_IDLE_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      ZERO_METRICS_TOKEN: METRICS_TOKEN,
    };
    const instances = ["A", "B"].map((name) => new ServiceInstance(name, env, path.join(workDir, `instance-${name}.log`)));
    cleanups.push(() => Promise.all(instances.map((i) => i.kill())));
    // Both at once: the migrations run under a lock, so two fresh instances must not trip over each other.
    await Promise.all(instances.map((i) => i.start()));
    log(`instances ${instances.map((i) => `${i.name} ${i.url}`).join(", ")}`);
    const [victim, survivor] = instances as [ServiceInstance, ServiceInstance];

    const account = await createAccountWithKey({ url: survivor.url }, ["read", "build", "chat"]);
    const credentials: Credentials = { apiKey: account.apiKey, cookie: account.cookie };
    const sessionToken = account.cookie.slice("zero_session=".length);

    const down = new Set<string>();
    const live = (): Target[] => instances.filter((i) => i.running && !down.has(i.name)).map((i) => ({ name: i.name, url: i.url }));
    const target = (i: ServiceInstance): Target => ({ name: i.name, url: i.url });
    const ledger = new PlanLedger();
    const load = new LoadGenerator({ concurrency: CONCURRENCY, createsPerSecond: 2, ebookShare: 0.25 }, live, credentials, ledger);
    const record = (s: Sample) => load.record(s);
    const phaseSeconds = new Map<string, number>();
    /**
     * A sample belongs to the phase it was sent in. Between phases (checks,
     * sweeps) the load goes on under its own label, so a fault's row holds
     * only what was sent while the fault lasted.
     */
    const runPhase = async (phase: string, body: () => Promise<void>) => {
      load.phase = phase;
      const started = performance.now();
      await body();
      phaseSeconds.set(phase, (phaseSeconds.get(phase) ?? 0) + (performance.now() - started) / 1000);
      load.phase = "between faults";
    };
    const samplesOf = (...phases: string[]) => load.samples.filter((s) => phases.includes(s.phase));
    const eventLoop = new EventLoopWatch(
      () => instances,
      () => load.phase,
      METRICS_TOKEN,
    );
    eventLoop.start();
    cleanups.push(async () => eventLoop.stop());

    /** Plans of the account that the ledger does not know: created, but the 202 never reached the client. */
    const adoptUnanswered = async () => {
      const rows = await query<{ id: string }>("select id from plans where account_id = $1", [account.accountId]);
      for (const { id } of rows) {
        if (ledger.plans.has(id)) continue;
        const read = await readPlan(target(survivor), credentials, load.phase, id);
        record(read.sample);
        if (read.body) ledger.accept(read.body.plan, "unanswered");
      }
    };
    /** One pass over the open plans: approve gates, resume what failed or was interrupted. */
    const sweep = async () => {
      await adoptUnanswered();
      await ledger.settle(live, credentials, load.phase, Date.now() + 1, record);
    };
    const noUndocumented = (name: string, samples: Sample[], allowNetwork: (s: Sample) => boolean = () => false) => {
      const bad = samples.filter((s) => s.result !== "ok" && !s.documented && !(s.result === "network" && allowNetwork(s)));
      const fiveHundreds = samples.filter((s) => s.status === 500).length;
      check(
        name,
        bad.length === 0 && fiveHundreds === 0,
        `${samples.length} requests, ${samples.filter((s) => s.result !== "ok").length} errors` +
          (samples.some((s) => s.result !== "ok")
            ? ` (${countBy(
                samples.filter((s) => s.result !== "ok"),
                (s) => `${s.errorType}${s.status ? ` ${s.status}` : ""}`,
              )})`
            : "") +
          `, 500s: ${fiveHundreds}, undocumented: ${bad.length}` +
          (bad.length
            ? ` e.g. ${bad
                .slice(0, 3)
                .map((s) => `${s.kind}@${s.instance}: ${s.detail}`)
                .join(" | ")}`
            : ""),
      );
    };

    // ---------------------------------------------------------- steady load
    log(`steady load: ${CONCURRENCY} in flight for ${SOAK_SECONDS} s`);
    load.start();
    await runPhase("steady", () => sleep(SOAK_SECONDS * 1000));
    const steady = samplesOf("steady");
    check(
      "load held",
      steady.every((s) => s.result === "ok") && steady.length > 0,
      `${steady.length} requests in ${SOAK_SECONDS} s, errors: ${steady.filter((s) => s.result !== "ok").length}` +
        (steady.some((s) => s.result !== "ok")
          ? ` (${countBy(
              steady.filter((s) => s.result !== "ok"),
              (s) => `${s.errorType} ${s.detail ?? ""}`,
            )})`
          : "") +
        `, p99 ${percentile(
          steady.map((s) => s.ms),
          99,
        ).toFixed(0)} ms`,
    );

    // ------------------------------------------- fault (a): SIGKILL mid-stage
    const killWindow = { from: Infinity, to: Infinity };
    await runPhase("sigkill", async () => {
      const leased = async () => {
        const rows = await query<{ plan_id: string; stage_id: string; attempts: number }>(
          "select plan_id, stage_id, attempts from plan_stages where state = 'running' and lease_owner = $1 and lease_expires_at > now()",
          [victim.instanceId],
        );
        return rows.length > 0 ? rows : undefined;
      };
      await until("a stage running on instance A", 30_000, leased, 20).catch(() => undefined);
      const oldInstanceId = victim.instanceId;
      down.add(victim.name);
      killWindow.from = performance.now();
      await victim.kill();
      const killedAt = Date.now();
      // What the dead process held: nothing can change these leases now but their expiry.
      const held = (
        await query<{ plan_id: string; stage_id: string; attempts: number }>(
          "select plan_id, stage_id, attempts from plan_stages where state = 'running' and lease_owner = $1",
          [oldInstanceId],
        )
      ).filter((h) => {
        // A plan whose cancel or delete was on its way when this phase began ends cancelled or gone, not interrupted.
        const entry = ledger.plans.get(h.plan_id);
        return !entry?.cancelled && !entry?.deleted && !(entry?.busy && (entry.fate === "cancel" || entry.fate === "delete"));
      });
      log(`SIGKILLed A holding ${held.length} stage(s): ${held.map((h) => `${h.plan_id}/${h.stage_id}`).join(", ")}`);
      await victim.start();
      killWindow.to = performance.now();
      down.delete(victim.name);
      log(`A restarted in ${Date.now() - killedAt} ms`);

      await adoptUnanswered();
      const interruptedIn: number[] = [];
      const notInterrupted: string[] = [];
      await Promise.all(
        held.map(async (h) => {
          const entry = ledger.plans.get(h.plan_id);
          try {
            const plan = await until(
              `${h.plan_id} to be interrupted`,
              LEASE_MS + 10_000,
              async () => {
                const read = await readPlan(target(survivor), credentials, "sigkill", h.plan_id);
                record(read.sample);
                const p = read.body?.plan;
                return p && p.status !== "running" ? p : undefined;
              },
              100,
            );
            const stage = plan.stages.find((s) => s.id === h.stage_id);
            if (plan.status !== "interrupted" || stage?.error?.type !== "interrupted" || stage.attempts !== h.attempts) {
              notInterrupted.push(`${h.plan_id}: ${plan.status}, ${h.stage_id} ${stage?.state} ${stage?.error?.type}`);
              return;
            }
            interruptedIn.push(Date.now() - killedAt);
            if (entry) await ledger.resume(target(survivor), credentials, "sigkill", entry, plan, record);
          } catch (error) {
            notInterrupted.push(`${h.plan_id}: ${(error as Error).message}`);
          }
        }),
      );
      const unanswered = [...ledger.plans.values()].filter((p) => p.via === "unanswered").length;
      check(
        "fault: SIGKILL mid-stage",
        held.length > 0 && notInterrupted.length === 0,
        `${held.length} running stage(s) killed; interrupted after ${Math.max(...interruptedIn, 0)} ms (lease ${LEASE_MS} ms) and resumed: ` +
          `${interruptedIn.length}/${held.length}; creates in flight at the kill found in the database: ${unanswered}` +
          (notInterrupted.length ? `; not interrupted: ${notInterrupted.join("; ")}` : ""),
      );
      await sleep(2000);
    });
    // The only requests allowed to get no answer: those to A that were in flight or sent while it was dead.
    const cutByKill = (s: Sample) => s.instance === victim.name && s.at < killWindow.to && s.at + s.ms >= killWindow.from;
    noUndocumented(
      "fault: SIGKILL, answers",
      load.samples.filter((s) => s.phase === "sigkill" || cutByKill(s)),
      cutByKill,
    );
    await sweep();

    // ------------------------------------ fault (b): Postgres restart mid-load
    let outage = { startedAt: 0, stopMs: 0, downMs: 0, recoveredMs: [] as number[] };
    await runPhase("pg-restart", async () => {
      await sleep(1000);
      const stopAt = Date.now();
      await cluster.stop();
      const stoppedAt = Date.now();
      await sleep(OUTAGE_MS);
      await cluster.start();
      const startedAt = Date.now();
      const recoveredMs = await Promise.all(
        instances.map(async (i) => {
          await until(
            `${i.name} /readyz`,
            30_000,
            async () => ((await fetch(`${i.url}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
            100,
          );
          return Date.now() - startedAt;
        }),
      );
      outage = { startedAt: stopAt, stopMs: stoppedAt - stopAt, downMs: startedAt - stopAt, recoveredMs };
      log(`postgres stopped in ${outage.stopMs} ms, down ${outage.downMs} ms; instances ready again ${recoveredMs.join(" / ")} ms after its start`);
      await sleep(2000);
    });
    const pgSamples = samplesOf("pg-restart");
    noUndocumented("fault: Postgres restart, answers", pgSamples);
    // After the outage, every instance serves every kind again, by itself.
    const afterOutage: Sample[] = [];
    for (const i of instances) {
      const created = await createPlan(target(i), credentials, "pg-recovered", `a website after the outage [soak-${ledger.nextTag()}]`, "website");
      // Plain: a fate drawn at random could delete it before the read below.
      if (created.body) ledger.accept(created.body.plan, "accepted", "plain");
      afterOutage.push(created.sample, (await chat(target(i), credentials, "pg-recovered")).sample, await chatStream(target(i), credentials, "pg-recovered"));
      afterOutage.push((await readPlan(target(i), credentials, "pg-recovered", created.body?.plan.id ?? "pln_none")).sample);
    }
    afterOutage.forEach(record);
    await sweep();
    check(
      "fault: Postgres restart",
      afterOutage.every((s) => s.result === "ok") && pgSamples.some((s) => s.errorType === "unavailable"),
      `${pgSamples.filter((s) => s.status === 503).length} × 503 while down (${outage.downMs} ms), ready again after ` +
        `${outage.recoveredMs.join(" / ")} ms; ${afterOutage.filter((s) => s.result === "ok").length}/${afterOutage.length} probes ok after`,
    );

    // ------------------------------ fault (c): upstream hang, 500 storm, drop
    for (const [phase, mode, seconds] of [
      ["upstream-hang", "hang", 5],
      ["upstream-storm", "storm", 4],
      ["upstream-drop", "drop", 4],
    ] as const) {
      await runPhase(phase, async () => {
        upstream.mode = mode;
        await sleep(seconds * 1000);
      });
    }
    upstream.mode = "normal";
    // Requests sent under a mode may end under the next; give the hung ones their timeout before judging.
    await runPhase("upstream-recovered", () => sleep(FIRST_BYTE_TIMEOUT_MS + 2000));
    const chatOf = (phase: string) => samplesOf(phase).filter((s) => s.kind === "chat" || s.kind === "stream");
    const signature = (phase: string, types: string[]) => types.every((t) => chatOf(phase).some((s) => s.errorType === t));
    const hangTimes = chatOf("upstream-hang")
      .filter((s) => s.errorType?.startsWith("upstream_timeout"))
      .map((s) => s.ms);
    noUndocumented("fault: upstream faults, answers", samplesOf("upstream-hang", "upstream-storm", "upstream-drop"));
    const recovered = samplesOf("upstream-recovered");
    const recoveredChat = chatOf("upstream-recovered");
    check(
      "fault: upstream hang / 500 storm / mid-stream drop",
      signature("upstream-hang", ["upstream_timeout", "upstream_timeout (event)"]) &&
        signature("upstream-storm", ["upstream_error", "upstream_error (event)"]) &&
        signature("upstream-drop", ["upstream_error", "upstream_error (event)"]) &&
        percentile(hangTimes, 99) < FIRST_BYTE_TIMEOUT_MS + 1500 &&
        recoveredChat.length > 0 &&
        recoveredChat.every((s) => s.result === "ok") &&
        recovered.every((s) => s.status !== 500),
      `hang: ${countBy(
        chatOf("upstream-hang").filter((s) => s.result !== "ok"),
        (s) => s.errorType!,
      )} (p99 ${percentile(hangTimes, 99).toFixed(0)} ms, timeout ${FIRST_BYTE_TIMEOUT_MS}); ` +
        `storm: ${countBy(
          chatOf("upstream-storm").filter((s) => s.result !== "ok"),
          (s) => s.errorType!,
        )}; ` +
        `drop: ${countBy(
          chatOf("upstream-drop").filter((s) => s.result !== "ok"),
          (s) => s.errorType!,
        )}; ` +
        `after: ${recoveredChat.filter((s) => s.result === "ok").length}/${recoveredChat.length} chat ok`,
    );
    await sweep();

    // -------------------------------------- fault (d): clients hang up mid-answer
    await runPhase("disconnect", async () => {
      const hangUps = await Promise.all(
        Array.from({ length: 10 }, (_, n) => {
          const i = instances[n % 2]!;
          return hangUp(i.url, credentials.apiKey, n < 6 ? "stream" : "answer", `d${n}-${randomBytes(3).toString("hex")}`, upstream);
        }),
      );
      const seen = hangUps.filter((h) => h.abortedAfterMs !== undefined);
      check(
        "fault: client disconnects",
        seen.length === hangUps.length && hangUps.every((h) => (h.abortedAfterMs ?? Infinity) < 2000),
        `${hangUps.length} clients hung up (6 mid-stream after the first chunk, 4 waiting for an answer); the upstream saw ` +
          `${seen.length} requests aborted, within ${Math.max(...seen.map((h) => h.abortedAfterMs!), 0).toFixed(0)} ms` +
          (hangUps.some((h) => h.problem)
            ? `; ${hangUps
                .filter((h) => h.problem)
                .map((h) => h.problem)
                .join("; ")}`
            : ""),
      );
    });

    // -------------------------------- fault (e): a flood of connections that stall
    await runPhase("slow-connections", async () => {
      const slow = await slowConnections(survivor.url, survivor.pid!, { count: 1000, deadlineMs: REQUEST_TIMEOUT_MS });
      check(
        "fault: 1,000 stalled connections",
        slow.drainedAfterMs !== undefined && slow.drainedAfterMs <= REQUEST_TIMEOUT_MS + 2_000 && slow.healthFailures === 0,
        `${slow.opened} connections (partial HTTP/2 preface, preface only, unfinished HTTP/1.1 headers, stalled bodies): server descriptors ` +
          `${slow.baselineFds} → ${slow.peakFds} → ${slow.afterFds}, back to baseline ${slow.drainedAfterMs === undefined ? "never" : `after ${slow.drainedAfterMs.toFixed(0)} ms`} ` +
          `(deadlines ${HEADERS_TIMEOUT_MS} / ${REQUEST_TIMEOUT_MS} ms); /healthz meanwhile ${slow.healthChecks - slow.healthFailures}/${slow.healthChecks} ok, p99 ${slow.healthP99Ms.toFixed(0)} ms`,
      );
    });

    // ------------------------------------------------- accounting of the plans
    await load.stop();
    log(`load stopped: ${load.samples.length} requests; settling ${ledger.unsettled().length} open plan(s) of ${ledger.plans.size}`);
    await runPhase("settle", async () => {
      await adoptUnanswered();
      await ledger.settle(live, credentials, "settle", Date.now() + 120_000, record);
    });
    eventLoop.stop();
    const delays = [...eventLoop.maxByPhase];
    const outsideFaults = delays.filter(([phase]) => !FAULT_PHASES.has(phase));
    const worstOutside = Math.max(0, ...outsideFaults.map(([, ms]) => ms));
    check(
      "event-loop delay outside faults",
      outsideFaults.length > 0 && worstOutside < EVENT_LOOP_BOUND_MS,
      `max ${worstOutside.toFixed(1)} ms (bound ${EVENT_LOOP_BOUND_MS}); by phase: ${delays.map(([phase, ms]) => `${phase} ${ms.toFixed(1)}`).join(", ")}`,
    );
    // The fuzz runs after the load (its CPU would otherwise show in the instances' event-loop delay), beside the accounting.
    const fuzzRun = runFuzz(workDir);
    noUndocumented("answers while settling", samplesOf("settle", "pg-recovered"));
    const verdict = await ledger.verdict(target(survivor), credentials, "settle", record);
    check(
      "lost plans = 0",
      verdict.lost.length === 0,
      `accepted ${verdict.accepted} (+${verdict.unanswered} whose 202 was cut by the kill), succeeded ${verdict.succeeded} (${verdict.revised} of them revised), ` +
        `cancelled ${verdict.cancelled}, deleted ${verdict.deleted}, lost ${verdict.lost.length}` +
        (verdict.lost.length ? `: ${verdict.lost.slice(0, 5).join(", ")}` : ""),
    );
    const writerMismatches = ledger.writerMismatches(upstream.writerServed);
    check(
      "double runs = 0",
      verdict.attemptMismatches.length === 0 && writerMismatches.length === 0,
      `${verdict.clean} plans never resumed: every stage attempts 1 and writer requests as for one run; ` +
        `${ledger.plans.size - verdict.clean} resumed ${verdict.resumes} time(s) (${verdict.interruptions} interrupted, ${verdict.failures} failed; ` +
        `${[...ledger.resumedBecause].map(([type, n]) => `${type}×${n}`).join(", ") || "none"}): ` +
        `attempts = 1 + resumes + retries; mismatches: ${verdict.attemptMismatches.length + writerMismatches.length}` +
        (verdict.attemptMismatches.length + writerMismatches.length
          ? ` e.g. ${[...verdict.attemptMismatches, ...writerMismatches].slice(0, 4).join("; ")}`
          : ""),
    );
    const { problems: endings, cancelledFrom } = await ledger.endings(target(survivor), credentials, "settle", record);
    check(
      "cancelled, deleted and revised plans",
      endings.length === 0 && verdict.cancelled > 0 && verdict.deleted > 0 && verdict.revised > 0,
      `${verdict.cancelled} cancelled (${[...cancelledFrom].map(([from, n]) => `from ${from}×${n}`).join(", ")}): no stage event after the cancelled event, stages as the cancel answered; ` +
        `${verdict.deleted} deleted: plan and history 404; ${verdict.revised} revised: each revision kept, back at the gate after the last, then published; ` +
        `problems: ${endings.length}` +
        (endings.length ? ` e.g. ${endings.slice(0, 4).join("; ")}` : ""),
    );
    const halfWritten = await query<{ id: string; stages: string }>(
      "select p.id, count(s.position)::text as stages from plans p left join plan_stages s on s.plan_id = p.id group by p.id having count(s.position) <> 6",
    );
    const stillLeased = await query<{ n: string }>("select count(*)::text as n from plan_stages where lease_token is not null");
    const dbPlans = await query<{ n: string }>("select count(*)::text as n from plans where account_id = $1", [account.accountId]);
    check(
      "database consistent",
      halfWritten.length === 0 && stillLeased[0]?.n === "0" && Number(dbPlans[0]?.n) === ledger.plans.size - verdict.deleted,
      `${dbPlans[0]?.n} plans in the database, ${ledger.plans.size} known to the client of which ${verdict.deleted} deleted; half-written: ${halfWritten.length}; leases left: ${stillLeased[0]?.n}`,
    );

    // --------------------------------------------------- pool, after a clean stop
    const exitCodes = await Promise.all(instances.map((i) => i.stop()));
    check(
      "graceful stop",
      exitCodes.every((c) => c === 0),
      `exit codes ${exitCodes.join(", ")}`,
    );
    await sleep(200);
    const pool: PoolAudit = await auditPool(
      query,
      POOL_CAPACITY,
      upstream.served,
      instances.map((i) => i.logFile),
    );
    check(
      "pool over-spend = 0",
      pool.overSpend === 0 && pool.lostWithKilled >= 0 && pool.lostWithKilled <= MAX_HELD_UNITS,
      `capacity ${pool.capacity}; granted ${pool.granted} = served by the upstream ${pool.served} + ${pool.lostWithKilled} unspent in the ` +
        `SIGKILLed instance's block (lost by design, never re-served) + ${pool.failedGiveBacks} give-backs the stopped database missed; over-spend ${pool.overSpend}`,
    );

    // ------------------------------------------------------------ logs
    const logs = instances.map((i) => fs.readFileSync(i.logFile, "utf8")).join("\n");
    const secrets = { "API key secret": account.apiKey, password: account.password, "session token": sessionToken, "upstream API key": UPSTREAM_KEY };
    const leaks = Object.entries(secrets).filter(([, value]) => logs.includes(value));
    check(
      "secrets in logs = 0",
      leaks.length === 0,
      `${logs.split("\n").length} log lines scanned for ${Object.keys(secrets).join(", ")}: ${leaks.length ? `found ${leaks.map(([k]) => k).join(", ")}` : "none"}`,
    );
    // A lease the reaper finds expired after the outage began was lost to it (nothing else expires leases from then on).
    const outageInterruptions = logs
      .split("\n")
      .filter((l) => l.includes('"msg":"stage lease expired; plan interrupted"') && Number(/"time":(\d+)/.exec(l)?.[1]) >= outage.startedAt).length;
    const shortOutage = outage.downMs < LEASE_MS / 3;
    check(
      "fault: Postgres restart, leases kept",
      !shortOutage || outageInterruptions === 0,
      `plans interrupted after the outage: ${outageInterruptions}; down ${outage.downMs} ms, lease ${LEASE_MS} ms renewed every ${Math.floor(LEASE_MS / 3)} ms` +
        (shortOutage ? ": a shorter outage, so none may be" : ": the outage outlasted a renewal period, so interruptions are allowed"),
    );
    noUndocumented("every answer documented", load.samples, cutByKill);
    fs.writeFileSync(path.join(workDir, "samples.json"), JSON.stringify(load.samples));
    const server500 = logs.split("\n").filter((l) => l.includes('"msg":"request"') && l.includes('"status":500,')).length;
    const all = load.samples;
    check(
      "no 500s anywhere",
      server500 === 0 && all.every((s) => s.status !== 500),
      `${all.length} client requests with status 500: ${all.filter((s) => s.status === 500).length}; request log lines with status 500: ${server500}`,
    );

    // ------------------------------------------------------ bad input (fuzz)
    const fuzz = await fuzzRun;
    check(
      "bad input",
      fuzz.failed === 0 && fuzz.passed > 0,
      `${fuzz.inputs} generated inputs (ZERO_FUZZ_RUNS=${FUZZ_RUNS}) over ${fuzz.passed + fuzz.failed} properties: ${fuzz.passed} passed, ${fuzz.failed} failed, ${fuzz.seconds.toFixed(0)} s` +
        (fuzz.failures.length ? `; ${fuzz.failures.join("; ")}` : ""),
    );

    // ------------------------------------------------------------- summary
    const phases = [...[...phaseSeconds.keys()].filter((p) => p !== "settle"), "between faults"];
    process.stdout.write(`\nLoad (steady phase, ${CONCURRENCY} in flight, two instances):\n${loadTable(steady, SOAK_SECONDS)}\n`);
    process.stdout.write(
      `\nBy phase (a request counts in the phase it was sent in; "between faults" is the load that went on during checks and sweeps):\n${table(
        ["phase", "seconds", "requests", "ok", "errors (by type)", "p99 ms"],
        phases.map((p) => {
          const of = samplesOf(p);
          const errors = of.filter((s) => s.result !== "ok");
          return [
            p,
            phaseSeconds.has(p) ? phaseSeconds.get(p)!.toFixed(1) : "-",
            String(of.length),
            String(of.length - errors.length),
            errors.length ? countBy(errors, (s) => s.errorType!) : "0",
            percentile(
              of.map((s) => s.ms),
              99,
            ).toFixed(0),
          ];
        }),
      )}\n`,
    );
    process.stdout.write(`\nSummary:\n${checksTable(checks)}\n`);
    const failed = checks.filter((c) => !c.ok);
    process.stdout.write(
      `\n${failed.length === 0 ? "soak passed" : `soak FAILED: ${failed.map((c) => c.name).join(", ")}`} in ${((performance.now() - t0) / 1000).toFixed(0)} s; logs in ${workDir}\n`,
    );
    return failed.length === 0 ? 0 : 1;
  } finally {
    await cleanup();
  }
}

/**
 * A client that hangs up: mid-stream after the first content chunk, or while
 * waiting for a slow non-streamed answer. Answers how long after the hang-up
 * the upstream saw its request aborted.
 */
async function hangUp(
  baseUrl: string,
  apiKey: string,
  kind: "stream" | "answer",
  id: string,
  upstream: SoakUpstream,
): Promise<{ abortedAfterMs: number | undefined; problem?: string }> {
  const controller = new AbortController();
  const marker = `${kind === "stream" ? SLOW_STREAM : SLOW_ANSWER} ${id}`;
  const response = fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: marker }], stream: kind === "stream" }),
    signal: controller.signal,
  });
  try {
    if (kind === "stream") {
      const reader = (await response).body!.getReader();
      let text = "";
      while (!sseData(text).some((d) => d.includes("piece 0"))) {
        const { value, done } = await reader.read();
        if (done) return { abortedAfterMs: undefined, problem: `${id}: stream ended before the first piece` };
        text += new TextDecoder().decode(value);
      }
    } else {
      // The answer comes after 1.5 s: hang up well before, once the upstream has the request.
      response.catch(() => undefined);
      await until(`${id} at the upstream`, 5000, () => (upstream.slow.has(id) ? true : undefined), 20);
      await sleep(300);
    }
  } catch (error) {
    return { abortedAfterMs: undefined, problem: `${id}: ${(error as Error).message}` };
  }
  const hungUpAt = performance.now();
  controller.abort();
  const request = upstream.slow.get(id);
  if (!request) return { abortedAfterMs: undefined, problem: `${id}: never reached the upstream` };
  const abortedAt = await Promise.race([request.aborted, sleep(5000).then(() => undefined)]);
  return abortedAt === undefined
    ? { abortedAfterMs: undefined, problem: `${id}: upstream request not aborted within 5 s` }
    : { abortedAfterMs: Math.max(0, abortedAt - hungUpAt) };
}

interface FuzzResult {
  passed: number;
  failed: number;
  inputs: number;
  seconds: number;
  failures: string[];
}

/**
 * The lead's fuzz file with more runs, as a child `vitest run` on embedded
 * PGlite. Inputs tried: the file's `numRuns` (RUNS × k per property) summed.
 */
async function runFuzz(workDir: string): Promise<FuzzResult> {
  const file = "test/reliability/bad-input.test.ts";
  const report = path.join(workDir, "fuzz-report.json");
  const started = performance.now();
  log(`fuzz: ZERO_FUZZ_RUNS=${FUZZ_RUNS} vitest run ${file}`);
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ZERO_FUZZ_RUNS: String(FUZZ_RUNS),
    PATH: `${path.join(root, "node_modules/.bin")}:${process.env.PATH}`,
  };
  delete childEnv.TEST_DATABASE_URL;
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn("npx", ["vitest", "run", "--config", "test/vitest.config.ts", file, "--reporter=json", `--outputFile=${report}`], {
      cwd: root,
      env: childEnv,
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.once("exit", resolve);
  });
  const seconds = (performance.now() - started) / 1000;
  const multipliers = [...fs.readFileSync(path.join(root, file), "utf8").matchAll(/numRuns:\s*RUNS(?:\s*\*\s*(\d+))?/g)].map((m) => Number(m[1] ?? 1));
  const inputs = multipliers.reduce((n, k) => n + k * FUZZ_RUNS, 0);
  try {
    const json = JSON.parse(fs.readFileSync(report, "utf8")) as {
      numPassedTests: number;
      numFailedTests: number;
      testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
    };
    const failures = json.testResults.flatMap((f) =>
      f.assertionResults.filter((a) => a.status === "failed").map((a) => `${a.title}: ${a.failureMessages[0]?.split("\n")[0] ?? ""}`),
    );
    return { passed: json.numPassedTests, failed: json.numFailedTests, inputs, seconds, failures };
  } catch {
    return { passed: 0, failed: 1, inputs, seconds, failures: [`vitest exited with ${code} and wrote no report`] };
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`soak aborted: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
