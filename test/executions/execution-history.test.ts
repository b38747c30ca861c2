import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { ScriptedWork } from "../support/stage-work.js";

interface RestEvent {
  at: string;
  type: string;
  stage: string | null;
  attempt: number | null;
  detail: Record<string, unknown> | null;
}

async function getHistory(baseUrl: string, credential: Credential, id: string): Promise<{ status: number; body: { events: RestEvent[] } }> {
  const res = await fetch(`${baseUrl}/api/execution/history?id=${encodeURIComponent(id)}`, { headers: authHeaders(baseUrl, credential) });
  return { status: res.status, body: (await res.json()) as { events: RestEvent[] } };
}

describe("GET /api/execution/history and GetExecutionHistory", () => {
  let app: TestApp;
  let account: TestAccount;
  let other: TestAccount;
  beforeAll(async () => {
    app = await startTestApp({ stageWork: new ScriptedWork().resolver });
    [account, other] = await Promise.all([createAccountWithKey(app, ["build", "read"]), createAccountWithKey(app, ["build", "read"])]);
  });
  afterAll(() => app.close());
  const cred = () => ({ apiKey: account.apiKey });

  it("records every change of a plan, oldest first, from creation through the gate to success", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery" });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    await postExecution(app.url, cred(), { planId, approve: ["review"] });
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "succeeded");

    const { status, body } = await getHistory(app.url, cred(), planId);
    expect(status).toBe(200);
    expect(body.events.map((e) => [e.type, e.stage, e.attempt])).toEqual([
      ["created", null, null],
      ["stage_started", "understand", 1],
      ["stage_succeeded", "understand", 1],
      ["stage_started", "outline", 1],
      ["stage_succeeded", "outline", 1],
      ["stage_started", "write", 1],
      ["stage_succeeded", "write", 1],
      ["stage_started", "build", 1],
      ["stage_succeeded", "build", 1],
      ["awaiting_approval", "review", 1],
      ["approved", "review", 1],
      ["stage_started", "publish", 1],
      ["stage_succeeded", "publish", 1],
    ]);
    const times = body.events.map((e) => Date.parse(e.at));
    expect(times.every((t, i) => Number.isFinite(t) && (i === 0 || t >= times[i - 1]!))).toBe(true);
    expect(body.events.every((e) => e.detail === null)).toBe(true);
  });

  it("records a failed stage with its error, and the resume that runs it again", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery fail@outline" });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "failed");
    await postExecution(app.url, cred(), { planId });
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");

    const { body } = await getHistory(app.url, cred(), planId);
    expect(body.events.slice(3, 7).map((e) => [e.type, e.stage, e.attempt])).toEqual([
      ["stage_started", "outline", 1],
      ["stage_failed", "outline", 1],
      ["resumed", null, null],
      ["stage_started", "outline", 2],
    ]);
    expect(body.events[4]!.detail).toEqual({ error: { type: "writer_error", message: "the writer could not finish the outline stage" } });
  });

  it("answers the same events over Connect RPC", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my florist" });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    const client = createClient(ExecutionService, createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }));
    const answer = await client.getExecutionHistory({ id: planId }, { headers: { authorization: `Bearer ${account.apiKey}` } });
    const rest = await getHistory(app.url, cred(), planId);
    expect(answer.events.map((e) => [e.type, e.stage ?? null, e.attempt ?? null])).toEqual(rest.body.events.map((e) => [e.type, e.stage, e.attempt]));
    expect(answer.events.at(-1)?.type).toBe("awaiting_approval");
  });

  it("answers 404 for a missing plan and for another account's, alike; 400 without an id", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my cheese shop" });
    const theirs = await getHistory(app.url, { apiKey: other.apiKey }, created.body.plan.id);
    const missing = await getHistory(app.url, cred(), "pln_missing");
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(theirs.body).toEqual(missing.body);
    const res = await fetch(`${app.url}/api/execution/history`, { headers: authHeaders(app.url, cred()) });
    expect(res.status).toBe(400);
  });

  it("asks for credentials", async () => {
    expect((await getHistory(app.url, undefined, "pln_missing")).status).toBe(401);
  });
});
