import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { ScriptedWork } from "../support/stage-work.js";
import { PlanLedger } from "../soak/plan-ledger.js";
import { auditPool } from "../soak/pool-audit.js";
import { PostgresCluster } from "../soak/postgres-cluster.js";
import { ServiceInstance } from "../soak/service-instance.js";
import { SoakUpstream } from "../soak/soak-upstream.js";
import { chat, chatStream, createPlan, type Credentials, type Sample, type Target } from "../soak/traffic.js";

/**
 * The `npm test` slice of `npm run soak`: two real service processes on one
 * Postgres, writing with a (fake) upstream model through the free pool; one
 * is SIGKILLed while it runs stages and started again. Then every accepted
 * plan must finish once resumed, each stage's attempts must be 1 + the
 * resumes made for it (and the model asked once per clean stage), and the
 * pool's book must balance with what the upstream served. And what the
 * soak found about a Postgres restart: a stage that finishes while the
 * database is away keeps its result.
 */
const POOL_CAPACITY = 10_000;
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanups.reverse()) await step().catch(() => {});
});

describe.runIf(onRealPostgres)("two instances, one SIGKILLed mid-stage (the soak's fast subset)", () => {
  it("loses no plan, runs no stage twice, and the pool balances with what the upstream served", { timeout: 90_000 }, async () => {
    const databaseUrl = (await createTestDatabase())!;
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    cleanups.push(() => db.end());
    // Slow enough answers that a stage is surely running when the kill lands.
    const upstream = await SoakUpstream.start([300, 600]);
    cleanups.push(() => upstream.close());
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "zero-soak-fast-"));
    cleanups.push(async () => fs.rmSync(workDir, { recursive: true, force: true }));
    const env = {
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      ZERO_DATA_DIR: path.join(workDir, "data"),
      ZERO_UPSTREAMS: JSON.stringify([{ name: "fast-soak", baseUrl: upstream.url, apiKey: "sk-fast-soak-upstream", model: "m" }]),
      ZERO_STAGE_LEASE_MS: "1500",
      ZERO_GENERATION_LIMIT: "1000",
      ZERO_FREE_POOL_DAILY_REQUESTS: String(POOL_CAPACITY),
      ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "5000",
      ZERO_SHUTDOWN_GRACE_MS: "3000",
      LOG_LEVEL: "info",
    };
    const instances = ["A", "B"].map((name) => new ServiceInstance(name, env, path.join(workDir, `${name}.log`)));
    cleanups.push(() => Promise.all(instances.map((i) => i.kill())));
    await Promise.all(instances.map((i) => i.start()));
    const [victim, survivor] = instances as [ServiceInstance, ServiceInstance];
    const live = (): Target[] => instances.filter((i) => i.running).map((i) => ({ name: i.name, url: i.url }));

    const account = await createAccountWithKey({ url: survivor.url }, ["read", "build", "chat"]);
    const credentials: Credentials = { apiKey: account.apiKey, cookie: account.cookie };
    const ledger = new PlanLedger();
    const samples: Sample[] = [];
    const record = (s: Sample) => samples.push(s);

    for (let n = 0; n < 6; n++) {
      const tag = ledger.nextTag();
      const outcome = n % 3 === 2 ? "ebook" : "website";
      const created = await createPlan(live()[n % 2]!, credentials, "create", `a ${outcome} for a kayak club [soak-${tag}]`, outcome);
      record(created.sample);
      if (created.body) ledger.accept(created.body.plan);
    }
    // Chat beside the plans, so the pool serves both doors.
    await Promise.all(live().flatMap((t) => [chat(t, credentials, "chat"), chat(t, credentials, "chat")].map((p) => p.then((a) => record(a.sample)))));
    await Promise.all(live().map((t) => chatStream(t, credentials, "chat").then(record)));

    const heldBy = async (owner: string) =>
      (await db.query<{ plan_id: string; stage_id: string }>("select plan_id, stage_id from plan_stages where state = 'running' and lease_owner = $1", [owner]))
        .rows;
    // What the victim holds is read while it is stopped (SIGSTOP), so neither it nor the survivor's reaper changes it before the kill.
    let held: Awaited<ReturnType<typeof heldBy>> = [];
    for (const deadline = Date.now() + 20_000; held.length === 0 && Date.now() < deadline; ) {
      process.kill(victim.pid!, "SIGSTOP");
      held = await heldBy(victim.instanceId);
      if (held.length === 0) {
        process.kill(victim.pid!, "SIGCONT");
        await sleep(20);
      }
    }
    await victim.kill();
    expect(held.length, "instance A held no stage when it was killed").toBeGreaterThan(0);
    await victim.start();

    await ledger.settle(live, credentials, "settle", Date.now() + 60_000, record);
    const verdict = await ledger.verdict(live()[0]!, credentials, "settle", record);
    expect(verdict.accepted).toBe(6);
    expect(verdict.lost).toEqual([]);
    expect(verdict.attemptMismatches).toEqual([]);
    expect(ledger.writerMismatches(upstream.writerServed)).toEqual([]);
    for (const { plan_id, stage_id } of held) {
      const entry = ledger.plans.get(plan_id)!;
      expect(entry.interrupted, `${plan_id} was not seen interrupted`).toBeGreaterThanOrEqual(1);
      expect(entry.last?.stages.find((s) => s.id === stage_id)?.attempts).toBe(1 + (entry.resumes.get(stage_id) ?? 0));
    }
    expect(samples.filter((s) => s.result !== "ok").map((s) => `${s.kind} ${s.errorType} ${s.detail ?? ""}`)).toEqual([]);

    expect(await Promise.all(instances.map((i) => i.stop()))).toEqual([0, 0]);
    const query = async <R extends Record<string, unknown>>(text: string, values: unknown[] = []) => (await db.query(text, values)).rows as R[];
    const pool = await auditPool(
      query,
      POOL_CAPACITY,
      upstream.served,
      instances.map((i) => i.logFile),
    );
    expect(pool.overSpend).toBe(0);
    // What the killed instance held unspent is lost (never re-served); at most a block and a prefetch.
    expect(pool.lostWithKilled).toBeGreaterThanOrEqual(0);
    expect(pool.lostWithKilled).toBeLessThanOrEqual(2 * 1024);
  });

  it("keeps the result of a stage that finishes while Postgres is down: no interruption once it is back", { timeout: 60_000 }, async () => {
    // Its own cluster: this test stops the server under the app.
    const cluster = await PostgresCluster.start();
    cleanups.push(() => cluster.destroy());
    const work = new ScriptedWork();
    const app = await startTestApp({ databaseUrl: cluster.url, stageWork: work.resolver, env: { ZERO_STAGE_LEASE_MS: "6000" } });
    const account = await createAccountWithKey(app, ["read", "build"]);
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "hold@outline a stage that ends during an outage" });
    const planId = created.body.plan.id;
    const held = await work.held(planId, "outline", 20_000);

    await cluster.stop();
    // The work succeeds while its result cannot be written; the engine must keep trying, under its lease.
    held.succeed();
    await sleep(1000);
    await cluster.start();
    for (let i = 0; i < 100 && (await fetch(`${app.url}/readyz`)).status !== 200; i++) await sleep(100);

    // Longer than the lease: an abandoned lease would have expired and interrupted the plan by then.
    const plan = await waitForPlan(app.url, credential, planId, (p) => p.status !== "running", 20_000);
    expect(plan.status).toBe("awaiting_approval");
    expect(plan.stages.find((s) => s.id === "outline")).toMatchObject({ state: "succeeded", attempts: 1, error: null });
    expect(work.runs(planId, "outline")).toBe(1);
    await sleep(6500);
    const later = await waitForPlan(app.url, credential, planId, () => true);
    expect(later.status).toBe("awaiting_approval");
    expect(app.logs.filter((l) => l.includes("stage bookkeeping failed") || l.includes("stage lease expired"))).toEqual([]);
  });
});
