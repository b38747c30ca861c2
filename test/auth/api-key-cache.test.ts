import { describe, expect, it } from "vitest";
import { API_KEY_REVOKED_CHANNEL } from "../../src/auth/accounts.js";
import { ApiKeyCache, type LiveApiKey } from "../../src/auth/api-key-cache.js";
import { createLogger } from "../../src/observability/logger.js";

const TTL_MS = 60_000;

/** A cache over an in-memory key table, with a clock and a NOTIFY channel the test drives. */
function harness(options: { maxEntries?: number; sweepEveryMs?: number } = {}) {
  let now = 1_000_000;
  const table = new Map<string, LiveApiKey>();
  const loads: string[] = [];
  const touches: string[] = [];
  let onRevoked: ((keyId: string) => void) | undefined;
  let onGap: ((listening: boolean) => void) | undefined;
  /** While set, lookups wait for the test to let them answer. */
  let gate: Promise<void> | undefined;
  const cache = new ApiKeyCache({
    find: async (secret) => {
      loads.push(secret);
      const answer = table.get(secret);
      await gate;
      return answer && { ...answer };
    },
    touch: async (keyId) => {
      touches.push(keyId);
    },
    listen: async (channel, onPayload, gap) => {
      expect(channel).toBe(API_KEY_REVOKED_CHANNEL);
      onRevoked = onPayload;
      onGap = gap;
      return async () => {
        onRevoked = undefined;
        onGap = undefined;
      };
    },
    logger: createLogger("silent"),
    ttlMs: TTL_MS,
    maxEntries: options.maxEntries,
    sweepEveryMs: options.sweepEveryMs,
    now: () => now,
  });
  return {
    cache,
    loads,
    touches,
    addKey(secret: string, id: string, lastUsedAt: Date | null = null) {
      table.set(secret, { id, account_id: "acc_1", scopes: ["read"], last_used_at: lastUsedAt });
    },
    revokeInTable(secret: string) {
      table.delete(secret);
    },
    advance(ms: number) {
      now += ms;
    },
    now: () => now,
    notifyRevoked(keyId: string) {
      if (!onRevoked) throw new Error("not listening");
      onRevoked(keyId);
    },
    loseListener() {
      if (!onGap) throw new Error("no gap handler");
      onGap(false);
    },
    listenAgain() {
      if (!onGap) throw new Error("no gap handler");
      onGap(true);
    },
    /** Holds every lookup until the returned function is called. */
    holdLookups(): () => void {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

describe("ApiKeyCache", () => {
  it("answers a key checked within the TTL from memory, without the database", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    expect((await h.cache.find("zk_a"))?.id).toBe("key_a");
    h.advance(TTL_MS - 1);
    expect((await h.cache.find("zk_a"))?.id).toBe("key_a");
    expect(h.loads).toEqual(["zk_a"]);
  });

  it("says synchronously which keys it remembers, and forgets them as find does", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    expect(h.cache.remembered("zk_a")).toBeUndefined();
    await h.cache.find("zk_a");
    expect(h.cache.remembered("zk_a")?.id).toBe("key_a");
    h.cache.forget("key_a");
    expect(h.cache.remembered("zk_a")).toBeUndefined();
    await h.cache.find("zk_a");
    h.advance(TTL_MS);
    expect(h.cache.remembered("zk_a")).toBeUndefined();
    expect(h.loads).toEqual(["zk_a", "zk_a"]);
  });

  it("asks the database again once the TTL has passed", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    await h.cache.find("zk_a");
    h.advance(TTL_MS);
    h.revokeInTable("zk_a");
    expect(await h.cache.find("zk_a")).toBeUndefined();
    expect(h.loads).toEqual(["zk_a", "zk_a"]);
  });

  it("never remembers an unknown or revoked key", async () => {
    const h = harness();
    await h.cache.start();
    expect(await h.cache.find("zk_unknown")).toBeUndefined();
    h.addKey("zk_unknown", "key_late");
    expect((await h.cache.find("zk_unknown"))?.id).toBe("key_late");
    expect(h.loads).toEqual(["zk_unknown", "zk_unknown"]);
  });

  it("drops a key when its revocation is notified, and on forget", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    h.addKey("zk_b", "key_b");
    await h.cache.find("zk_a");
    await h.cache.find("zk_b");
    h.revokeInTable("zk_a");
    h.notifyRevoked("key_a");
    expect(await h.cache.find("zk_a")).toBeUndefined();
    h.revokeInTable("zk_b");
    h.cache.forget("key_b");
    expect(await h.cache.find("zk_b")).toBeUndefined();
    expect(h.loads).toEqual(["zk_a", "zk_b", "zk_a", "zk_b"]);
  });

  it("does not remember a lookup that was under way when a revocation was notified", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    const release = h.holdLookups();
    // The lookup read the row before the revocation committed…
    const racing = h.cache.find("zk_a");
    h.revokeInTable("zk_a");
    h.notifyRevoked("key_a");
    release();
    // …so this request is served as the database answered it, but the key is not remembered.
    expect((await racing)?.id).toBe("key_a");
    expect(await h.cache.find("zk_a")).toBeUndefined();
    expect(h.loads).toEqual(["zk_a", "zk_a"]);
  });

  it("does not remember a lookup that was under way when this instance revoked the key", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    const release = h.holdLookups();
    const racing = h.cache.find("zk_a");
    h.revokeInTable("zk_a");
    h.cache.forget("key_a");
    release();
    await racing;
    expect(await h.cache.find("zk_a")).toBeUndefined();
  });

  it("forgets every key when the listener is lost, including lookups under way", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    h.addKey("zk_b", "key_b");
    h.addKey("zk_c", "key_c");
    await h.cache.find("zk_a");
    await h.cache.find("zk_b");
    const release = h.holdLookups();
    const racing = h.cache.find("zk_c");
    h.loseListener();
    release();
    await racing;
    h.loads.length = 0;
    for (const secret of ["zk_a", "zk_b", "zk_c"]) await h.cache.find(secret);
    expect(h.loads).toEqual(["zk_a", "zk_b", "zk_c"]);
  });

  it("remembers nothing while the listener is lost, so a revocation it cannot hear is seen at once; and again once it listens", async () => {
    const h = harness();
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    await h.cache.find("zk_a");
    h.loseListener();
    expect((await h.cache.find("zk_a"))?.id).toBe("key_a");
    // Revoked elsewhere; the notification is lost with the listener.
    h.revokeInTable("zk_a");
    expect(await h.cache.find("zk_a")).toBeUndefined();
    h.addKey("zk_b", "key_b");
    h.loads.length = 0;
    await h.cache.find("zk_b");
    await h.cache.find("zk_b");
    expect(h.loads).toEqual(["zk_b", "zk_b"]);
    h.listenAgain();
    h.loads.length = 0;
    await h.cache.find("zk_b");
    await h.cache.find("zk_b");
    expect(h.loads).toEqual(["zk_b"]);
  });

  it("remembers nothing before start or after stop, when revocations could not reach it", async () => {
    const h = harness();
    h.addKey("zk_a", "key_a");
    await h.cache.find("zk_a");
    await h.cache.find("zk_a");
    await h.cache.start();
    await h.cache.find("zk_a");
    await h.cache.find("zk_a");
    await h.cache.stop();
    await h.cache.find("zk_a");
    expect(h.loads).toEqual(["zk_a", "zk_a", "zk_a", "zk_a"]);
  });

  it("lets go of a key no longer used once its TTL has passed, without a lookup", async () => {
    const h = harness({ sweepEveryMs: 10 });
    await h.cache.start();
    h.addKey("zk_a", "key_a");
    h.addKey("zk_b", "key_b");
    await h.cache.find("zk_a");
    h.advance(TTL_MS / 2);
    await h.cache.find("zk_b");
    h.advance(TTL_MS / 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // zk_a's TTL has passed and it goes from memory; zk_b's has not.
    expect(h.cache.size).toBe(1);
    expect(h.cache.remembered("zk_b")?.id).toBe("key_b");
    await h.cache.stop();
  });

  it("holds at most maxEntries keys, evicting the oldest", async () => {
    const h = harness({ maxEntries: 2 });
    await h.cache.start();
    for (const name of ["a", "b", "c"]) h.addKey(`zk_${name}`, `key_${name}`);
    for (const secret of ["zk_a", "zk_b", "zk_c"]) await h.cache.find(secret);
    h.loads.length = 0;
    for (const secret of ["zk_c", "zk_b", "zk_a"]) await h.cache.find(secret);
    expect(h.loads).toEqual(["zk_a"]);
  });

  it("records use at most once a minute per key, also while the key is served from memory", async () => {
    const h = harness();
    await h.cache.start();
    // Last used 30 s ago (on another instance, say): no write on this load.
    h.addKey("zk_a", "key_a", new Date(h.now() - 30_000));
    h.cache.recordUse((await h.cache.find("zk_a"))!);
    expect(h.touches).toEqual([]);
    // Still in memory (TTL 60 s), but the minute since the last recorded use is over.
    h.advance(31_000);
    h.cache.recordUse((await h.cache.find("zk_a"))!);
    expect(h.touches).toEqual(["key_a"]);
    h.advance(20_000);
    h.cache.recordUse((await h.cache.find("zk_a"))!);
    expect(h.touches).toEqual(["key_a"]);
    expect(h.loads).toEqual(["zk_a"]);

    // A key never used before is recorded on its first use.
    h.addKey("zk_new", "key_new");
    h.cache.recordUse((await h.cache.find("zk_new"))!);
    h.cache.recordUse((await h.cache.find("zk_new"))!);
    expect(h.touches).toEqual(["key_a", "key_new"]);
  });
});
