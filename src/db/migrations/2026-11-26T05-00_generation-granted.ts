import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// How many creates the last statement to touch a counter row granted: one
// statement may now carry several creates of one account, and an upsert's
// RETURNING sees only the new count, so it keeps what it added beside it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("generation_counts")
    .addColumn("granted", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("generation_counts").dropColumn("granted").execute();
}
