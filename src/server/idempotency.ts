import { createHash } from "node:crypto";
import { canonicalJson } from "../strings.js";
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { invalidRequest, ServiceError } from "./errors.js";

/** How long a key and its response are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * How long a first request holds its key between heartbeats: it is renewed
 * every third of it while the request runs (`runIdempotently`), so a row
 * still in flight after it belongs to an instance that died mid-request,
 * and the next retry takes the key over within seconds, not minutes.
 */
const DEFAULT_LEASE_MS = 15_000;

const MAX_KEY_LENGTH = 255;

/** What `begin` decided. */
export type IdempotencyClaim =
  /** First use (or a takeover): serve, then `complete` or `release`. */
  | { kind: "claimed" }
  /** Served before with this body: send `response` again. */
  | { kind: "replay"; response: string };

/** A request's digests (see IdempotencyStore.digests); `keysSorted` is missing from rows an earlier version wrote. */
export interface RequestDigests {
  inOrder: string;
  keysSorted?: string;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/**
 * `Idempotency-Key` for every request that takes one (non-streaming chat
 * completions, Responses and embeddings, and execution creates), shared by
 * every instance through Postgres: same account, key and body within 24 h
 * replays the stored response; another body is 422 `idempotency_key_reused`;
 * a request still running is 409 `idempotency_key_in_progress`. A request
 * that fails is not recorded, so the client may retry it with the same key.
 * A body's kind is part of what is compared (`{ embeddings: … }`,
 * `{ responses: … }`, `{ createExecution: … }`), so one key cannot replay
 * another route's answer.
 */
export class IdempotencyStore {
  readonly #db: Kysely<Database>;
  readonly #leaseMs: number;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, options: { leaseMs?: number; now?: () => number } = {}) {
    this.#db = db;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The digests a key is bound to, of the request as parsed JSON (so spacing
   * does not count): in its keys' order, which every version of the service
   * compares, and with its keys sorted, so that a retry which builds its
   * body anew (JSON objects are unordered) replays too.
   */
  static digests(request: unknown): RequestDigests {
    return { inOrder: sha256(JSON.stringify(request)), keysSorted: sha256(canonicalJson(request)) };
  }

  /** One digest of `request`, for a caller that needs a single token for it. */
  static hash(request: unknown): string {
    return IdempotencyStore.digests(request).keysSorted!;
  }

