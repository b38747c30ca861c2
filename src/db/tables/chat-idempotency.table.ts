import type { ColumnType } from "kysely";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * One `Idempotency-Key` of one account: the hash of the request it first
 * came with and, once served, the response to replay for 24 hours.
 */
export interface ChatIdempotencyKeyTable {
  account_id: string;
  key: string;
  /** SHA-256 of the request body as parsed JSON, in its keys' order. */
  request_hash: string;
  /** The same with the body's keys sorted; null in rows written before it was kept. */
  sorted_hash: ColumnType<string | null, string | null | undefined, string | null>;
  /** `in_flight` while the first request runs, then `done`. */
  state: "in_flight" | "done";
  /** The completion JSON exactly as first sent; null while in flight. */
  response: string | null;
  /** An in-flight row whose lease has passed belongs to a request that died with its instance. */
  lease_until: Timestamp;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: Timestamp;
}
