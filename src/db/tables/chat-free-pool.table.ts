import type { ColumnType } from "kysely";

/**
 * The shared free pool, one row per UTC day: how many units instances hold
 * or have spent. Instances reserve blocks of units here and give back what
 * they did not use, so `granted` never exceeds the daily capacity and the
 * row is touched once per block, not once per request.
 */
export interface ChatFreePoolTable {
  /** `YYYY-MM-DD`, UTC. Text, so both drivers read it back the same. */
  day: string;
  granted: number;
  /** Units the last reservation took (an upsert's RETURNING sees only the new `granted`). */
  last_grant: ColumnType<number, number | undefined, number>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}
