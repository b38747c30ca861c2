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
