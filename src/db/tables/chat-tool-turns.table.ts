import type { ColumnType } from "kysely";

/**
 * One tool call of an assistant turn whose provider needs something of it
 * back in later requests (a thinking model's reasoning, a call's thought
 * signature): see ToolTurnMemory. By our id of the call, which is unique.
 */
export interface ChatToolTurnTable {
  account_id: string;
  /** Our id of the call, as the client has it. */
  tool_call_id: string;
  /** Our id of the turn's first call: the calls of one turn share it. */
  turn_id: string;
  /** The configured upstream that wrote the turn: only that one is sent it back. */
  upstream: string;
  /** The turn's message fields to send back (JSON object: `reasoning_content`, `reasoning_details`), on its first call's row only; `{}` on the others. */
  message_fields: string;
  /** This call's fields to send back (JSON object: `extra_content`), or null. */
  call_fields: string | null;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}
