import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import type { StageInput, StageOutcome, StageWorkResolver } from "../../src/engine/stage-work.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, getExecution, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { ScriptedWork, typicalOutcome } from "../support/stage-work.js";

interface RestEvent {
  type: string;
  stage: string | null;
  detail: Record<string, unknown> | null;
}

async function historyOf(baseUrl: string, credential: Credential, id: string): Promise<{ status: number; events: RestEvent[] }> {
  const res = await fetch(`${baseUrl}/api/execution/history?id=${encodeURIComponent(id)}`, { headers: authHeaders(baseUrl, credential) });
  const body = (await res.json()) as { events?: RestEvent[] };
  return { status: res.status, events: body.events ?? [] };
}

/**
 * Stage work for the `ignore@<stage>` goals: it does not listen to its
 * signal and finishes only when the test says so, like a writer that is
 * deaf to aborts; what it returns after a cancel must not be kept.
 */
class DeafWork {
  readonly #finish = new Map<string, (outcome: StageOutcome) => void>();
  readonly #started = new Map<string, (input: StageInput) => void>();
  readonly #inputs = new Map<string, StageInput>();

  wrap(inner: StageWorkResolver): StageWorkResolver {
    return (outcome, stageId) => async (input) => {
      if (!input.goal.split(/\s+/).includes(`ignore@${stageId}`)) return inner(outcome, stageId)(input);
      return new Promise<StageOutcome>((resolve) => {
        this.#finish.set(input.planId, resolve);
        this.#inputs.set(input.planId, input);
        this.#started.get(input.planId)?.(input);
      });
    };
  }

  started(planId: string): Promise<StageInput> {
    const input = this.#inputs.get(planId);
    if (input) return Promise.resolve(input);
    return new Promise((resolve) => this.#started.set(planId, resolve));
  }

  finish(planId: string): void {
    const input = this.#inputs.get(planId)!;
    this.#finish.get(planId)?.(typicalOutcome(input));
  }
}

describe("cancelling a plan: POST /api/execution {planId, cancel: true} and CancelExecution", () => {
  let app: TestApp;
  let account: TestAccount;
  let other: TestAccount;
  const work = new ScriptedWork();
  const deaf = new DeafWork();
  beforeAll(async () => {
    app = await startTestApp({ stageWork: deaf.wrap(work.resolver) });
    [account, other] = await Promise.all([createAccountWithKey(app, ["build", "read"]), createAccountWithKey(app, ["build", "read"])]);
  });
  afterAll(() => app.close());
  const cred = () => ({ apiKey: account.apiKey });
  const create = async (goal: string) => (await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal })).body.plan.id;

