import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// An Idempotency-Key is also bound to the body with its keys sorted, so a
// retry whose JSON has its keys in another order replays. The in-order
// digest stays in request_hash, which every earlier version compares.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("chat_idempotency_keys").addColumn("sorted_hash", "text").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("chat_idempotency_keys").dropColumn("sorted_hash").execute();
}
