import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { Account, ApiKeyRow } from "../db/tables/auth.table.js";
import { emailSpellings, normalizeEmail } from "./credentials.js";
import { hashPassword, hashToken, newApiKeySecret, newId, newSessionToken } from "./secrets.js";
import { SESSION_IDLE_MS, SESSION_TTL_MS } from "./session-cookie.js";

/** Repository functions for accounts, sessions and keys. Each takes `db` or a transaction. */

/** The account stored under one of the address's spellings, the one typed first (see emailSpellings). */
export async function findAccountByEmail(db: Kysely<Database>, email: string): Promise<Account | undefined> {
  const spellings = emailSpellings(email);
  const accounts = await db.selectFrom("accounts").selectAll().where("email", "in", spellings).execute();
  return spellings.map((spelling) => accounts.find((account) => account.email === spelling)).find((account) => account !== undefined);
}

export async function findAccount(db: Kysely<Database>, id: string): Promise<Account | undefined> {
  return db.selectFrom("accounts").selectAll().where("id", "=", id).executeTakeFirst();
}

export type CreateAccountResult = { account: Account; session: { id: string; token: string } } | { refused: "email_taken" | "signup_closed" };

/**
 * Creates an account, stored composed, and its first session; refused when
 * the address is taken under any of its spellings. With `onlyFirst`, succeeds
 * only while no account exists; the check and the insert happen under one
 * lock so two sign-ups cannot both be "first".
 */
export async function createAccount(db: Kysely<Database>, input: { email: string; password: string; onlyFirst: boolean }): Promise<CreateAccountResult> {
  const passwordHash = await hashPassword(input.password);
  return db.transaction().execute(async (trx) => {
    if (input.onlyFirst) {
      await sql`select pg_advisory_xact_lock(hashtext('zero.accounts.first'))`.execute(trx);
      const any = await trx.selectFrom("accounts").select("id").limit(1).executeTakeFirst();
      if (any) return { refused: "signup_closed" as const };
    }
    // Two sign-ups racing for one address both insert its composed form, and the unique index refuses one.
    const taken = await trx.selectFrom("accounts").select("id").where("email", "in", emailSpellings(input.email)).executeTakeFirst();
    if (taken) return { refused: "email_taken" as const };
    const account = await trx
      .insertInto("accounts")
      .values({ id: newId("acc"), email: normalizeEmail(input.email), password_hash: passwordHash })
      .onConflict((oc) => oc.column("email").doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!account) return { refused: "email_taken" as const };
    // Its own transaction holds the row as written: the session is always made.
    const session = (await createSession(trx, account))!;
    return { account, session };
  });
}

/**
 * Starts a session, provided the account's password is still the one the
 * caller verified (`account.password_hash` as it was read), and returns the
 * cookie token, which is stored only as a hash; undefined when the password
 * has changed since. The account row is read FOR SHARE: a change holding it
 * makes this wait and then see the new hash, and a change that comes later
 * waits for this session, which its revocation then ends.
 */
export async function createSession(
  db: Kysely<Database>,
  account: Pick<Account, "id" | "password_hash">,
  now = new Date(),
): Promise<{ id: string; token: string } | undefined> {
  const token = newSessionToken();
  const id = newId("ses");
  const created = await db
    .insertInto("sessions")
    .columns(["id", "account_id", "token_hash", "expires_at"])
    .expression((eb) =>
      eb
        .selectFrom("accounts")
        .select([
          sql<string>`${id}::text`.as("id"),
          "accounts.id",
          sql<string>`${hashToken(token)}::text`.as("token_hash"),
          sql<Date>`${new Date(now.getTime() + SESSION_TTL_MS)}::timestamptz`.as("expires_at"),
        ])
        .where("accounts.id", "=", account.id)
        .where("accounts.password_hash", "=", account.password_hash)
        .forShare(),
    )
    .returning("id")
    .executeTakeFirst();
  return created ? { id, token } : undefined;
}

/**
 * Deletes the sessions no cookie can use again: revoked (signed out, a
 * password changed), past their cap, or idle past SESSION_IDLE_MS. Run now
 * and then; a live session is never touched.
 */
