import type { ColumnType, Generated } from "kysely";
import type { AuthTables } from "../auth/auth.table.js";
import type { ChatTables } from "../chat/chat-tables.js";
import type { ExecutionTables } from "../executions/executions.table.js";

/**
 * The database as Kysely sees it: one entry per table, each defined in its own
 * `*.table.ts` file beside the code that owns it. Migrations in
 * `src/db/migrations/` create exactly these shapes.
 */
export interface Database extends AuthTables, ExecutionTables, ChatTables {
  service_instances: ServiceInstanceTable;
}

/** Instances that have started against this database; useful to operators and to lease diagnostics. */
export interface ServiceInstanceTable {
  id: string;
  hostname: string;
  pid: number;
  started_at: ColumnType<Date, Date | string | undefined, never>;
  seen_at: ColumnType<Date, Date | string | undefined, Date | string>;
  version: string;
  seq: Generated<number>;
}
