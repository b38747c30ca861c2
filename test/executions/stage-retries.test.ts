import fs from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import pg from "pg";
import type { StageWorkResolver } from "../../src/engine/stage-work.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { ScriptedWork, typicalOutcome } from "../support/stage-work.js";

interface RestEvent {
  type: string;
  stage: string | null;
  attempt: number | null;
  detail: Record<string, unknown> | null;
}

async function history(baseUrl: string, credential: Credential, id: string): Promise<RestEvent[]> {
  const res = await fetch(`${baseUrl}/api/execution/history?id=${encodeURIComponent(id)}`, { headers: authHeaders(baseUrl, credential) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: RestEvent[] }).events;
}

async function waitForEvent(baseUrl: string, credential: Credential, id: string, type: string): Promise<RestEvent[]> {
  for (let i = 0; i < 600; i++) {
    const events = await history(baseUrl, credential, id);
    if (events.some((e) => e.type === type)) return events;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no ${type} event on ${id}`);
}

const BASE_MS = 20;
const CAP_MS = 100;
/** A stage's history up to its third try: the first started, then two retries, each against the attempt that failed. */
const TWO_RETRIES = [
  ["stage_started", 1],
  ["stage_retrying", 1],
  ["stage_retrying", 2],
];

describe("transient stage errors are retried in place", () => {
  let app: TestApp;
  let account: TestAccount;
  const work = new ScriptedWork();
  const cred = () => ({ apiKey: account.apiKey });
  beforeAll(async () => {
    app = await startTestApp({
      stageWork: work.resolver,
      env: { ZERO_STAGE_MAX_ATTEMPTS: "3", ZERO_STAGE_RETRY_BASE_MS: String(BASE_MS), ZERO_STAGE_RETRY_CAP_MS: String(CAP_MS) },
    });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  it("a stage failing transiently twice, then succeeding, ends succeeded at attempt 3 with two retries recorded", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery transient2@outline" });
    const planId = created.body.plan.id;
    const plan = await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    const outline = plan.stages.find((s) => s.id === "outline")!;
    expect(outline).toMatchObject({ state: "succeeded", attempts: 3, error: null });
    expect(work.runs(planId, "outline")).toBe(3);

    const events = (await history(app.url, cred(), planId)).filter((e) => e.stage === "outline");
    expect(events.map((e) => [e.type, e.attempt])).toEqual([...TWO_RETRIES, ["stage_succeeded", 3]]);
    for (const [i, event] of events.slice(1, 3).entries()) {
      const detail = event.detail as { error: { type: string; message: string }; waitMs: number };
      expect(detail.error).toEqual({ type: "upstream_timeout", message: `the model did not answer in time (attempt ${i + 1})` });
      // Full jitter: anywhere from 0 up to base · 2^(attempt-1), never past the cap.
      expect(detail.waitMs).toBeGreaterThanOrEqual(0);
      expect(detail.waitMs).toBeLessThanOrEqual(Math.min(CAP_MS, BASE_MS * 2 ** i));
    }
  });

  it("a stage failing transiently on every try fails after the last one, resumable; a resume gets its own tries", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery transient4@outline" });
    const planId = created.body.plan.id;
    const plan = await waitForPlan(app.url, cred(), planId, (p) => p.status === "failed");
    expect(plan.resumable).toBe(true);
    expect(plan.stages.find((s) => s.id === "outline")).toMatchObject({
      state: "failed",
      attempts: 3,
      error: { type: "upstream_timeout", message: "the model did not answer in time (attempt 3)" },
    });
    expect(work.runs(planId, "outline")).toBe(3);
    const events = (await history(app.url, cred(), planId)).filter((e) => e.stage === "outline");
    expect(events.map((e) => [e.type, e.attempt])).toEqual([...TWO_RETRIES, ["stage_failed", 3]]);

    // A resume runs it again as before (attempt 4), and a transient failure of that run is retried too: attempt 5 succeeds.
    await postExecution(app.url, cred(), { planId });
    const resumed = await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    expect(resumed.stages.find((s) => s.id === "outline")).toMatchObject({ state: "succeeded", attempts: 5 });
    const after = (await history(app.url, cred(), planId)).filter((e) => e.stage === "outline").slice(4);
    expect(after.map((e) => [e.type, e.attempt])).toEqual([
      ["stage_started", 4],
      ["stage_retrying", 4],
      ["stage_succeeded", 5],
    ]);
  });

  it("a failure that is not transient fails the stage at once", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery fail@outline" });
    const planId = created.body.plan.id;
    const plan = await waitForPlan(app.url, cred(), planId, (p) => p.status === "failed");
    expect(plan.stages.find((s) => s.id === "outline")).toMatchObject({ state: "failed", attempts: 1, error: { type: "writer_error" } });
    expect(work.runs(planId, "outline")).toBe(1);
    const events = await history(app.url, cred(), planId);
    expect(events.some((e) => e.type === "stage_retrying")).toBe(false);
  });

  it("metrics tell a try that is retried from a stage that failed, and the log has one line for each failed stage", async () => {
    const runs = async (result: string) => {
      const text = await (await fetch(`${app.url}/metrics`)).text();
      return Number(new RegExp(`zero_stage_runs_total\\{outcome="website",stage="outline",result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const before = { retrying: await runs("retrying"), failed: await runs("failed") };
    const retried = (await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery transient2@outline" })).body.plan.id;
    await waitForPlan(app.url, cred(), retried, (p) => p.status === "awaiting_approval");
    const failed = (await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery fail@outline" })).body.plan.id;
    await waitForPlan(app.url, cred(), failed, (p) => p.status === "failed");
    expect({ retrying: (await runs("retrying")) - before.retrying, failed: (await runs("failed")) - before.failed }).toEqual({ retrying: 2, failed: 1 });

    const lines = app.logs.map((line) => JSON.parse(line) as { msg: string; planId?: string; stage?: string; error?: { type: string } });
    expect(lines.filter((l) => l.msg === "stage failed" && l.planId === failed)).toEqual([
      expect.objectContaining({ stage: "outline", error: expect.objectContaining({ type: "writer_error" }) }),
    ]);
    expect(lines.filter((l) => l.msg === "stage failed" && l.planId === retried)).toEqual([]);
    expect(lines.filter((l) => l.msg === "stage try failed; it is tried again" && l.planId === retried)).toHaveLength(2);
  });
});

describe("the wait before a retry", () => {
  it("ends at once on a cancel: the stage never runs again", async () => {
    const work = new ScriptedWork();
    // The jitter pinned at its top: the wait is the whole minute, so the cancel lands in it.
    const app = await startTestApp({
      stageWork: work.resolver,
      retryJitter: () => 0.999,
      env: { ZERO_STAGE_RETRY_BASE_MS: "60000", ZERO_STAGE_RETRY_CAP_MS: "60000" },
    });
    try {
      const account = await createAccountWithKey(app, ["build", "read"]);
      const cred = { apiKey: account.apiKey };
      const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: "A site for my bakery transient1@outline" });
      const planId = created.body.plan.id;
      const before = await waitForEvent(app.url, cred, planId, "stage_retrying");
      expect((before.at(-1)!.detail as { waitMs: number }).waitMs).toBeGreaterThan(50_000);
      const waiting = await waitForPlan(app.url, cred, planId, () => true);
      expect(waiting.status).toBe("running");
      expect(waiting.stages.find((s) => s.id === "outline")).toMatchObject({ state: "running", attempts: 2 });

      const cancelled = await postExecution<{ plan: RestPlan }>(app.url, cred, { planId, cancel: true });
      expect(cancelled.status).toBe(202);
      expect(cancelled.body.plan.status).toBe("cancelled");
      expect(cancelled.body.plan.stages.find((s) => s.id === "outline")).toMatchObject({ state: "cancelled", attempts: 2 });

      const events = await history(app.url, cred, planId);
      const retrying = events.findIndex((e) => e.type === "stage_retrying");
      expect(events.slice(retrying + 1).map((e) => e.type)).toEqual(["cancelled"]);
      expect(work.runs(planId, "outline")).toBe(1);
    } finally {
      await app.close();
    }
  });

  it("survives a restart: the next instance on the same database runs the retry once the wait is over", async () => {
    const first = new ScriptedWork();
    const second = new ScriptedWork();
    // Long enough that the first instance is gone before the retry is due.
    const env = { ZERO_STAGE_RETRY_BASE_MS: "3000", ZERO_STAGE_RETRY_CAP_MS: "3000" };
    const app1 = await startTestApp({ stageWork: first.resolver, retryJitter: () => 0.999, env, keepDataDir: true });
    const dataDir = app1.dataDir;
    let app1Closed = false;
    let app2: TestApp | undefined;
    try {
      const account = await createAccountWithKey(app1, ["build", "read"]);
      const cred = { apiKey: account.apiKey };
      const created = await postExecution<{ plan: RestPlan }>(app1.url, cred, { goal: "A site for my bakery transient1@outline" });
      const planId = created.body.plan.id;
      await waitForEvent(app1.url, cred, planId, "stage_retrying");
      await app1.close();
      app1Closed = true;

      app2 = await startTestApp({ stageWork: second.resolver, env, dataDir, databaseUrl: app1.databaseUrl });
      const plan = await waitForPlan(app2.url, cred, planId, (p) => p.status === "awaiting_approval");
      expect(plan.stages.find((s) => s.id === "outline")).toMatchObject({ state: "succeeded", attempts: 2 });
      expect(first.runs(planId, "outline")).toBe(1);
      expect(second.runs(planId, "outline")).toBe(1);
      const events = (await history(app2.url, cred, planId)).filter((e) => e.stage === "outline");
      expect(events.map((e) => [e.type, e.attempt])).toEqual([
        ["stage_started", 1],
        ["stage_retrying", 1],
        ["stage_succeeded", 2],
      ]);
    } finally {
      if (!app1Closed) await app1.close();
      await app2?.close();
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });
});

