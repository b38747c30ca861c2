import { isIPv6 } from "node:net";
import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { ServiceError } from "../server/errors.js";
import type { Account } from "../db/tables/auth.table.js";
import { normalizeEmail } from "./credentials.js";

export interface SignInLimits {
  /** Failed sign-ins one address may make for one e-mail per window. */
  perPair: number;
  /** Failed sign-ins for one e-mail from addresses it never signed in from, per window. */
  perEmail: number;
  /** Failed sign-ins from one address across all e-mails, per window. */
  perAddress: number;
  windowSeconds: number;
  /** Sign-up attempts one address may make per hour. */
  signUpsPerAddressPerHour: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = {
  perPair: 10,
  perEmail: 50,
  perAddress: 50,
  windowSeconds: 900,
  signUpsPerAddressPerHour: 20,
};

/** How long an address an account signed in from stays trusted for that account. */
const KNOWN_ADDRESS_DAYS = 30;

/** What the caller must report once the password has been checked. */
export interface SignInAttempt {
  /** The password was right: the pair's failures are cleared and the address is remembered. */
  succeeded(accountId: string): Promise<void>;
}

/**
 * Sign-in limits that bound guessing without letting a stranger lock the
 * owner out. Attempts are counted before the password is checked (so parallel
 * guesses cannot slip past a count read too early) and a success takes its
 * count back, so the counters hold failures. Three counters, in fixed windows,
 * in Postgres so every instance shares them:
 *
 * - (e-mail, address): a guesser at one address gets `perPair` tries, and is
 *   then refused even with the right password until the window ends;
 * - e-mail: guesses spread over many addresses are bounded by `perEmail`, but
 *   this counter never refuses an address the account signed in from in the
 *   last 30 days, so the owner at home is not locked out by an attack;
 * - address: one address guessing across many e-mails is bounded by
 *   `perAddress`, again except where it is known for that account.
 *
 * Unknown e-mails are counted exactly like known ones, so the answers never
 * tell whether an account exists.
 */
export async function beginSignIn(
  db: Kysely<Database>,
  input: { email: string; address: string; account: Pick<Account, "id" | "email"> | undefined },
  limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS,
  now = new Date(),
): Promise<SignInAttempt> {
  const address = limitedAddress(input.address);
  const window = fixedWindow(now, limits.windowSeconds);
  // Counted under the account the e-mail finds (`account`, its stored address), so guesses spread over its spellings
  // share one count, and the owner of another account of the same address in another spelling (an older version let
  // two in) neither resets that count with a sign-in of their own nor makes their address known for it. An e-mail
  // that finds none is counted under its composed form.
  const { account } = input;
  const stored = account?.email ?? normalizeEmail(input.email);
  const pair = `pair:${stored}|${address}`;
  const email = `email:${stored}`;
  const addr = `addr:${address}`;
  const counts = await countAttempt(db, [pair, email, addr], window.start);
  const known = account !== undefined && (await isKnownAddress(db, account.id, address, now));
  const overPair = counts.get(pair)! > limits.perPair;
  const overSpread = !known && (counts.get(email)! > limits.perEmail || counts.get(addr)! > limits.perAddress);
  if (overPair || overSpread) throw tooMany("too many sign-in attempts; try again later", window.retryAfterSeconds(now));
  if (Math.random() < 0.01) await forgetOldWindows(db, window.start, limits.windowSeconds);
  return {
    async succeeded(accountId) {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom("sign_in_attempts").where("bucket", "=", pair).execute();
        await trx
          .updateTable("sign_in_attempts")
          .set({ attempts: sql`greatest(attempts - 1, 0)` })
          .where("bucket", "in", [email, addr])
          .where("window_start", "=", window.start)
          .execute();
        await trx
          .insertInto("sign_in_known_addresses")
          .values({ account_id: accountId, address, last_success_at: now })
          .onConflict((oc) => oc.columns(["account_id", "address"]).doUpdateSet({ last_success_at: now }))
          .execute();
      });
    },
  };
}

