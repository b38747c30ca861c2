import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { createHandlerContext } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleService, RevokeApiKeyRequestSchema } from "../../gen/zero/v1/console_pb.js";
import { listApiKeys } from "../../src/auth/accounts.js";
import { SCOPES } from "../../src/api/scopes.js";
import { accountService } from "../../src/auth/account-service.js";
import { principalKey } from "../../src/server/context.js";
import { consoleClient, createAccountWithKey, sessionHeaders, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { FakeUpstream } from "../chat/support/fake-upstream.js";
import { postChat, startGateway } from "../chat/support/gateway.js";

/** `GET /api/execution` (ListExecutions, scope `read`) with the key: the REST status. */
async function restStatus(app: { url: string }, apiKey: string): Promise<number> {
  const response = await fetch(`${app.url}/api/execution`, { headers: { authorization: `Bearer ${apiKey}` } });
  await response.arrayBuffer();
  return response.status;
}

/** ExecutionService.ListExecutions over Connect with the key: the HTTP status. */
async function rpcStatus(app: { url: string }, apiKey: string): Promise<number> {
  const response = await fetch(`${app.url}/zero.v1.ExecutionService/ListExecutions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: "{}",
  });
  await response.arrayBuffer();
  return response.status;
}

async function chatStatus(app: { url: string }, apiKey: string): Promise<number> {
  const response = await postChat(app, apiKey, { model: "project-zero", messages: [{ role: "user", content: "hi" }] });
  await response.arrayBuffer();
  return response.status;
}

/** Revokes the account's only key through the Console RPC, as a person would. */
async function revokeThroughConsole(app: { url: string }, account: TestAccount): Promise<string> {
  const console = consoleClient(app.url);
  const headers = sessionHeaders(app.url, account.cookie);
  const { apiKeys } = await console.listApiKeys({}, { headers });
  const keyId = apiKeys[0]!.id;
  await console.revokeApiKey({ id: keyId }, { headers });
  return keyId;
}

/** Waits until both instances' LISTEN connections are back after a test cut them. */
async function listenersBack(databaseUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    const count = async () =>
      (await admin.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and query like 'LISTEN %'`))
        .rows[0]!.n;
    expect(await eventually(async () => (await count()) >= 2, true, 5000)).toBe(true);
  } finally {
    await admin.end();
  }
}

/** Polls until `check` answers `expected` or `withinMs` has passed; the last answer. */
async function eventually<T>(check: () => Promise<T>, expected: T, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const answer = await check();
    if (answer === expected || Date.now() > deadline) return answer;
    await sleep(25);
  }
}

describe("a revoked key on the instance that revoked it", () => {
  let upstream: FakeUpstream;
  let app: TestApp;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
  });

  afterAll(async () => {
    await app?.close();
    await upstream?.close();
  });

  it("is refused from the very next request on REST, RPC and chat, although it was in use (cached) just before", async () => {
    const account = await createAccountWithKey(app, ["read", "chat"]);
    for (let i = 0; i < 2; i++) {
      expect(await restStatus(app, account.apiKey)).toBe(200);
      expect(await rpcStatus(app, account.apiKey)).toBe(200);
      expect(await chatStatus(app, account.apiKey)).toBe(200);
    }
    await revokeThroughConsole(app, account);
    expect(await restStatus(app, account.apiKey)).toBe(401);
    expect(await rpcStatus(app, account.apiKey)).toBe(401);
    expect(await chatStatus(app, account.apiKey)).toBe(401);
  });

  // The NOTIFY usually reaches this instance first too; the RPC must not depend on winning that race.
  it("is dropped from this instance's cache by the Console's revoke itself, before it answers", async () => {
    const account = await createAccountWithKey(app, ["read"]);
    const [key] = await listApiKeys(app.store.db, account.accountId);
    const forgotten: string[] = [];
    const service = accountService({ db: app.store.db, config: app.config, apiKeys: { forget: (keyId) => forgotten.push(keyId) } });
    const revoke = (id: string) => {
      const context = createHandlerContext({
        service: ConsoleService,
        method: ConsoleService.method.revokeApiKey,
        protocolName: "connect",
        requestMethod: "POST",
        url: `${app.url}/zero.v1.ConsoleService/RevokeApiKey`,
      });
      context.values.set(principalKey, { accountId: account.accountId, via: "session", scopes: SCOPES, credentialId: "ses_test" });
      return service.revokeApiKey(create(RevokeApiKeyRequestSchema, { id }), context);
    };
    await expect(revoke("key_doesnotexist")).rejects.toThrow();
    expect(forgotten).toEqual([]);
    await revoke(key!.id);
    expect(forgotten).toEqual([key!.id]);
  });

  it("records that a key was used, with the cache in the way", async () => {
    const account = await createAccountWithKey(app, ["read"]);
    const console = consoleClient(app.url);
    const headers = sessionHeaders(app.url, account.cookie);
    const lastUsed = async () => (await console.listApiKeys({}, { headers })).apiKeys[0]!.lastUsedAt;
    expect(await lastUsed()).toBeUndefined();
    for (let i = 0; i < 3; i++) expect(await restStatus(app, account.apiKey)).toBe(200);
    // Recorded in the background: give it a moment.
    expect(await eventually(async () => (await lastUsed()) !== undefined, true, 2000)).toBe(true);
  });
});

