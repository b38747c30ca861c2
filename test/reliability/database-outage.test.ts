import { execFileSync } from "node:child_process";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { onRealPostgres } from "../support/database.js";
import { ScriptedWork } from "../support/stage-work.js";
import { rpcTransport } from "../support/transports.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";

const root = path.resolve(import.meta.dirname, "../..");

function pgBin(): string {
  const base = "/usr/lib/postgresql";
  const version = fs.readdirSync(base).sort((a, b) => Number(b) - Number(a))[0];
  return path.join(base, version!, "bin");
}

/** Its own cluster, because this test stops and starts the server under the app. */
describe.runIf(onRealPostgres)("a Postgres outage", () => {
  let dir: string;
  let url: string;
  let app: TestApp;
  let account: TestAccount;
  const work = new ScriptedWork();
  /** Until /readyz answers 200 again, after Postgres is started again (at most 20 s). */
  const untilReady = async () => {
    let ready = 0;
    for (let i = 0; i < 100 && ready !== 200; i++) {
      ready = (await fetch(`${app.url}/readyz`)).status;
      if (ready !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(ready).toBe(200);
  };
  const pgCtl = (action: "stop" | "start") =>
    execFileSync(
      "su",
      ["postgres", "-c", `${pgBin()}/pg_ctl -D '${dir}/data' -l '${dir}/server.log' -w -t 60 ${action === "stop" ? "stop -m fast" : "start"}`],
      {
        stdio: "ignore",
      },
    );
  const api = (pathAndQuery: string, init: RequestInit = {}) =>
    fetch(`${app.url}${pathAndQuery}`, {
      ...init,
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
    });

  beforeAll(async () => {
    dir = fs.mkdtempSync("/tmp/zero-outage-");
    url = execFileSync("bash", [path.join(root, ".ci/pg-start"), "", dir], { encoding: "utf8" }).trim();
    app = await startTestApp({ databaseUrl: url, stageWork: work.resolver, env: { ZERO_STAGE_LEASE_MS: "8000" } });
    account = await createAccountWithKey(app, ["read", "build"]);
  });
  afterAll(async () => {
    await app?.close();
    try {
      pgCtl("stop");
    } catch {}
  });

  it("fails fast with 503 while the database is away, recovers by itself, and keeps a running stage's lease", async () => {
    const created = await api("/api/execution", { method: "POST", body: JSON.stringify({ goal: "hold@outline a plan across the outage" }) });
    expect(created.status).toBe(202);
    const planId = ((await created.json()) as { plan: { id: string } }).plan.id;
    const held = await work.held(planId, "outline", 20_000);

    pgCtl("stop");
    const started = Date.now();
    const during = await api(`/api/execution?id=${planId}`);
    const elapsed = Date.now() - started;
    expect(during.status).toBe(503);
    expect(await during.json()).toEqual({ error: { type: "unavailable", message: expect.any(String) } });
    expect(elapsed).toBeLessThan(6000);
    expect((await fetch(`${app.url}/readyz`)).status).toBe(503);
    const refused = await api("/api/execution", { method: "POST", body: JSON.stringify({ goal: "a plan while the database is down" }) });
    expect(refused.status).toBe(503);

    await new Promise((r) => setTimeout(r, 1500));
    pgCtl("start");
    await untilReady();

    held.succeed();
    let plan: { status: string; stages: { id: string; state: string }[] } | undefined;
    for (let i = 0; i < 100; i++) {
      plan = ((await (await api(`/api/execution?id=${planId}`)).json()) as { plan: typeof plan }).plan;
      if (plan?.stages.find((s) => s.id === "outline")?.state === "succeeded") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // The stage that ran through the outage finished on its own lease: not interrupted, not run twice.
    expect(plan?.status).not.toBe("interrupted");
    expect(plan?.stages.find((s) => s.id === "outline")?.state).toBe("succeeded");
    expect(work.calls.filter((c) => c.planId === planId && c.stageId === "outline")).toHaveLength(1);

    // Nothing half-written: every plan has all six stages.
    const counts = await app.store.db
      .selectFrom("plans")
      .leftJoin("plan_stages", "plan_stages.plan_id", "plans.id")
      .select(["plans.id", (eb) => eb.fn.count<number>("plan_stages.stage_id").as("stages")])
      .groupBy("plans.id")
      .execute();
    expect(counts.every((row) => Number(row.stages) === 6)).toBe(true);
  });

  // Found operating the service: with Postgres stopped, every request logged "unexpected error" at error level with a
  // stack trace, paging on-call once per request for what /readyz already says.
  it("logs an outage that requests meet as a few warnings, not an error per request", async () => {
    const seen = app.logs.length;
    const rpc = (protocol: "connect" | "grpc") =>
      createClient(ExecutionService, rpcTransport(app.url, protocol))
        .getExecution({ id: "pln_none" }, { headers: { authorization: `Bearer ${account.apiKey}` } })
        .then(
          () => undefined,
          (error: unknown) => ConnectError.from(error).code,
        );
    pgCtl("stop");
    try {
      for (let round = 0; round < 3; round++) {
        expect((await api("/api/execution?id=pln_none")).status).toBe(503);
        expect((await api("/api/execution", { method: "POST", body: JSON.stringify({ goal: "a plan while the database is down" }) })).status).toBe(503);
        const chat = await api("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "any", messages: [{ role: "user", content: "hi" }] }) });
        expect(chat.status).toBe(503);
        expect(await rpc("connect")).toBe(Code.Unavailable);
        expect(await rpc("grpc")).toBe(Code.Unavailable);
      }
    } finally {
      pgCtl("start");
    }
    await untilReady();

    const lines = app.logs.slice(seen).map((line) => JSON.parse(line) as { level: number; msg: string; err?: { stack?: string } });
    expect(lines.filter((line) => line.msg === "unexpected error")).toEqual([]);
    const outage = lines.filter((line) => line.msg.startsWith("reaching the database"));
    // The first failure with its cause, at warn; then, after the interval, how many more; then that it is over.
    expect(outage[0]).toMatchObject({ level: 40, msg: "reaching the database failed", err: { stack: expect.any(String) } });
    expect(outage.at(-1)).toMatchObject({ level: 30, msg: "reaching the database works again", failures: 15 });
    expect(outage.length).toBeLessThanOrEqual(3);
  });
});
