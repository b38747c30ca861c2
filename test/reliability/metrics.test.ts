import http2 from "node:http2";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeUpstream, hang } from "../chat/support/fake-upstream.js";
import { openAiClient, upstreamsEnv } from "../chat/support/gateway.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { instantWork } from "../support/stage-work.js";

/** What an operator's Prometheus sees after real traffic: stages, queue, leases, pool and upstreams. */
describe("operational metrics", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startTestApp({
      stageWork: instantWork(),
      env: { ZERO_UPSTREAMS: upstreamsEnv([upstream.url]), ZERO_FREE_POOL_DAILY_REQUESTS: "50" },
    });
    account = await createAccountWithKey(app, ["read", "build", "chat"]);
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  const scrape = async () => (await fetch(`${app.url}/metrics`)).text();
  const value = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);

  it("counts stage runs by outcome, stage and result, and reports the queue and leases", async () => {
    const created = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ goal: "A website for a bicycle repair cafe" }),
    });
    const { plan } = (await created.json()) as { plan: { id: string } };
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${app.url}/api/execution?id=${plan.id}`, { headers: { authorization: `Bearer ${account.apiKey}` } });
      if (((await res.json()) as { plan: { status: string } }).plan.status === "awaiting_approval") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const text = await scrape();
    for (const stage of ["understand", "outline", "write", "build"]) {
      expect(value(text, new RegExp(`zero_stage_runs_total\\{outcome="website",stage="${stage}",result="succeeded"\\} (\\d+)`))).toBeGreaterThanOrEqual(1);
    }
    expect(text).toMatch(/zero_stage_duration_seconds_count\{outcome="website",stage="understand",result="succeeded"\} \d+/);
    expect(value(text, /zero_stage_queue_depth (\d+)/)).toBe(0);
    expect(value(text, /zero_stage_leases_running (\d+)/)).toBe(0);
  });

  it("counts in the queue only stages a worker may take now, not one waiting out a retry's backoff", async () => {
    const plan = await app.store.db.selectFrom("plans").select("id").executeTakeFirstOrThrow();
    const last = await app.store.db.selectFrom("plan_stages").selectAll().where("plan_id", "=", plan.id).orderBy("position", "desc").executeTakeFirstOrThrow();
    // As a stage retried after a transient error waits: running, no lease, ready an hour from now.
    await app.store.db
      .updateTable("plan_stages")
      .set({ state: "running", lease_token: null, ready_at: sql`now() + interval '1 hour'` })
      .where("plan_id", "=", plan.id)
      .where("position", "=", last.position)
      .execute();
    try {
      expect(value(await scrape(), /zero_stage_queue_depth (\d+)/)).toBe(0);
    } finally {
      await app.store.db
        .updateTable("plan_stages")
        .set({ state: last.state, ready_at: last.ready_at })
        .where("plan_id", "=", plan.id)
        .where("position", "=", last.position)
        .execute();
    }
  });

  it("reports pool units and upstream latency by upstream name, which clients never see", async () => {
    const completion = await openAiClient(app, account.apiKey).chat.completions.create({
      model: "project-zero",
      messages: [{ role: "user", content: "Hello" }],
    });
    expect(JSON.stringify(completion)).not.toContain("SecretCo");
    const text = await scrape();
    const used = value(text, /zero_free_pool_units_used (\d+)/);
    const left = value(text, /zero_free_pool_units_left (\d+)/);
    expect(used).toBeGreaterThanOrEqual(1);
    expect(used + left).toBe(50);
    expect(value(text, /zero_upstream_request_duration_seconds_count\{upstream="SecretCo-0",result="200"\} (\d+)/)).toBeGreaterThanOrEqual(1);
  });

  it("reports group-committed writes by writer: statements, their time and the writes they carried", async () => {
    // The first test created a plan and ran it to the gate; a stored response adds the third writer.
    const response = await openAiClient(app, account.apiKey).responses.create({ model: "project-zero", input: "Hello" });
    expect(response.status).toBe("completed");
    const text = await scrape();
    for (const writer of ["plans", "stage_results", "responses"]) {
      const statements = value(text, new RegExp(`zero_db_group_commit_duration_seconds_count\\{writer="${writer}"\\} (\\d+)`));
      const rows = value(text, new RegExp(`zero_db_group_commit_rows_total\\{writer="${writer}"\\} (\\d+)`));
      expect(statements, writer).toBeGreaterThanOrEqual(1);
      expect(rows, writer).toBeGreaterThanOrEqual(statements);
    }
  });

  it("counts a request whose client left before any answer as aborted, not as the 200 it never got", async () => {
    upstream.next(hang());
    const leaving = new AbortController();
    const request = fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "wait" }] }),
      signal: leaving.signal,
    }).catch(() => undefined);
    const sent = upstream.requests.length;
    for (let i = 0; i < 100 && upstream.requests.length === sent; i++) await new Promise((r) => setTimeout(r, 10));
    const before = await scrape();
    const count = (text: string, code: string) =>
      value(text, new RegExp(`zero_http_requests_total\\{route="/v1/chat/completions",method="POST",code="${code}"\\} (\\d+)`)) || 0;
    leaving.abort();
    await request;
    let after = before;
    for (let i = 0; i < 50 && count(after, "aborted") === count(before, "aborted"); i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = await scrape();
    }
    expect(count(after, "aborted")).toBe(count(before, "aborted") + 1);
    expect(count(after, "200")).toBe(count(before, "200"));
  });

  it("labels a method it does not know as `other`: made-up HTTP/2 methods add no series", async () => {
    const before = await scrape();
    // HTTP/1.1's parser refuses unknown methods; HTTP/2 takes any token as `:method`.
    const session = http2.connect(app.url);
    try {
      await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) =>
            new Promise<void>((resolve, reject) => {
              const stream = session.request({ ":method": `MADEUP${i}`, ":path": "/api/execution" });
              stream.on("response", () => stream.resume());
              stream.on("end", resolve).on("error", reject);
              stream.end();
            }),
        ),
      );
    } finally {
      session.close();
    }
    const after = await scrape();
    expect(after).not.toMatch(/method="MADEUP/);
    const series = (text: string) => text.split("\n").filter((line) => line.startsWith("zero_http_requests_total{")).length;
    // At most one new series: `other` on that route with the answer's status.
    expect(series(after) - series(before)).toBeLessThanOrEqual(1);
    expect(after).toMatch(/zero_http_requests_total\{route="[^"]*",method="other",code="\d+"\} (\d+)/);
  });
});
