import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore } from "../../src/server/idempotency.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { restApi, rpcApi } from "../support/execution-api.js";
import { authHeaders, type Credential } from "../support/executions.js";
import { ScriptedWork } from "../support/stage-work.js";

// Every transport reads the same `Idempotency-Key` (REST header, RPC metadata) in one service function.
const TRANSPORTS = [
  { name: "REST", make: (url: string) => restApi(url) },
  { name: "Connect RPC", make: (url: string) => rpcApi(url, "connect") },
  { name: "gRPC", make: (url: string) => rpcApi(url, "grpc") },
];

const work = new ScriptedWork();
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ stageWork: work.resolver });
});
afterAll(() => app?.close());

const credentialOf = (account: TestAccount): Credential => ({ apiKey: account.apiKey });
const remaining = (headers: Headers) => Number(headers.get("ratelimit-remaining"));

describe.each(TRANSPORTS)("idempotent creates over $name", ({ make }) => {
  it("replays the first 202 with the same plan for the same key and body, spending nothing; another body is 422", async () => {
    const api = make(app.url);
    const account = await createAccountWithKey(app, ["build", "read"]);
    const credential = credentialOf(account);
    const body = { goal: "A website for a bicycle repair shop in Ghent" };
    const headers = { "idempotency-key": "create-1" };

    const first = await api.create(credential, body, headers);
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await api.create(credential, body, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.plan!.id).toBe(first.plan!.id);
    expect(again.plan!.goal).toBe(body.goal);
    expect(again.unavailable).toEqual(first.unavailable);
    expect(remaining(again.headers)).toBe(remaining(first.headers));

    const other = await api.create(credential, { goal: "A website for a flower shop in Ghent" }, headers);
    expect(other.status).toBe(422);
    expect(other.errorType).toBe("idempotency_key_reused");

    // Another account's same key is its own: a new plan.
    const stranger = await api.create(credentialOf(await createAccountWithKey(app, ["build", "read"])), body, headers);
    expect(stranger.status).toBe(202);
    expect(stranger.plan!.id).not.toBe(first.plan!.id);

    const listed = await api.list(credential);
    expect(listed.plans!.map((p) => p.id)).toEqual([first.plan!.id]);
  });

  it("answers 409 while the first request with the key is still in flight, and refuses a malformed key", async () => {
    const api = make(app.url);
    const account = await createAccountWithKey(app, ["build", "read"]);
    const body = { goal: "A website for a pottery studio in Porto" };
    // Another instance is serving this key right now.
    const claim = await new IdempotencyStore(app.store.db).begin(
      account.accountId,
      "busy",
      IdempotencyStore.hash({ createExecution: { goal: body.goal, outcome: "" } }),
    );
    expect(claim.kind).toBe("claimed");
    const busy = await api.create(credentialOf(account), body, { "idempotency-key": "busy" });
    expect(busy.status).toBe(409);
    expect(busy.errorType).toBe("idempotency_key_in_progress");
    const bad = await api.create(credentialOf(account), body, { "idempotency-key": "ü" });
    expect(bad.status).toBe(400);
    expect(bad.errorType).toBe("invalid_request");
    expect((await api.list(credentialOf(account))).plans).toEqual([]);
  });

  it("answers 409 conflict, not 404, when the plan the key created has been deleted since", async () => {
    const api = make(app.url);
    const credential = credentialOf(await createAccountWithKey(app, ["build", "read"]));
    const body = { goal: "A website for a replay bakery in Bruges" };
    const headers = { "idempotency-key": "create-then-delete" };
    const first = await api.create(credential, body, headers);
    expect(first.status).toBe(202);
    const planId = first.plan!.id;
    const deleted = await fetch(`${app.url}/api/execution?id=${planId}`, { method: "DELETE", headers: authHeaders(app.url, credential) });
    expect(deleted.status).toBe(204);

    const again = await api.create(credential, body, headers);
    expect(again.status).toBe(409);
    expect(again.errorType).toBe("conflict");
    expect(again.errorMessage).toContain(`the plan this Idempotency-Key created (${planId}) was deleted`);
    // Nothing was started in its place.
    expect((await api.list(credential)).plans).toEqual([]);
  });
});

describe("concurrent creates with one key", () => {
  it("start exactly one plan and spend one unit, whichever transports carry them", async () => {
    const account = await createAccountWithKey(app, ["build", "read"]);
    const credential = credentialOf(account);
    const apis = TRANSPORTS.map((t) => t.make(app.url));
    const before = await apis[0]!.create(credential, { goal: "A website for a tea room in York" });
    expect(before.status).toBe(202);

    const body = { goal: "A website for a climbing gym in Leeds" };
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => apis[i % apis.length]!.create(credential, body, { "idempotency-key": "retry-storm" })),
    );
    for (const answer of answers) expect([202, 409]).toContain(answer.status);
    const accepted = answers.filter((a) => a.status === 202);
    expect(accepted.length).toBeGreaterThan(0);
    expect(new Set(accepted.map((a) => a.plan!.id)).size).toBe(1);
    for (const refused of answers.filter((a) => a.status === 409)) expect(refused.errorType).toBe("idempotency_key_in_progress");

    const listed = await apis[0]!.list(credential);
    expect(listed.plans!.filter((p) => p.goal === body.goal)).toHaveLength(1);
    // One unit for the tea room, one for the climbing gym: a replay afterwards shows the count.
    const replay = await apis[0]!.create(credential, body, { "idempotency-key": "retry-storm" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(remaining(replay.headers)).toBe(remaining(before.headers) - 1);
  });
});
