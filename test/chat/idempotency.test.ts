import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { IDEMPOTENCY_TTL_MS, IdempotencyStore, runIdempotently } from "../../src/server/idempotency.js";
import { startTestApp, type TestApp } from "../support/app.js";

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});

afterAll(async () => {
  await app?.close();
});

describe("the idempotency store", () => {
  it("forgets a key after 24 hours: the same key then starts a new request", async () => {
    let now = Date.parse("2031-01-01T10:00:00Z");
    const store = new IdempotencyStore(app.store.db, { now: () => now });
    const hash = IdempotencyStore.hash({ a: 1 });
    expect(await store.begin("acc_1", "k", hash)).toEqual({ kind: "claimed" });
    await store.complete("acc_1", "k", '{"id":"chatcmpl-1"}');
    now += IDEMPOTENCY_TTL_MS - 1000;
    expect(await store.begin("acc_1", "k", hash)).toEqual({ kind: "replay", response: '{"id":"chatcmpl-1"}' });
    now += 2000;
    expect(await store.begin("acc_1", "k", IdempotencyStore.hash({ other: true }))).toEqual({ kind: "claimed" });
  });

  it("a key bound by a version that kept only the in-order digest still replays the same request", async () => {
    const store = new IdempotencyStore(app.store.db);
    const request = { model: "project-zero", messages: [{ role: "user", content: "hi" }] };
    const { inOrder } = IdempotencyStore.digests(request);
    expect(await store.begin("acc_legacy", "k", { inOrder })).toEqual({ kind: "claimed" });
    await store.complete("acc_legacy", "k", '{"id":"chatcmpl-legacy"}');
    expect(await store.begin("acc_legacy", "k", IdempotencyStore.digests(request))).toEqual({ kind: "replay", response: '{"id":"chatcmpl-legacy"}' });
    await expect(store.begin("acc_legacy", "k", IdempotencyStore.digests({ other: 1 }))).rejects.toMatchObject({ type: "idempotency_key_reused" });
    // What an earlier version compares is still there: the in-order digest.
    const row = await app.store.db.selectFrom("chat_idempotency_keys").select("request_hash").where("account_id", "=", "acc_legacy").executeTakeFirstOrThrow();
    expect(row.request_hash).toBe(inOrder);
  });

  it("a request that died with its instance does not hold its key forever", async () => {
    let now = Date.parse("2031-01-02T10:00:00Z");
    const store = new IdempotencyStore(app.store.db, { now: () => now, leaseMs: 60_000 });
    const hash = IdempotencyStore.hash({ b: 2 });
    expect(await store.begin("acc_1", "dies", hash)).toEqual({ kind: "claimed" });
    await expect(store.begin("acc_1", "dies", hash)).rejects.toMatchObject({ type: "idempotency_key_in_progress" });
    now += 61_000;
    expect(await store.begin("acc_1", "dies", hash)).toEqual({ kind: "claimed" });
  });

  it("a request running past its lease keeps its key by heartbeat; once its instance stops beating, a retry takes the key over", async () => {
    const store = new IdempotencyStore(app.store.db, { leaseMs: 300 });
    const call = { accountId: "acc_3", key: "slow", request: { c: 3 } };
    let finish!: (json: string) => void;
    const running = runIdempotently(store, call, () => new Promise<string>((resolve) => (finish = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // Three leases later, another instance's retry still finds it in flight.
    await expect(store.begin("acc_3", "slow", IdempotencyStore.hash(call.request))).rejects.toMatchObject({ type: "idempotency_key_in_progress" });
    finish('{"id":"chatcmpl-slow"}');
    expect(await running).toEqual({ json: '{"id":"chatcmpl-slow"}', replayed: false });

    // A claim whose instance died (no heartbeat): free again after one lease.
    const hash = IdempotencyStore.hash({ d: 4 });
    expect(await store.begin("acc_3", "orphan", hash)).toEqual({ kind: "claimed" });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await store.begin("acc_3", "orphan", hash)).toEqual({ kind: "claimed" });
  });

  // Found by a chaos test: a request that failed while the database was away could not give its key back, and
  // every retry was 409 `idempotency_key_in_progress` for the rest of the lease (15 s), after it had been told 503.
  it("a failed request whose key could not be given back gives it back once the database answers, within its lease", async () => {
    const store = new IdempotencyStore(app.store.db, { leaseMs: 10_000 });
    const call = { accountId: "acc_5", key: "away", request: { e: 5 } };
    await sql`create function zero_test_keys_away() returns trigger language plpgsql as $$
      begin raise exception 'the database is away' using errcode = 'admin_shutdown'; end $$`.execute(app.store.db);
    await sql`create trigger zero_test_keys_away before delete on chat_idempotency_keys for each row execute function zero_test_keys_away()`.execute(
      app.store.db,
    );
    try {
      await expect(runIdempotently(store, call, () => Promise.reject(new Error("the upstream failed")))).rejects.toThrow("the upstream failed");
      await expect(store.begin("acc_5", "away", IdempotencyStore.hash(call.request))).rejects.toMatchObject({ type: "idempotency_key_in_progress" });
    } finally {
      await sql`drop trigger zero_test_keys_away on chat_idempotency_keys`.execute(app.store.db);
    }
    // Back: the key is given back soon, long before its lease would have run out.
    await vi.waitFor(async () => expect(await store.begin("acc_5", "away", IdempotencyStore.hash(call.request))).toEqual({ kind: "claimed" }), {
      timeout: 3000,
      interval: 100,
    });
  });

  it("the sweep deletes expired keys only", async () => {
    let now = Date.parse("2031-01-03T10:00:00Z");
    const store = new IdempotencyStore(app.store.db, { now: () => now });
    await store.begin("acc_2", "old", "h1");
    now += IDEMPOTENCY_TTL_MS / 2;
    await store.begin("acc_2", "new", "h2");
    now += IDEMPOTENCY_TTL_MS / 2 + 1;
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
    const keys = await app.store.db.selectFrom("chat_idempotency_keys").select("key").where("account_id", "=", "acc_2").execute();
    expect(keys.map((k) => k.key)).toEqual(["new"]);
  });

  it("refuses keys that are empty, too long or not printable ASCII", () => {
    for (const bad of ["", "x".repeat(256), "with\ttab", "ключ"]) {
      expect(() => IdempotencyStore.validKey(bad)).toThrow(/Idempotency-Key/);
    }
    expect(IdempotencyStore.validKey("2b9e-4c1a_ok:1")).toBe("2b9e-4c1a_ok:1");
    expect(IdempotencyStore.validKey("order 42")).toBe("order 42");
  });
});
