import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// A plan's history entry is timed when it is written, not when its
// transaction began: a write that began first but waited for the plan's lock
// is listed after the one that held it, and its time now says so too.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("plan_events")
    .alterColumn("at", (c) => c.setDefault(sql`clock_timestamp()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("plan_events")
    .alterColumn("at", (c) => c.setDefault(sql`now()`))
    .execute();
}
