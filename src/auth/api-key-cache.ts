import type { Store } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import { API_KEY_REVOKED_CHANNEL, findLiveApiKey, touchApiKey } from "./accounts.js";
import { hashToken } from "./secrets.js";

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
  now?: () => number;
}

/** `last_used_at` is for people reading the Console, so a minute is precise enough. */
const USE_RECORDED_EVERY_MS = 60_000;

/**
 * Keys that were found live, so that requests do not wait on a database
 * round trip to check them. Only successful lookups are kept, keyed by the
 * secret's SHA-256 (the secret itself is never a map key). A revocation drops
 * the key at once on the instance that made it (`forget`) and within
 * milliseconds on the others (a NOTIFY on `API_KEY_REVOKED_CHANNEL`); if the
 * listener connection is lost, everything is dropped, since notifications
 * may have been missed. Entries also expire after `ttlMs`.
 */
export class ApiKeyCache {
  readonly #entries = new Map<string, { key: LiveApiKey; expiresAt: number }>();
  readonly #find: ApiKeyCacheOptions["find"];
  readonly #touch: ApiKeyCacheOptions["touch"];
  readonly #listen: ApiKeyCacheOptions["listen"];
  readonly #logger: Logger;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
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
    this.#now = options.now ?? Date.now;
  }

  /** Subscribes to revocations; until then, lookups are not remembered. */
  async start(): Promise<void> {
    this.#unlisten = await this.#listen(
      API_KEY_REVOKED_CHANNEL,
      (keyId) => this.forget(keyId),
      () => this.clear(),
    );
    this.#listening = true;
  }

  async stop(): Promise<void> {
    this.#listening = false;
    this.clear();
    await this.#unlisten?.().catch(() => {});
    this.#unlisten = undefined;
  }

  /** The live key with this secret if it was checked within the TTL, without asking the database. */
  remembered(secret: string): LiveApiKey | undefined {
    return this.#fresh(hashToken(secret));
  }

  /** The live key with this secret, from memory when it was checked within the TTL. */
  async find(secret: string): Promise<LiveApiKey | undefined> {
    const hash = hashToken(secret);
    const known = this.#fresh(hash);
    if (known) return known;
    const epoch = this.#epoch;
    const key = await this.#find(secret);
    if (key && this.#listening && epoch === this.#epoch) this.#remember(hash, key);
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
    for (const [hash, entry] of this.#entries) {
      if (entry.key.id === keyId) this.#entries.delete(hash);
    }
  }

  /** Drops every key, and keeps lookups already under way from remembering theirs. */
  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  #fresh(hash: string): LiveApiKey | undefined {
    const entry = this.#entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt > this.#now()) return entry.key;
    this.#entries.delete(hash);
    return undefined;
  }

  #remember(hash: string, key: LiveApiKey): void {
    if (this.#entries.size >= this.#maxEntries && !this.#entries.has(hash)) {
      // Insertion order is load order, so the first entry is the one closest to expiring.
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(hash, { key, expiresAt: this.#now() + this.#ttlMs });
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
