import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// How many units the last reservation took from a day's row: a reservation is
// now one upsert, whose RETURNING sees only the new `granted`, so it keeps what
// it added beside it (as generation_counts.granted does).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("chat_free_pool")
    .addColumn("last_grant", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("chat_free_pool").dropColumn("last_grant").execute();
}
