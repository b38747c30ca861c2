import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("chat_free_pool")
    .addColumn("day", "text", (c) => c.primaryKey())
    .addColumn("granted", "integer", (c) => c.notNull().check(sql`granted >= 0`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable("chat_idempotency_keys")
    .addColumn("account_id", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("request_hash", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("response", "text")
    .addColumn("lease_until", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("chat_idempotency_keys_pk", ["account_id", "key"])
    .execute();
  await db.schema.createIndex("chat_idempotency_keys_expiry_idx").on("chat_idempotency_keys").column("expires_at").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("chat_idempotency_keys").execute();
  await db.schema.dropTable("chat_free_pool").execute();
}
