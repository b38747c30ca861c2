import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("plans")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("goal", "text", (c) => c.notNull())
    .addColumn("outcome", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("progress", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("resumable", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("warning", "text")
    .addColumn("preview_url", "text")
    .addColumn("published_url", "text")
    .addColumn("project", "jsonb")
    .addColumn("approved", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn("version", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`CREATE INDEX plans_account_recent_idx ON plans (account_id, created_at DESC, id DESC)`.execute(db);

  await db.schema
    .createTable("plan_stages")
    .addColumn("plan_id", "text", (c) => c.notNull().references("plans.id").onDelete("cascade"))
    .addColumn("position", "smallint", (c) => c.notNull())
    .addColumn("stage_id", "text", (c) => c.notNull())
    .addColumn("title", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("error_type", "text")
    .addColumn("error_message", "text")
    .addColumn("output", "jsonb")
    .addColumn("progress", "real", (c) => c.notNull().defaultTo(0))
    .addColumn("ready_at", "timestamptz")
    .addColumn("lease_owner", "text")
    .addColumn("lease_token", "bigint")
    .addColumn("lease_expires_at", "timestamptz")
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("plan_stages_pk", ["plan_id", "position"])
    .execute();
  // The queue: running stages no worker holds, oldest first. Partial, so it stays as small as the backlog.
  await sql`CREATE INDEX plan_stages_ready_idx ON plan_stages (ready_at) WHERE state = 'running' AND lease_token IS NULL`.execute(db);
  // Leases in force, for finding the ones whose worker died.
  await sql`CREATE INDEX plan_stages_leased_idx ON plan_stages (lease_expires_at) WHERE lease_token IS NOT NULL`.execute(db);
  await sql`CREATE SEQUENCE plan_stage_lease_tokens`.execute(db);

  await db.schema
    .createTable("generation_counts")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("window_start", "timestamptz", (c) => c.notNull())
    .addColumn("count", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("generation_counts_pk", ["account_id", "window_start"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("generation_counts").execute();
  await sql`DROP SEQUENCE plan_stage_lease_tokens`.execute(db);
  await db.schema.dropTable("plan_stages").execute();
  await db.schema.dropTable("plans").execute();
}
