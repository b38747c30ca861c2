import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// The input items a stored response was asked with, as GET /v1/responses/{id}/input_items lists them
// (each with its id). Null for a response stored before this column: it lists no items.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("chat_responses").addColumn("input_items", "text").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("chat_responses").dropColumn("input_items").execute();
}
