import type { ColumnType, Generated } from "kysely";
import type { ArtifactTables } from "./tables/artifacts.table.js";
import type { AuthTables } from "./tables/auth.table.js";
import type { ChatTables } from "./tables/chat.tables.js";
import type { ExecutionTables } from "./tables/executions.table.js";

/**
 * The database as Kysely sees it: one entry per table, the tables of each
 * feature in its own file under `tables/`. Migrations in `migrations/`
 * create exactly these shapes.
 */
export interface Database extends AuthTables, ExecutionTables, ChatTables, ArtifactTables {
  service_instances: ServiceInstanceTable;
}

/** The instances that run on this database or were seen in the last week (`seen_at`, marked hourly); a stage's `lease_owner` names one. */
export interface ServiceInstanceTable {
  id: string;
  hostname: string;
  pid: number;
  started_at: ColumnType<Date, Date | string | undefined, never>;
  seen_at: ColumnType<Date, Date | string | undefined, Date | string>;
  version: string;
  seq: Generated<number>;
}
