import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// A deleted plan's files, still to be swept: written in the delete's own
// transaction, so whichever instance comes first removes them even when the
// instance that took the delete stopped, and again once a stage that was
// still writing them has stopped.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("deleted_plans")
    .addColumn("plan_id", "text", (c) => c.primaryKey())
    .addColumn("slug", "text")
    .addColumn("revisions", "integer", (c) => c.notNull())
    .addColumn("deleted_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("sweeps", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("sweep_at", "timestamptz", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("deleted_plans_sweep_at").on("deleted_plans").column("sweep_at").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("deleted_plans").execute();
}
