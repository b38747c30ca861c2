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
  /** The conversation so far as chat messages (instructions excluded), this answer included: what a continuation sends before its own input. */
  messages: string;
  /** This request's own input items as `GET /v1/responses/{id}/input_items` lists them, each with its id (JSON); null when stored before the column. */
  input_items: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}
