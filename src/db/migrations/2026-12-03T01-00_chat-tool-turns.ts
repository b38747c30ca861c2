import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// Replaces chat_reasoning, keyed by a provider's call id, which is not
// unique (Kimi counts from 0 in every answer): one conversation could be
// sent another's reasoning. Calls now have ids of our own, unique, and a
// turn keeps what its provider needs back per call.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("chat_reasoning").execute();
  await db.schema
    .createTable("chat_tool_turns")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("tool_call_id", "text", (c) => c.notNull())
    .addColumn("turn_id", "text", (c) => c.notNull())
    .addColumn("upstream", "text", (c) => c.notNull())
    .addColumn("message_fields", "text", (c) => c.notNull())
    .addColumn("call_fields", "text")
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("chat_tool_turns_pkey", ["account_id", "tool_call_id"])
    .execute();
  await db.schema.createIndex("chat_tool_turns_expires").on("chat_tool_turns").column("expires_at").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("chat_tool_turns").execute();
}
