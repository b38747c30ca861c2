import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_TTL_MS, IdempotencyStore } from "../../src/server/idempotency.js";
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

  it("a request that died with its instance does not hold its key forever", async () => {
    let now = Date.parse("2031-01-02T10:00:00Z");
    const store = new IdempotencyStore(app.store.db, { now: () => now, leaseMs: 60_000 });
    const hash = IdempotencyStore.hash({ b: 2 });
    expect(await store.begin("acc_1", "dies", hash)).toEqual({ kind: "claimed" });
    await expect(store.begin("acc_1", "dies", hash)).rejects.toMatchObject({ type: "idempotency_key_in_progress" });
    now += 61_000;
    expect(await store.begin("acc_1", "dies", hash)).toEqual({ kind: "claimed" });
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
