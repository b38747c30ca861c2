import { sql, type Kysely, type RawBuilder } from "kysely";
import { MAX_GENERATION_WINDOW_SECONDS } from "../api/limits.js";
import type { Database } from "../db/schema.js";

/** How many generations an account may start per window, and the window's length. */
export interface GenerationWindow {
  limit: number;
  windowSeconds: number;
}

/** Where an account stands in the current generation window. */
export interface GenerationUsage {
  limit: number;
  /** Creations counted in the window so far. */
  used: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/**
 * The `RateLimit-*` headers (IETF draft: limit, remaining, seconds to reset)
 * sent with every create, resume and revision answer, and with the 429 that
 * refuses a create or a revision.
 */
export function rateLimitHeaders(usage: GenerationUsage): Record<string, string> {
  return {
    "RateLimit-Limit": String(usage.limit),
    "RateLimit-Remaining": String(Math.max(0, usage.limit - usage.used)),
    "RateLimit-Reset": String(Math.ceil(usage.resetSeconds)),
  };
}

/** Headers of a 429: the RateLimit-* set plus `Retry-After` in whole seconds. */
export function limitReachedHeaders(usage: GenerationUsage): Record<string, string> {
  return { ...rateLimitHeaders(usage), "Retry-After": String(Math.max(1, Math.ceil(usage.resetSeconds))) };
}

/**
 * The start of the current window, as SQL: fixed windows of
 * `windowSeconds`, aligned on the database clock, the same on every instance.
 */
export function windowStart(window: GenerationWindow): RawBuilder<Date> {
  return sql<Date>`to_timestamp(floor(extract(epoch FROM now()) / ${window.windowSeconds}) * ${window.windowSeconds})`;
}

/** Seconds from now until the window that began at `start` resets, as SQL. */
export function resetSeconds(window: GenerationWindow, start: RawBuilder<Date>): RawBuilder<number> {
  return sql<number>`extract(epoch FROM ${start} + make_interval(secs => ${window.windowSeconds}) - now())::float8`;
}

/** Reads the account's usage of the current window without counting anything (resumes are free). */
export async function readGenerationUsage(db: Kysely<Database>, accountId: string, window: GenerationWindow): Promise<GenerationUsage> {
  const { rows } = await sql<{ used: number; reset_seconds: number }>`
    WITH win AS (SELECT ${windowStart(window)} AS start)
    SELECT coalesce(g.count, 0) AS used, ${resetSeconds(window, sql`win.start`)} AS reset_seconds
    FROM win LEFT JOIN generation_counts AS g ON g.account_id = ${accountId} AND g.window_start = win.start
  `.execute(db);
  const row = rows[0]!;
  return { limit: window.limit, used: Number(row.used), resetSeconds: Math.max(0, Number(row.reset_seconds)) };
}

/**
 * Counts one generation (a revision) for the account in the current window
 * if that stays within the limit; run inside the revision's transaction, so
 * a refused or rolled-back revision counts nothing. Same window as creates.
 */
export async function spendGeneration(
  db: Kysely<Database>,
  accountId: string,
  window: GenerationWindow,
): Promise<{ granted: boolean; usage: GenerationUsage }> {
  const { rows } = await sql<{ count: number | null; reset_seconds: number }>`
    WITH win AS (SELECT ${windowStart(window)} AS start),
    counter AS (
      INSERT INTO generation_counts AS c (account_id, window_start, count, granted)
      SELECT ${accountId}, win.start, 1, 1 FROM win WHERE ${window.limit}::int > 0
      ON CONFLICT (account_id, window_start) DO UPDATE SET count = c.count + 1, granted = 1
        WHERE c.count < ${window.limit}::int
      RETURNING count
    )
    SELECT (SELECT count FROM counter) AS count, ${resetSeconds(window, sql`win.start`)} AS reset_seconds
    FROM win
  `.execute(db);
  const row = rows[0]!;
  const granted = row.count !== null;
  return {
    granted,
    usage: { limit: window.limit, used: granted ? Number(row.count) : window.limit, resetSeconds: Math.max(0, Number(row.reset_seconds)) },
  };
}

/** The longest window the configuration accepts, and a day to spare: a counter whose window began longer ago is over. */
const GENERATION_COUNT_HORIZON_SECONDS = MAX_GENERATION_WINDOW_SECONDS + 86_400;

/** Forgets the generation counts of windows long past. */
export async function pruneGenerationCounts(db: Kysely<Database>): Promise<void> {
  await db.deleteFrom("generation_counts").where("window_start", "<", sql<Date>`now() - make_interval(secs => ${GENERATION_COUNT_HORIZON_SECONDS})`).execute();
}
