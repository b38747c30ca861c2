import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// A stored response keeps its own turn (its input and its answer) and the id of the response it continues,
// rather than a copy of the whole conversation: a conversation of n turns was stored n times over, its size
// growing with the square of its length. Rows stored before keep their whole conversation in `messages`
// (a chain's first link); rows stored from now have it null, so a continuation read by an instance of an
// earlier version during a rolling upgrade fails, rather than going on without what came before.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("chat_responses")
    .addColumn("previous_id", "text")
    .addColumn("turn_messages", "text")
    .alterColumn("messages", (column) => column.dropNotNull())
    .execute();
  await db.schema.createIndex("chat_responses_previous").on("chat_responses").column("previous_id").where(sql.ref("previous_id"), "is not", null).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("chat_responses_previous").execute();
  await db.schema.alterTable("chat_responses").dropColumn("previous_id").dropColumn("turn_messages").execute();
}
