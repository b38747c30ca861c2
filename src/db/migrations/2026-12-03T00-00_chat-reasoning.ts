import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("chat_reasoning")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("tool_call_id", "text", (c) => c.notNull())
    .addColumn("upstream", "text", (c) => c.notNull())
    .addColumn("reasoning", "text", (c) => c.notNull())
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("chat_reasoning_pkey", ["account_id", "tool_call_id"])
    .execute();
  await db.schema.createIndex("chat_reasoning_expires").on("chat_reasoning").column("expires_at").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("chat_reasoning").execute();
}
