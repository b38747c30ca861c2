import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("chat_account_days")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("day", "text", (c) => c.notNull())
    .addColumn("requests", "integer", (c) => c.notNull().check(sql`requests >= 0`))
    .addPrimaryKeyConstraint("chat_account_days_pk", ["account_id", "day"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("chat_account_days").execute();
}
