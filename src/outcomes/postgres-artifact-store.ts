import { createHash } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { isValidKey, type ArtifactStore } from "./artifact-store.js";

/**
 * The store in the database itself (`ZERO_ARTIFACTS=postgres`, the default
 * with `DATABASE_URL`): every instance on that server serves every site, with
 * no shared disk and no extra server.
 *
 * Content-addressed: `artifact_blobs` holds each distinct content once under
 * its sha256 (a rebuilt site whose pages did not change adds no bytes), and
 * `artifact_files` maps each key to one. A blob no key names any more is
 * removed with its last key. Bodies are read whole: artifacts are pages,
 * stylesheets and books of a few hundred kilobytes at most, and callers take
 * bytes, not streams.
 *
 * A caller's signal is honoured between statements, not inside one: a
 * statement runs on a pooled connection until the server ends it, as every
 * other query of the service does. A database that is away fails the call
 * as the database's errors do everywhere (503 `unavailable`, a stage retried).
 */
export function createPostgresArtifactStore(db: Kysely<Database>): ArtifactStore {
  /** Removes blobs that no key names any more; a concurrent put that just named one again keeps it (the foreign key refuses the delete). */
  const collect = async (hashes: readonly string[]): Promise<void> => {
    if (hashes.length === 0) return;
    try {
      await sql`delete from artifact_blobs b where b.sha256 = any(${[...new Set(hashes)]}::text[])
        and not exists (select 1 from artifact_files f where f.sha256 = b.sha256)`.execute(db);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
    }
  };

  return {
    async put(key, body, options = {}) {
      checkKey(key);
      options.signal?.throwIfAborted();
      const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      const hash = createHash("sha256").update(bytes).digest("hex");
      // A blob collected between the two inserts fails the foreign key; the second try puts it back.
      for (let attempt = 1; ; attempt++) {
        try {
          // One statement: the blob if it is new, then the key. The foreign key is checked at its end.
          const written = options.ifAbsent
            ? await sql<{ old: string | null }>`with blob as (
                  insert into artifact_blobs (sha256, size, body) values (${hash}, ${bytes.byteLength}, ${bytes}) on conflict do nothing
                )
                insert into artifact_files (key, sha256) values (${key}, ${hash}) on conflict (key) do nothing
                returning null::text as old`.execute(db)
            : await sql<{ old: string | null }>`with blob as (
                  insert into artifact_blobs (sha256, size, body) values (${hash}, ${bytes.byteLength}, ${bytes}) on conflict do nothing
                ), previous as (
                  select sha256 from artifact_files where key = ${key}
                )
                insert into artifact_files (key, sha256) values (${key}, ${hash})
                on conflict (key) do update set sha256 = excluded.sha256, updated_at = now()
                returning (select sha256 from previous) as old`.execute(db);
          const row = written.rows[0];
          if (!row) {
            // The key was taken: the blob this statement may have added is nobody's.
            await collect([hash]);
            return false;
          }
          if (row.old && row.old !== hash) await collect([row.old]);
          return true;
        } catch (error) {
          if (attempt >= 3 || !isForeignKeyViolation(error)) throw error;
        }
      }
    },

    async get(key, options = {}) {
      options.signal?.throwIfAborted();
      if (!isValidKey(key)) return undefined;
      const row = await db
        .selectFrom("artifact_files as f")
        .innerJoin("artifact_blobs as b", "b.sha256", "f.sha256")
        .select("b.body")
        .where("f.key", "=", key)
        .executeTakeFirst();
      return row ? new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength) : undefined;
    },

    async list(prefix, options = {}) {
      options.signal?.throwIfAborted();
      const range = prefixRange(prefix);
      if (!range) return [];
      const rows = await db.selectFrom("artifact_files").select("key").where("key", ">=", range.from).where("key", "<", range.to).orderBy("key").execute();
      return rows.map((row) => row.key);
    },

    async remove(key, options = {}) {
      options.signal?.throwIfAborted();
      if (!isValidKey(key)) return;
      const gone = await db.deleteFrom("artifact_files").where("key", "=", key).returning("sha256").execute();
      await collect(gone.map((row) => row.sha256));
    },

    async removeAll(prefix, options = {}) {
      options.signal?.throwIfAborted();
      const range = prefixRange(prefix);
      if (!range) return 0;
      const gone = await db.deleteFrom("artifact_files").where("key", ">=", range.from).where("key", "<", range.to).returning("sha256").execute();
      await collect(gone.map((row) => row.sha256));
      return gone.length;
    },
  };
}

/** SQL state 23503: a key names a blob that is gone, or a blob still named by a key was to be deleted. */
function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "23503";
}

function checkKey(key: string): void {
  if (!isValidKey(key)) throw new Error(`invalid artifact key: ${JSON.stringify(key)}`);
}

/**
 * The keys under `prefix` as a range in the "C" collation: from `a/b/` up to
 * `a/b0`, since `0` is the character after `/` and valid keys hold only
 * ASCII. Undefined for a prefix no valid key can start with.
 */
function prefixRange(prefix: string): { from: string; to: string } | undefined {
  const base = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  if (!isValidKey(base)) return undefined;
  return { from: `${base}/`, to: `${base}0` };
}
