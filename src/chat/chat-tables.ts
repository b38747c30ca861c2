import type { ChatAccountDayTable } from "./account-days.table.js";
import type { ChatFreePoolTable } from "./free-pool.table.js";
import type { ChatIdempotencyKeyTable } from "./idempotency.table.js";

/** The chat capability's tables, merged into `Database`. */
export interface ChatTables {
  chat_free_pool: ChatFreePoolTable;
  chat_account_days: ChatAccountDayTable;
  chat_idempotency_keys: ChatIdempotencyKeyTable;
}