/** Counts a sign-up attempt from `address`, refusing past the hourly limit (before any password is hashed). */
export async function checkSignUpAllowed(
  db: Kysely<Database>,
  address: string,
  limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS,
  now = new Date(),
): Promise<void> {
  const window = fixedWindow(now, 3600);
  const bucket = `signup:${limitedAddress(address)}`;
  const counts = await countAttempt(db, [bucket], window.start);
  if (counts.get(bucket)! > limits.signUpsPerAddressPerHour) {
    throw tooMany("too many sign-ups from this address; try again later", window.retryAfterSeconds(now));
  }
}

/**
 * The unit the per-address limits count: an IPv4 address, or an IPv6
 * address's /64, which one subscriber is given whole (counted per address,
 * each of its 2^64 addresses had limits of its own).
 */
export function limitedAddress(address: string): string {
  if (address === "") return "unknown";
  if (!isIPv6(address)) return address;
  const [head = "", tail] = address.toLowerCase().split("%", 1)[0]!.split("::");
  const leading = head === "" ? [] : head.split(":");
  // Only the first four groups count, so `::` stands for zeros wherever it ends; a trailing IPv4 part never reaches them.
  const groups = tail === undefined ? leading : [...leading, "0", "0", "0", "0"];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(":")}::/64`;
}

function fixedWindow(now: Date, seconds: number) {
  const ms = seconds * 1000;
  const start = new Date(Math.floor(now.getTime() / ms) * ms);
  return {
    start,
    retryAfterSeconds: (at: Date) => Math.max(1, Math.ceil((start.getTime() + ms - at.getTime()) / 1000)),
  };
}

/** Adds one to each bucket in one statement and returns the new counts. */
async function countAttempt(db: Kysely<Database>, buckets: string[], windowStart: Date): Promise<Map<string, number>> {
  const rows = await db
    .insertInto("sign_in_attempts")
    .values(buckets.map((bucket) => ({ bucket, window_start: windowStart, attempts: 1 })))
    .onConflict((oc) => oc.columns(["bucket", "window_start"]).doUpdateSet({ attempts: sql`sign_in_attempts.attempts + 1` }))
    .returning(["bucket", "attempts"])
    .execute();
  return new Map(rows.map((row) => [row.bucket, row.attempts]));
}

async function isKnownAddress(db: Kysely<Database>, accountId: string, address: string, now: Date): Promise<boolean> {
  const since = new Date(now.getTime() - KNOWN_ADDRESS_DAYS * 86_400_000);
  const row = await db
    .selectFrom("sign_in_known_addresses")
    .select("address")
    .where("account_id", "=", accountId)
    .where("address", "=", address)
    .where("last_success_at", ">", since)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Deletes what the limits no longer read: counts of windows past (with the
 * typed e-mails and addresses they are kept under) and addresses an account
 * last signed in from more than KNOWN_ADDRESS_DAYS ago. Run now and then,
 * besides the occasional pruning at a sign-in, so a quiet server keeps none.
 */
export async function forgetStaleSignInRecords(db: Kysely<Database>, now = new Date(), limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS): Promise<void> {
  await forgetOldWindows(db, fixedWindow(now, limits.windowSeconds).start, limits.windowSeconds);
  await db
    .deleteFrom("sign_in_known_addresses")
    .where("last_success_at", "<=", new Date(now.getTime() - KNOWN_ADDRESS_DAYS * 86_400_000))
    .execute();
}

async function forgetOldWindows(db: Kysely<Database>, windowStart: Date, windowSeconds: number): Promise<void> {
  // Sign-up windows are an hour long: keep anything younger than that too.
  const keepFrom = new Date(windowStart.getTime() - Math.max(windowSeconds, 3600) * 1000);
  await db.deleteFrom("sign_in_attempts").where("window_start", "<", keepFrom).execute();
}

function tooMany(message: string, retryAfterSeconds: number): ServiceError {
  return new ServiceError("rate_limited", message, { headers: { "Retry-After": String(retryAfterSeconds) } });
}
