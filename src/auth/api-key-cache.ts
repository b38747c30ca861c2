import type { Store } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import { API_KEY_REVOKED_CHANNEL, findLiveApiKey, touchApiKey } from "./accounts.js";

/** The fields of a live key the authenticator needs, as `findLiveApiKey` reads them. */
export type LiveApiKey = NonNullable<Awaited<ReturnType<typeof findLiveApiKey>>>;

export interface ApiKeyCacheOptions {
  /** Reads a live (unrevoked) key by its secret: `findLiveApiKey`. */
  find: (secret: string) => Promise<LiveApiKey | undefined>;
  /** Records a key's use in the database: `touchApiKey`. */
  touch: (keyId: string) => Promise<void>;
  /** `Store.listen`: every instance's revocations arrive here. */
  listen: Store["listen"];
  logger: Logger;
  /** How long a checked key is trusted without asking the database; a backstop, since revocations are notified. */
  ttlMs?: number;
  maxEntries?: number;
  /** How often entries past their TTL are dropped, so a secret no longer in use leaves memory. */
  sweepEveryMs?: number;
  now?: () => number;
}

/** `last_used_at` is for people reading the Console, so a minute is precise enough. */
const USE_RECORDED_EVERY_MS = 60_000;

/**
 * Keys that were found live, so that requests do not wait on a database
 * round trip to check them. Only successful lookups are kept. A revocation
 * drops the key at once on the instance that made it (`forget`) and within
 * milliseconds on the others (a NOTIFY on `API_KEY_REVOKED_CHANNEL`); if the
 * listener connection is lost, everything is dropped, since notifications
 * may have been missed. Entries also expire after `ttlMs`.
 *
 * Entries are keyed by the secret as presented. The database holds only its
 * SHA-256, but hashing it on every request cost 3-4 µs of a ~65 µs chat
 * completion (OpenSSL's digest, cold between requests), and the process
 * holds each secret while it serves the request anyway. A Map finds a string
 * by its seeded hash before comparing contents, so a lookup's time says
 * nothing about how much of a wrong guess was right. Expired entries are
 * swept, so a key no longer used leaves memory within two TTLs.
 */
export class ApiKeyCache {
  /** By secret, in load order. */
  readonly #entries = new Map<string, { key: LiveApiKey; expiresAt: number }>();
  readonly #find: ApiKeyCacheOptions["find"];
  readonly #touch: ApiKeyCacheOptions["touch"];
  readonly #listen: ApiKeyCacheOptions["listen"];
  readonly #logger: Logger;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #sweepEveryMs: number;
  readonly #now: () => number;
  #sweeper: NodeJS.Timeout | undefined;
  /**
   * Bumped whenever a key may have been revoked. A lookup that began under an
   * older epoch may have read the row before the revocation committed, so its
   * result is used for that request but not remembered.
   */
  #epoch = 0;
  /** Entries are remembered only while revocations can reach this instance. */
  #listening = false;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(options: ApiKeyCacheOptions) {
    this.#find = options.find;
    this.#touch = options.touch;
    this.#listen = options.listen;
    this.#logger = options.logger;
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#sweepEveryMs = options.sweepEveryMs ?? this.#ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /** Subscribes to revocations; until then, and while the subscription is lost, lookups are not remembered. */
  async start(): Promise<void> {
    // Before the subscription is asked for, so that a failure to get it (told through onGap) is not overwritten.
    this.#listening = true;
    this.#unlisten = await this.#listen(
      API_KEY_REVOKED_CHANNEL,
      (keyId) => this.forget(keyId),
      (listening) => {
        this.#listening = listening;
        this.clear();
      },
    );
    this.#sweeper = setInterval(() => this.#dropExpired(), this.#sweepEveryMs);
    this.#sweeper.unref();
  }

  /** Keys held in memory (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  async stop(): Promise<void> {
    this.#listening = false;
    clearInterval(this.#sweeper);
    this.clear();
    await this.#unlisten?.().catch(() => {});
    this.#unlisten = undefined;
  }

  /** The live key with this secret if it was checked within the TTL, without asking the database. */
  remembered(secret: string): LiveApiKey | undefined {
    return this.#fresh(secret);
  }

  /** The live key with this secret, from memory when it was checked within the TTL. */
  async find(secret: string): Promise<LiveApiKey | undefined> {
    const known = this.#fresh(secret);
    if (known) return known;
    const epoch = this.#epoch;
    const key = await this.#find(secret);
    if (key && this.#listening && epoch === this.#epoch) this.#remember(secret, key);
    return key;
  }

  /**
   * Records a use of `key` in the database at most once a minute, whether it
   * was just read or served from memory: the remembered row carries the time
   * of the last recorded use.
   */
  recordUse(key: LiveApiKey): void {
    const now = this.#now();
    if (key.last_used_at && now - key.last_used_at.getTime() <= USE_RECORDED_EVERY_MS) return;
    key.last_used_at = new Date(now);
    this.#touch(key.id).catch((error: unknown) => this.#logger.warn({ err: error }, "could not record key use"));
  }

  /** Drops a revoked key; lookups already under way will not remember it either. */
  forget(keyId: string): void {
    this.#epoch++;
    for (const [secret, entry] of this.#entries) {
      if (entry.key.id === keyId) this.#entries.delete(secret);
    }
  }

  /** Drops every key, and keeps lookups already under way from remembering theirs. */
  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  #fresh(secret: string): LiveApiKey | undefined {
    const entry = this.#entries.get(secret);
    if (!entry) return undefined;
    if (entry.expiresAt > this.#now()) return entry.key;
    this.#entries.delete(secret);
    return undefined;
  }

  #dropExpired(): void {
    const now = this.#now();
    for (const [secret, entry] of this.#entries) {
      if (entry.expiresAt <= now) this.#entries.delete(secret);
    }
  }

  #remember(secret: string, key: LiveApiKey): void {
    if (this.#entries.size >= this.#maxEntries && !this.#entries.has(secret)) {
      // Insertion order is load order, so the first entry is the one closest to expiring.
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(secret, { key, expiresAt: this.#now() + this.#ttlMs });
  }
}

/** The cache over the service's own database. */
export function createApiKeyCache(store: Store, logger: Logger): ApiKeyCache {
  return new ApiKeyCache({
    find: (secret) => findLiveApiKey(store.db, secret),
    touch: (keyId) => touchApiKey(store.db, keyId),
    listen: (channel, onPayload, onGap) => store.listen(channel, onPayload, onGap),
    logger,
  });
}
