import fs from "node:fs";

/** The free pool's book at the end of the soak, with the instances stopped. */
export interface PoolAudit {
  capacity: number;
  /** `granted` summed over the days the soak touched: units instances took and never gave back. */
  granted: number;
  /** The largest `granted` of one day (the bound is per day). */
  grantedMaxDay: number;
  /** Exchanges the upstream answered with a 2xx head: units actually spent. */
  served: number;
  /** Units an instance gave back locally but could not write back (the database was away), from its log. */
  failedGiveBacks: number;
  /** granted − served − failedGiveBacks: the unspent block a SIGKILLed instance took with it. */
  lostWithKilled: number;
  overSpend: number;
}

/**
 * Reads the pool row(s) and compares them with what the upstream served.
 * Run after every instance stopped gracefully, so no unit is still held:
 * `granted` is then spent units plus units lost with a killed instance
 * (free-pool.ts: "an instance that dies loses its block") plus give-backs the
 * database missed. Serving more than was granted would be over-spending.
 */
/** Runs one SQL query and answers its rows. */
export type Query = <R extends Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;

export async function auditPool(query: Query, capacity: number, served: number, logFiles: string[]): Promise<PoolAudit> {
  const rows = await query<{ day: string; granted: number }>("select day, granted from chat_free_pool");
  const granted = rows.reduce((n, r) => n + Number(r.granted), 0);
  const grantedMaxDay = rows.reduce((n, r) => Math.max(n, Number(r.granted)), 0);
  let failedGiveBacks = 0;
  for (const file of logFiles) {
    for (const line of fs.readFileSync(file, "utf8").split("\n")) {
      if (!line.includes("could not give free pool units back")) continue;
      try {
        failedGiveBacks += Number((JSON.parse(line) as { count?: number }).count ?? 0);
      } catch {
        // Not a JSON line (stderr); nothing to count.
      }
    }
  }
  return {
    capacity,
    granted,
    grantedMaxDay,
    served,
    failedGiveBacks,
    lostWithKilled: granted - served - failedGiveBacks,
    overSpend: Math.max(0, served - granted, grantedMaxDay - capacity),
  };
}
