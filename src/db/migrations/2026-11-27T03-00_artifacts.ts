import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// Built artifacts in the database (ZERO_ARTIFACTS=postgres): each distinct
// content once, by its sha256, and a key → content table beside it. Keys use
// the "C" collation so a prefix is a plain index range scan.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("artifact_blobs")
    .addColumn("sha256", "text", (c) => c.primaryKey())
    .addColumn("size", "integer", (c) => c.notNull())
    .addColumn("body", "bytea", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable("artifact_files")
    .addColumn("key", sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn("sha256", "text", (c) => c.notNull().references("artifact_blobs.sha256"))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // The foreign key's lookups when a blob is collected.
  await db.schema.createIndex("artifact_files_sha256").on("artifact_files").column("sha256").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("artifact_files").execute();
  await db.schema.dropTable("artifact_blobs").execute();
}
