import type { ChatAccountDayTable } from "./chat-account-days.table.js";
import type { ChatFreePoolTable } from "./chat-free-pool.table.js";
import type { ChatIdempotencyKeyTable } from "./chat-idempotency.table.js";
import type { ChatResponseTable } from "./chat-responses.table.js";
import type { ChatToolTurnTable } from "./chat-tool-turns.table.js";

/** The chat capability's tables, merged into `Database`. */
export interface ChatTables {
  chat_free_pool: ChatFreePoolTable;
  chat_account_days: ChatAccountDayTable;
  chat_idempotency_keys: ChatIdempotencyKeyTable;
  chat_responses: ChatResponseTable;
  chat_tool_turns: ChatToolTurnTable;
}
