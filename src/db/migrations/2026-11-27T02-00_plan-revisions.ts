import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// The revisions asked for at the approval gate, oldest first, kept on the
// plan row so a revision is written in the same statement as the plan's
// change back to `running` (and its history event).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("plans")
    .addColumn("revisions", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("plans").dropColumn("revisions").execute();
}
