import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { ServiceError } from "../server/errors.js";

export interface SignInLimits {
  perEmail: number;
  perAddress: number;
  windowSeconds: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = { perEmail: 10, perAddress: 50, windowSeconds: 900 };

/**
 * Counts sign-in attempts per email and per client address in fixed windows,
 * in Postgres so every instance shares the count. Called before the password
 * is checked, for known and unknown emails alike, so the answer never hints
 * whether an email exists.
 */
export async function checkSignInAllowed(
  db: Kysely<Database>,
  input: { email: string; address: string },
  limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS,
  now = new Date(),
): Promise<void> {
  const windowMs = limits.windowSeconds * 1000;
  const windowStart = new Date(Math.floor(now.getTime() / windowMs) * windowMs);
  const buckets: [string, number][] = [
    [`email:${input.email}`, limits.perEmail],
    [`addr:${input.address || "unknown"}`, limits.perAddress],
  ];
  for (const [bucket, limit] of buckets) {
    const row = await db
      .insertInto("sign_in_attempts")
      .values({ bucket, window_start: windowStart, attempts: 1 })
      .onConflict((oc) => oc.columns(["bucket", "window_start"]).doUpdateSet({ attempts: sql`sign_in_attempts.attempts + 1` }))
      .returning("attempts")
      .executeTakeFirstOrThrow();
    if (row.attempts > limit) {
      const retryAfter = Math.max(1, Math.ceil((windowStart.getTime() + windowMs - now.getTime()) / 1000));
      throw new ServiceError("rate_limited", "too many sign-in attempts; try again later", {
        headers: { "Retry-After": String(retryAfter) },
      });
    }
  }
  // Old windows are of no further use.
  if (Math.random() < 0.01) {
    await db.deleteFrom("sign_in_attempts").where("window_start", "<", new Date(windowStart.getTime() - windowMs)).execute();
  }
}
