import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("sign_in_known_addresses")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("last_success_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("sign_in_known_addresses_pk", ["account_id", "address"])
    .execute();
  // Sessions end after a week unused, beside their 30-day cap.
  await db.schema
    .alterTable("sessions")
    .addColumn("last_used_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("sessions").dropColumn("last_used_at").execute();
  await db.schema.dropTable("sign_in_known_addresses").execute();
}
