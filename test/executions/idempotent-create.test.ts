import { Code } from "@connectrpc/connect";
import { sql } from "kysely";
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
    // Over RPC, a conflict worth retrying (Connect's mapping of 409 alone would allow AlreadyExists, which is not).
    if (busy.rpcCode !== undefined) expect(busy.rpcCode).toBe(Code.Aborted);
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

// Found by a chaos test: an instance killed after its create committed, before it recorded what the key made, left
// the key in flight; a retry took it over once its lease ran out, and made a second plan.
describe("a create whose instance failed after the plan was written", () => {
  it("is replayed with that plan, not made again", async () => {
    const account = await createAccountWithKey(app, ["build", "read"]);
    const credential = credentialOf(account);
    const api = restApi(app.url);
    const body = { goal: "A website for a ferry café in Hull" };
    const headers = { "idempotency-key": "lost-answer" };
    // Every write of the key's result fails but one made by the statement that writes the plan: as when the instance
    // dies, or loses the database, between that statement and its own record of the key.
    await sql`create function zero_test_lost_answer() returns trigger language plpgsql as $$
      begin
        if new.state = 'done' and current_query() not ilike '%insert into plans%' then raise exception 'the instance is gone'; end if;
        return new;
      end $$`.execute(app.store.db);
    await sql`create trigger zero_test_lost_answer before update on chat_idempotency_keys for each row execute function zero_test_lost_answer()`.execute(
      app.store.db,
    );
    let lost: Awaited<ReturnType<typeof api.create>>;
    try {
      lost = await api.create(credential, body, headers);
    } finally {
      await sql`drop trigger zero_test_lost_answer on chat_idempotency_keys`.execute(app.store.db);
    }
    expect(lost.status).toBeGreaterThanOrEqual(500);
    // Its lease over, as after the instance's death.
    await app.store.db
      .updateTable("chat_idempotency_keys")
      .set({ lease_until: new Date(Date.now() - 1000) })
      .where("account_id", "=", account.accountId)
      .execute();
    const retried = await api.create(credential, body, headers);
    expect(retried.status).toBe(202);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.list(credential)).plans!.filter((p) => p.goal === body.goal)).toHaveLength(1);
  });
});