// The stage's own database work (an artifact write, say) meets a Postgres restart: the connection is
// cut under it, for real. That is an outage, so the stage is tried again, not failed for good.
describe.runIf(onRealPostgres)("a stage whose work loses the database", () => {
  let app: TestApp;
  let account: TestAccount;
  let databaseUrl: string;
  const cutOnce = new Set<string>();
  const work: StageWorkResolver = (_outcome, stageId) => async (input) => {
    if (stageId === "outline" && !cutOnce.has(input.planId)) {
      cutOnce.add(input.planId);
      const client = new pg.Client({ connectionString: databaseUrl });
      client.on("error", () => {});
      await client.connect();
      const { rows } = await client.query<{ pid: number }>("select pg_backend_pid() as pid");
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      await admin.query("select pg_terminate_backend($1)", [rows[0]!.pid]);
      await admin.end();
      await client.query("select 1");
    }
    return typicalOutcome(input);
  };
  beforeAll(async () => {
    databaseUrl = (await createTestDatabase())!;
    app = await startTestApp({
      databaseUrl,
      stageWork: work,
      env: { ZERO_STAGE_MAX_ATTEMPTS: "3", ZERO_STAGE_RETRY_BASE_MS: String(BASE_MS), ZERO_STAGE_RETRY_CAP_MS: String(CAP_MS) },
    });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  it("is retried as unavailable and goes on, instead of failing the plan", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal: "A site for my bakery" });
    const planId = created.body.plan.id;
    const plan = await waitForPlan(app.url, { apiKey: account.apiKey }, planId, (p) => p.status !== "running");
    expect(plan.status).toBe("awaiting_approval");
    expect(plan.stages.find((s) => s.id === "outline")).toMatchObject({ state: "succeeded", attempts: 2 });
    const retried = (await history(app.url, { apiKey: account.apiKey }, planId)).find((e) => e.type === "stage_retrying");
    expect(retried).toMatchObject({ stage: "outline", attempt: 1, detail: { error: { type: "unavailable" } } });
    expect(app.logs.some((line) => line.includes("stage work lost the database; it is tried again"))).toBe(true);
  });
});
