import type { ColumnType } from "kysely";

/**
 * One stored Responses API answer (`store` true, the default), kept for 30
 * days for `GET /v1/responses/{id}` and `previous_response_id`.
 */
export interface ChatResponseTable {
  /** `resp_…` */
  id: string;
  account_id: string;
  /** The response object exactly as sent. */
  response: string;
  /**
   * Rows stored before `turn_messages`: the whole conversation so far as chat
   * messages (instructions excluded), this answer included. Null since.
   */
  messages: ColumnType<string | null, string | null | undefined, string | null>;
  /** The response this one continues (`previous_response_id`), whose conversation comes before this turn's; null for a first turn. */
  previous_id: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * This turn as chat messages: the request's input and the answer. A
   * continuation sends the turns of the chain that `previous_id` links, oldest
   * first, then its own input.
   */
  turn_messages: ColumnType<string | null, string | null | undefined, string | null>;
  /** This request's own input items as `GET /v1/responses/{id}/input_items` lists them, each with its id (JSON); null when stored before the column. */
  input_items: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}