// Several instances share only a real server.
describe.runIf(onRealPostgres)("a revoked key on another instance of the same database", () => {
  let databaseUrl: string;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    databaseUrl = (await createTestDatabase())!;
    a = await startTestApp({ databaseUrl });
    b = await startTestApp({ databaseUrl });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it("is refused there within moments of the revocation (notified; the cache's TTL is a minute)", async () => {
    const account = await createAccountWithKey(a, ["read"]);
    expect(await restStatus(b, account.apiKey)).toBe(200);
    expect(await rpcStatus(b, account.apiKey)).toBe(200);
    await revokeThroughConsole(a, account);
    expect(await eventually(() => restStatus(b, account.apiKey), 401, 2000)).toBe(401);
    expect(await rpcStatus(b, account.apiKey)).toBe(401);
  });

  it("is refused at once when revoked while that instance's listener is down: it remembers no key until it listens again", async () => {
    const account = await createAccountWithKey(a, ["read"]);
    expect(await restStatus(b, account.apiKey)).toBe(200);
    const lost = () => b.logs.filter((line) => line.includes("database listener lost")).length;
    const lostBefore = lost();
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    try {
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and query like 'LISTEN %'`,
      );
    } finally {
      await admin.end();
    }
    for (let i = 0; i < 100 && lost() === lostBefore; i++) await sleep(5);
    // B reconnects after a second: all of this happens in the gap.
    expect(await restStatus(b, account.apiKey)).toBe(200);
    await revokeThroughConsole(a, account);
    expect(await restStatus(b, account.apiKey)).toBe(401);
    await listenersBack(databaseUrl);
  });

  it("is forgotten when the listener connection is lost, since revocations may have been missed", async () => {
    const account = await createAccountWithKey(a, ["read"]);
    expect(await restStatus(b, account.apiKey)).toBe(200);
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    try {
      // Both instances' LISTEN connections go; their last statement is a LISTEN.
      const { rows } = await admin.query<{ terminated: boolean }>(
        `select pg_terminate_backend(pid) as terminated from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and query like 'LISTEN %'`,
      );
      expect(rows.length).toBeGreaterThanOrEqual(2);
      // A revocation whose notification nobody hears: the row changes, no NOTIFY is sent.
      await admin.query("update api_keys set revoked_at = now() where account_id = $1", [account.accountId]);
    } finally {
      await admin.end();
    }
    expect(await eventually(() => restStatus(b, account.apiKey), 401, 3000)).toBe(401);

    // Listening again: a later revocation on A still reaches B.
    const next = await createAccountWithKey(a, ["read"]);
    expect(await restStatus(b, next.apiKey)).toBe(200);
    await sleep(1500);
    expect(await restStatus(b, next.apiKey)).toBe(200);
    await revokeThroughConsole(a, next);
    expect(await eventually(() => restStatus(b, next.apiKey), 401, 2000)).toBe(401);
  });
});
