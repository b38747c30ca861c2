import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { GenerationWindow } from "./plan-repository.js";

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
 * sent with every POST /api/execution answer, refusals included.
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

/** Reads the account's usage of the current window without counting anything (resumes are free). */
export async function readGenerationUsage(db: Kysely<Database>, accountId: string, window: GenerationWindow): Promise<GenerationUsage> {
  const { rows } = await sql<{ used: number; reset_seconds: number }>`
    WITH win AS (
      SELECT to_timestamp(floor(extract(epoch FROM now()) / ${window.windowSeconds}) * ${window.windowSeconds}) AS start
    )
    SELECT coalesce(g.count, 0) AS used,
      extract(epoch FROM win.start + make_interval(secs => ${window.windowSeconds}) - now())::float8 AS reset_seconds
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
    WITH win AS (
      SELECT to_timestamp(floor(extract(epoch FROM now()) / ${window.windowSeconds}) * ${window.windowSeconds}) AS start
    ),
    counter AS (
      INSERT INTO generation_counts AS c (account_id, window_start, count, granted)
      SELECT ${accountId}, win.start, 1, 1 FROM win WHERE ${window.limit}::int > 0
      ON CONFLICT (account_id, window_start) DO UPDATE SET count = c.count + 1, granted = 1
        WHERE c.count < ${window.limit}::int
      RETURNING count
    )
    SELECT (SELECT count FROM counter) AS count,
      extract(epoch FROM win.start + make_interval(secs => ${window.windowSeconds}) - now())::float8 AS reset_seconds
    FROM win
  `.execute(db);
  const row = rows[0]!;
  const granted = row.count !== null;
  return {
    granted,
    usage: { limit: window.limit, used: granted ? Number(row.count) : window.limit, resetSeconds: Math.max(0, Number(row.reset_seconds)) },
  };
}
