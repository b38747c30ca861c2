import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("plan_events")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("plan_id", "text", (c) => c.notNull().references("plans.id").onDelete("cascade"))
    .addColumn("at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("stage", "text")
    .addColumn("attempt", "integer")
    .addColumn("detail", "jsonb")
    .execute();
  await db.schema.createIndex("plan_events_plan").on("plan_events").columns(["plan_id", "id"]).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("plan_events").execute();
}
