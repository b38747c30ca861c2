import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("chat_responses")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("response", "text", (c) => c.notNull())
    .addColumn("messages", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("chat_responses_expires").on("chat_responses").column("expires_at").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("chat_responses").execute();
}