  it("answers 202 with the plan cancelled, stops the running stage through its signal, and records one event", async () => {
    const planId = await create("A site for my bakery hold@write");
    const held = await work.held(planId, "write");
    const answer = await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId, cancel: true });
    expect(answer.status).toBe(202);
    const plan = answer.body.plan;
    expect(plan.status).toBe("cancelled");
    expect(plan.resumable).toBe(false);
    expect(plan.stages.map((s) => [s.id, s.state])).toEqual([
      ["understand", "succeeded"],
      ["outline", "succeeded"],
      ["write", "cancelled"],
      ["build", "cancelled"],
      ["review", "cancelled"],
      ["publish", "cancelled"],
    ]);
    // The engine running `write` learns of it (notification, else its next heartbeat) and aborts the work.
    await new Promise<void>((resolve) => {
      if (held.input.signal.aborted) resolve();
      else held.input.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    const { events } = await historyOf(app.url, cred(), planId);
    expect(events.at(-1)).toMatchObject({ type: "cancelled", stage: null, detail: { from: "running" } });
    expect(events.filter((e) => e.type === "cancelled")).toHaveLength(1);

    // Again: 202 with the plan as it is, no second event.
    const again = await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId, cancel: true });
    expect(again.status).toBe(202);
    expect(again.body.plan).toEqual(plan);
    expect((await historyOf(app.url, cred(), planId)).events).toEqual(events);
    // A resume does not bring it back.
    const resumed = await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId });
    expect(resumed.body.plan.status).toBe("cancelled");
    expect(work.runs(planId, "write")).toBe(1);
  });

  it("keeps nothing a stage deaf to its signal still returns after the cancel", async () => {
    const planId = await create("A site for my bakery ignore@outline");
    await deaf.started(planId);
    const cancelled = (await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId, cancel: true })).body.plan;
    deaf.finish(planId);
    // Let the engine try to write; then a plan that comes to the gate shows the engine did nothing more.
    const control = await create("A site for a control plan");
    await waitForPlan(app.url, cred(), control, (p) => p.status === "awaiting_approval");
    const after = (await getExecution<{ plan: RestPlan }>(app.url, cred(), planId)).body.plan;
    expect(after).toEqual(cancelled);
    expect(work.runs(planId, "write")).toBe(0);
  });

  it("cancels a plan waiting at the gate", async () => {
    const planId = await create("A site for my florist");
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    const { status, body } = await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId, cancel: true });
    expect(status).toBe(202);
    expect(body.plan.status).toBe("cancelled");
    expect(body.plan.stages.find((s) => s.id === "review")?.state).toBe("cancelled");
    expect(body.plan.stages.find((s) => s.id === "build")?.state).toBe("succeeded");
    const { events } = await historyOf(app.url, cred(), planId);
    expect(events.at(-1)).toMatchObject({ type: "cancelled", detail: { from: "awaiting_approval" } });
  });

  it("refuses a succeeded plan (409), another account's (404 like a missing one) and cancel with approve or feedback (400)", async () => {
    const planId = await create("A site for my cheese shop");
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    await postExecution(app.url, cred(), { planId, approve: ["review"] });
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "succeeded");
    const done = await postExecution<{ error: { type: string } }>(app.url, cred(), { planId, cancel: true });
    expect(done.status).toBe(409);
    expect(done.body.error.type).toBe("conflict");

    const running = await create("A site for my bike shop hold@understand");
    const theirs = await postExecution(app.url, { apiKey: other.apiKey }, { planId: running, cancel: true });
    const missing = await postExecution(app.url, cred(), { planId: "pln_missing", cancel: true });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(missing.body);
    for (const extra of [{ approve: ["review"] }, { feedback: "make it blue" }, { cancel: "yes" }]) {
      const mixed = await postExecution<{ error: { type: string } }>(app.url, cred(), { planId: running, cancel: true, ...extra });
      expect(mixed.status).toBe(400);
      expect(mixed.body.error.type).toBe("invalid_request");
    }
    expect((await getExecution<{ plan: RestPlan }>(app.url, cred(), running)).body.plan.status).toBe("running");
    // `cancel: false` is an ordinary resume.
    expect((await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId: running, cancel: false })).body.plan.status).toBe("running");
    expect((await postExecution(app.url, undefined, { planId: running, cancel: true })).status).toBe(401);
  });

  for (const [name, transport] of [
    ["Connect", (url: string) => createConnectTransport({ baseUrl: url, httpVersion: "1.1" })],
    ["gRPC", (url: string) => createGrpcTransport({ baseUrl: url })],
    ["gRPC-Web", (url: string) => createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" })],
  ] as const) {
    it(`answers CancelExecution over ${name}, and WatchExecution ends at cancelled`, async () => {
      const client = createClient(ExecutionService, transport(app.url));
      const headers = { authorization: `Bearer ${account.apiKey}` };
      const planId = await create("A site for my tea room hold@outline");
      await work.held(planId, "outline");
      const seen: string[] = [];
      const watching = (async () => {
        for await (const { plan } of client.watchExecution({ id: planId }, { headers })) seen.push(plan!.status);
      })();
      const { plan } = await client.cancelExecution({ id: planId }, { headers });
      expect(plan?.status).toBe("cancelled");
      expect(plan?.stages.find((s) => s.id === "outline")?.state).toBe("cancelled");
      await watching;
      expect(seen.at(-1)).toBe("cancelled");

      const error = await client.cancelExecution({ id: "pln_missing" }, { headers }).catch((e: unknown) => e);
      expect(ConnectError.from(error).code).toBe(Code.NotFound);
    });
  }
});