export async function deleteEndedSessions(db: Kysely<Database>, now = new Date()): Promise<number> {
  const result = await db
    .deleteFrom("sessions")
    .where((eb) => eb.or([eb("revoked_at", "is not", null), eb("expires_at", "<=", now), eb("last_used_at", "<=", new Date(now.getTime() - SESSION_IDLE_MS))]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * The session for a cookie token, unless it is revoked, past its 30-day cap,
 * or unused for a week. Use is recorded at most once a minute, after the
 * answer, so a busy session does not write on every request.
 */
export async function findLiveSession(db: Kysely<Database>, token: string, now = new Date()) {
  const session = await db
    .selectFrom("sessions")
    .select(["id", "account_id", "last_used_at"])
    .where("token_hash", "=", hashToken(token))
    .where("revoked_at", "is", null)
    .where("expires_at", ">", now)
    .where("last_used_at", ">", new Date(now.getTime() - SESSION_IDLE_MS))
    .executeTakeFirst();
  if (session && now.getTime() - session.last_used_at.getTime() > 60_000) {
    void db
      .updateTable("sessions")
      .set({ last_used_at: now })
      .where("id", "=", session.id)
      .execute()
      .catch(() => {});
  }
  return session;
}

/**
 * Replaces the password, provided it is still the one the caller verified,
 * ends every session of the account and starts one for the caller, all in one
 * transaction: a sign-in that verified the old password can start no session
 * after it (see createSession). Undefined when the password changed meanwhile.
 */
export async function changePassword(
  db: Kysely<Database>,
  account: Pick<Account, "id" | "password_hash">,
  newPassword: string,
): Promise<{ id: string; token: string } | undefined> {
  const passwordHash = await hashPassword(newPassword);
  return db.transaction().execute(async (trx) => {
    const changed = await trx
      .updateTable("accounts")
      .set({ password_hash: passwordHash })
      .where("id", "=", account.id)
      .where("password_hash", "=", account.password_hash)
      .returning(["id", "password_hash"])
      .executeTakeFirst();
    if (!changed) return undefined;
    await trx.updateTable("sessions").set({ revoked_at: sql`now()` }).where("account_id", "=", account.id).where("revoked_at", "is", null).execute();
    return createSession(trx, changed);
  });
}

/** Most live (unrevoked) keys one account may hold. */
export const MAX_LIVE_KEYS = 100;

export async function revokeSession(db: Kysely<Database>, sessionId: string): Promise<void> {
  await db.updateTable("sessions").set({ revoked_at: sql`now()` }).where("id", "=", sessionId).execute();
}

/**
 * Creates a key and returns its secret, which is never stored and never
 * shown again; `undefined` when the account already holds MAX_LIVE_KEYS live
 * keys. The account row is locked while counting, so two creates at 99
 * cannot both succeed.
 */
export async function createApiKey(
  db: Kysely<Database>,
  input: { accountId: string; name: string; scopes: string[] },
): Promise<{ secret: string; key: ApiKeyRow } | undefined> {
  const secret = newApiKeySecret();
  return db.transaction().execute(async (trx) => {
    await trx.selectFrom("accounts").select("id").where("id", "=", input.accountId).forUpdate().executeTakeFirst();
    const { live } = await trx
      .selectFrom("api_keys")
      .select((eb) => eb.fn.countAll<number>().as("live"))
      .where("account_id", "=", input.accountId)
      .where("revoked_at", "is", null)
      .executeTakeFirstOrThrow();
    if (live >= MAX_LIVE_KEYS) return undefined;
    const key = await trx
      .insertInto("api_keys")
      .values({
        id: newId("key"),
        account_id: input.accountId,
        name: input.name,
        prefix: secret.slice(0, 10),
        secret_hash: hashToken(secret),
        scopes: input.scopes,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { secret, key };
  });
}

export async function findLiveApiKey(db: Kysely<Database>, secret: string) {
  return db
    .selectFrom("api_keys")
    .select(["id", "account_id", "scopes", "last_used_at"])
    .where("secret_hash", "=", hashToken(secret))
    .where("revoked_at", "is", null)
    .executeTakeFirst();
}

export async function listApiKeys(db: Kysely<Database>, accountId: string): Promise<ApiKeyRow[]> {
  return db.selectFrom("api_keys").selectAll().where("account_id", "=", accountId).orderBy("created_at", "desc").orderBy("id").execute();
}

/** NOTIFY channel of key revocations; the payload is the key's id. */
export const API_KEY_REVOKED_CHANNEL = "zero_api_key_revoked";

/**
 * Revokes one of the account's keys; false when it has no such key. The
 * notification is part of the same statement, so it is sent exactly when
 * the revocation commits and every instance can drop the key from memory.
 */
export async function revokeApiKey(db: Kysely<Database>, accountId: string, keyId: string): Promise<boolean> {
  const notified = await db
    .with("revoked", (qb) =>
      qb
        .updateTable("api_keys")
        .set({ revoked_at: sql`coalesce(revoked_at, now())` })
        .where("id", "=", keyId)
        .where("account_id", "=", accountId)
        .returning("id"),
    )
    .selectFrom("revoked")
    .select(sql<unknown>`pg_notify(${API_KEY_REVOKED_CHANNEL}, revoked.id)`.as("notified"))
    .execute();
  return notified.length > 0;
}

/** Records use at most once a minute per key, so a busy key does not write on every request. */
export async function touchApiKey(db: Kysely<Database>, keyId: string): Promise<void> {
  await db
    .updateTable("api_keys")
    .set({ last_used_at: sql`now()` })
    .where("id", "=", keyId)
    .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", sql<Date>`now() - interval '1 minute'`)]))
    .execute();
}
