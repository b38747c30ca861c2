import type { Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// How many times a stage was retried in place after a transient error since
// its run began (a create, resume or revision starts it at 0): the cap on
// automatic retries counts these, not `attempts`, which resumes also raise.
// The wait itself is the stage's `ready_at`, set in the future.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("plan_stages")
    .addColumn("retries", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("plan_stages").dropColumn("retries").execute();
}