  /** Checks a client-supplied key. */
  static validKey(key: string): string {
    // Printable ASCII, the space included (HTTP has already trimmed the value's ends).
    if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key)) {
      throw invalidRequest(`Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters`);
    }
    return key;
  }

  async begin(accountId: string, key: string, request: RequestDigests | string): Promise<IdempotencyClaim> {
    const digests = typeof request === "string" ? { inOrder: request, keysSorted: request } : request;
    // A few rounds: a row can expire or be released between our insert and our read.
    for (let round = 0; round < 4; round++) {
      const now = this.#now();
      const inserted = await this.#db
        .insertInto("chat_idempotency_keys")
        .values({
          account_id: accountId,
          key,
          request_hash: digests.inOrder,
          sorted_hash: digests.keysSorted ?? null,
          state: "in_flight",
          response: null,
          lease_until: new Date(now + this.#leaseMs),
          expires_at: new Date(now + IDEMPOTENCY_TTL_MS),
        })
        .onConflict((oc) => oc.columns(["account_id", "key"]).doNothing())
        .returning("key")
        .executeTakeFirst();
      if (inserted) return { kind: "claimed" };

      const row = await this.#db.selectFrom("chat_idempotency_keys").selectAll().where("account_id", "=", accountId).where("key", "=", key).executeTakeFirst();
      if (!row) continue;
      if (row.expires_at.getTime() <= now) {
        await this.#db
          .deleteFrom("chat_idempotency_keys")
          .where("account_id", "=", accountId)
          .where("key", "=", key)
          .where("expires_at", "<=", new Date(now))
          .execute();
        continue;
      }
      // A row an earlier version wrote has no sorted digest: only the same order replays it.
      const same = row.request_hash === digests.inOrder || (row.sorted_hash !== null && row.sorted_hash === digests.keysSorted);
      if (!same) {
        throw new ServiceError("idempotency_key_reused", "this Idempotency-Key was already used with a different request body", {
          param: "Idempotency-Key",
        });
      }
      if (row.state === "done" && row.response !== null) return { kind: "replay", response: row.response };
      if (row.lease_until.getTime() > now) {
        throw new ServiceError("idempotency_key_in_progress", "a request with this Idempotency-Key is still being served; retry after it completes", {
          headers: { "retry-after": "1" },
        });
      }
      // Abandoned by an instance that died: take it over, unless another retry just did.
      const taken = await this.#db
        .updateTable("chat_idempotency_keys")
        .set({ lease_until: new Date(now + this.#leaseMs) })
        .where("account_id", "=", accountId)
        .where("key", "=", key)
        .where("state", "=", "in_flight")
        .where("lease_until", "=", row.lease_until)
        .returning("key")
        .executeTakeFirst();
      if (taken) return { kind: "claimed" };
    }
    throw new ServiceError("idempotency_key_in_progress", "a request with this Idempotency-Key is still being served; retry after it completes");
  }

  /** How often a request in flight renews its key's lease. */
  get renewEveryMs(): number {
    return Math.max(1, Math.floor(this.#leaseMs / 3));
  }

  /** How long a claim or a renewal holds a key. */
  get leaseMs(): number {
    return this.#leaseMs;
  }

  /** Extends the lease of a key whose request is still running here. */
  async renew(accountId: string, key: string): Promise<void> {
    await this.#db
      .updateTable("chat_idempotency_keys")
      .set({ lease_until: new Date(this.#now() + this.#leaseMs) })
      .where("account_id", "=", accountId)
      .where("key", "=", key)
      .where("state", "=", "in_flight")
      .execute();
  }

  /** Records the response the key replays from now on. */
  async complete(accountId: string, key: string, response: string): Promise<void> {
    await this.#db.updateTable("chat_idempotency_keys").set({ state: "done", response }).where("account_id", "=", accountId).where("key", "=", key).execute();
  }

  /** Forgets a key whose request failed, so a retry with it runs afresh. */
  async release(accountId: string, key: string): Promise<void> {
    await this.#db.deleteFrom("chat_idempotency_keys").where("account_id", "=", accountId).where("key", "=", key).where("state", "=", "in_flight").execute();
  }

  /** Deletes expired keys; run now and then so the table stays small. */
  async sweep(): Promise<number> {
    const result = await this.#db.deleteFrom("chat_idempotency_keys").where("expires_at", "<=", new Date(this.#now())).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** An answer as sent to the client: the JSON text, and whether it is a replay of the first. */
export interface CompletionResult {
  json: string;
  replayed: boolean;
}

/**
 * Serves an answer under an `Idempotency-Key`: the first
 * request runs `produce` (handed the key as checked) and its JSON is
 * recorded; a retry with the same body replays it (taking no pool unit); a
 * failure records nothing, so the same key can be retried.
 */
export async function runIdempotently(
  idempotency: IdempotencyStore,
  call: { accountId: string; key: string; request: unknown },
  produce: (key: string) => Promise<string>,
): Promise<CompletionResult> {
  const key = IdempotencyStore.validKey(call.key);
  // Until when the key is surely this request's: a lease is written after the time read here.
  let heldUntil = Date.now() + idempotency.leaseMs;
  const claim = await idempotency.begin(call.accountId, key, IdempotencyStore.digests(call.request));
  if (claim.kind === "replay") return { json: claim.response, replayed: true };
  // The heartbeat that keeps the key this request's while it runs; a missed beat is caught up by the next.
  const heartbeat = setInterval(() => {
    const renewing = Date.now() + idempotency.leaseMs;
    idempotency.renew(call.accountId, key).then(
      () => (heldUntil = renewing),
      () => {},
    );
  }, idempotency.renewEveryMs);
  heartbeat.unref();
  let json: string;
  try {
    json = await produce(key);
  } catch (error) {
    await idempotency.release(call.accountId, key).catch(() => releaseWhileHeld(idempotency, call.accountId, key, heldUntil));
    throw error;
  } finally {
    clearInterval(heartbeat);
  }
  await idempotency.complete(call.accountId, key, json);
  return { json, replayed: false };
}

/**
 * Gives back the key of a failed request whose release did not reach the
 * database (it was away): tried again every half second while the key is
 * surely still this request's, so a retry once the database answers runs
 * rather than meeting `idempotency_key_in_progress` for the rest of the
 * lease. Past that (less a second for a delete under way), another
 * instance may have taken the key over, and only the lease frees it.
 */
function releaseWhileHeld(idempotency: IdempotencyStore, accountId: string, key: string, heldUntil: number): void {
  const retry = setTimeout(() => {
    if (Date.now() > heldUntil - 1000) return;
    idempotency.release(accountId, key).catch(() => releaseWhileHeld(idempotency, accountId, key, heldUntil));
  }, 500);
  retry.unref();
}
