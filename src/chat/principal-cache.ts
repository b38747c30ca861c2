import { createHash } from "node:crypto";
import type { Principal } from "../server/context.js";

export interface PrincipalCacheOptions {
  /** How long a key, once checked, is trusted without asking the database again. */
  ttlMs?: number;
  maxEntries?: number;
  now?: () => number;
}

/**
 * Who a chat key belongs to, remembered for a second. The chat route is the
 * hot path: without this every completion waits on a database round trip
 * before it can leave for the upstream. Only successful checks are kept
 * (unknown, revoked and under-scoped keys always go to the database), and
 * a revoked key stops working within `ttlMs` on every instance. Entries are
 * keyed by a SHA-256 of the header, so secrets do not sit in memory as keys.
 */
export class PrincipalCache {
  readonly #entries = new Map<string, { principal: Principal; until: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: PrincipalCacheOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 1000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** The cache key for an `Authorization` header value. */
  static keyOf(authorization: string): string {
    return createHash("sha256").update(authorization).digest("base64");
  }

  get(key: string): Principal | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.principal;
  }

  set(key: string, principal: Principal): void {
    // Many distinct keys at once is unusual; starting over is simpler than LRU and bounds memory.
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
    this.#entries.set(key, { principal, until: this.#now() + this.#ttlMs });
  }
}
