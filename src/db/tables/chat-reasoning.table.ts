import type { ColumnType } from "kysely";

/**
 * A thinking model's reasoning for one assistant turn that called tools, by
 * the id of the turn's first call: what the gateway puts back as that
 * turn's `reasoning_content` when a later request carries the turn without
 * it (see ReasoningMemory).
 */
export interface ChatReasoningTable {
  account_id: string;
  /** The provider's id of the turn's first tool call. */
  tool_call_id: string;
  /** The configured upstream that wrote it: only that one is sent it back. */
  upstream: string;
  reasoning: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}
