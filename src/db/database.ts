import type { PGlite } from "@electric-sql/pglite";
import fs from "node:fs/promises";
import path from "node:path";
import { Kysely, PostgresDialect, sql } from "kysely";
import { Migrator } from "kysely/migration";
import pg from "pg";
import type { Logger } from "../observability/logger.js";
import { lockDataDir } from "./data-dir-lock.js";
import { EmbeddedPostgresUnavailable, embeddedPostgresUnavailableReason, startEmbeddedPostgres } from "./embedded-postgres.js";
import { migrations } from "./migrations/index.js";
import { preparingPool } from "./prepared-statements.js";
import type { Database } from "./schema.js";
import { SerializedPGliteDialect } from "./serialized-pglite.js";

export type { Database };

/** The storage handle every component receives. */
export interface Store {
  db: Kysely<Database>;
  kind: "postgres" | "pglite";
  /** Resolves when the database answers `select 1` within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<void>;
  /**
   * Calls `onPayload` for each NOTIFY on `channel`. Delivery is best effort:
   * listeners keep a polling fallback for anything missed while reconnecting.
   * `onGap` is called when notifications may have been missed: with `false`
   * when the listener connection is lost (or could not be had at all), and
   * with `true` once it listens anew (PGlite, in-process, never loses it).
   */
  listen(channel: string, onPayload: (payload: string) => void, onGap?: (listening: boolean) => void): Promise<() => Promise<void>>;
  /** PGlite only: the data directory as a tarball (a backup, or a template for `pgliteTemplate`). */
  dumpDataDir?(): Promise<Blob>;
  close(): Promise<void>;
}

/** Which database runs inside the service when no DATABASE_URL is set. */
export type EmbeddedDatabase = "postgres" | "pglite";

export interface StoreOptions {
  /** `postgres://…`; undefined selects an embedded database in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Undefined chooses: what the data dir already holds, else Postgres where it can run, else PGlite. */
  embedded?: EmbeddedDatabase;
  logger: Logger;
  /**
   * A PGlite data directory dump (`Store.dumpDataDir`) to start from when the
   * directory is new, instead of running initdb. Tests use it to start fast.
   */
  pgliteTemplate?: Blob;
}

/** Raised when the database cannot be reached at start-up; the message is one line for the operator. */
export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
}

/** Pooled connections on a real server; `LISTEN` holds one more, outside the pool. */
const POOL_MAX_CONNECTIONS = 10;
/** How long `close` waits for the pool's connections to close once told to: a server that does not answer is not waited for longer. */
const CLOSE_WAIT_MS = 2000;

const INT8_OID = 20;
// int8 (count(*), bigserial) as a number on both drivers; our counts stay far below 2^53.
const parseInt8 = (value: string) => Number(value);

/** Opens the database, checks it answers, and applies pending migrations under a lock. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const store = options.databaseUrl ? openPostgres(options.databaseUrl, options) : await openEmbedded(options);
  try {
    await store.ping(5000);
  } catch (error) {
    await store.close().catch(() => {});
    throw new DatabaseUnavailableError(`cannot reach the database at ${describeUrl(options.databaseUrl)}: ${reason(error)}`);
  }
  try {
    await migrate(store.db, options.logger);
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}

/**
 * Applies every pending migration. Kysely holds an advisory lock, so
 * instances starting together take turns. Migrations a newer version applied
 * are known here as done (Kysely refuses to run beside migrations it does
 * not know): they only add, so this version runs on the schema as it is,
 * which is what lets a deploy roll back, or an old instance restart mid-rollout.
 */
export async function migrate(db: Kysely<Database>, logger?: Logger): Promise<void> {
  // Read before the migrator takes its connection (PGlite has one). A newer instance may migrate in between:
  // then Kysely finds one more it does not know, and one more look takes it in.
  for (let attempt = 1; ; attempt++) {
    const newer = (await appliedMigrations(db)).filter((name) => !(name in migrations));
    if (newer.length > 0)
      logger?.warn({ migrations: newer }, "the database has migrations from a newer version; running on its schema, as migrations only add");
    const known = { ...Object.fromEntries(newer.map((name) => [name, APPLIED_ELSEWHERE])), ...migrations };
    const { error, results } = await new Migrator({ db, provider: { getMigrations: async () => known } }).migrateToLatest();
    const failed = results?.find((r) => r.status === "Error");
    if (!error && !failed) return;
    if (attempt < 3 && !failed && reason(error).includes("previously executed migration")) continue;
    throw new Error(failed ? `database migration ${failed.migrationName} failed: ${reason(error)}` : `database migration failed: ${reason(error)}`);
  }
}

/** A migration another version applied: never run here, since it is done. */
const APPLIED_ELSEWHERE = { up: async () => {} };

/** The names of the migrations the database has applied; none before the first start made the table. */
async function appliedMigrations(db: Kysely<Database>): Promise<string[]> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    return rows.map((row) => row.name);
  } catch {
    return [];
  }
}

function openPostgres(url: string, options: StoreOptions): Store {
  const connection = postgresClientConfig(url);
  const pool = new pg.Pool({
    ...connection,
    max: POOL_MAX_CONNECTIONS,
    connectionTimeoutMillis: 5000,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that loses its server emits here; the pool replaces it on next use.
  pool.on("error", (error) => options.logger.warn({ err: error.message }, "idle database connection lost"));
  // A client checked out between two queries (inside a transaction, say) has no pool listener;
  // without one of its own, a server restart would be an uncaught exception.
  // The pool's connections until each has closed: `pool.end()` resolves once every one is told to end, not once it has.
  const connected = new Set<pg.PoolClient>();
  pool.on("connect", (client) => {
    connected.add(client);
    client.once("end", () => connected.delete(client));
    client.on("error", (error) => options.logger.warn({ err: error.message }, "database connection lost while in use"));
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool), controlClient: pg.Client }) });

  let listener: pg.Client | undefined;
  let listenerReady: Promise<pg.Client> | undefined;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const gapHandlers = new Set<(listening: boolean) => void>();
  // Set while no listener is subscribed although handlers are registered: notifications are being missed.
  let missing = false;
  let closed = false;
  const reportGap = (listening: boolean) => {
    for (const onGap of gapHandlers) onGap(listening);
  };

  const connectListener = (): Promise<pg.Client> => {
    listenerReady ??= (async () => {
      const client = new pg.Client({ ...connection, connectionTimeoutMillis: 5000 });
      client.on("notification", (message) => {
        for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? "");
      });
      client.on("error", (error) => {
        options.logger.warn({ err: error.message }, "database listener lost; reconnecting");
        listener = undefined;
        listenerReady = undefined;
        client.end().catch(() => {});
        missing = true;
        reportGap(false);
        if (!closed && handlers.size > 0) setTimeout(() => void resubscribe(), 1000).unref();
      });
      await client.connect();
      for (const channel of handlers.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
      listener = client;
      if (missing) {
        missing = false;
        // Whatever was notified between the loss and now is gone.
        reportGap(true);
      }
      return client;
    })().catch((error: unknown) => {
      listenerReady = undefined;
      throw error;
    });
    return listenerReady;
  };
  const resubscribe = async () => {
    if (closed) return;
    try {
      await connectListener();
    } catch {
      setTimeout(() => void resubscribe(), 1000).unref();
    }
  };

  return {
    db,
    kind: "postgres",
    ping: (timeoutMs = 2000) => pingWithTimeout(db, timeoutMs),
    async listen(channel, onPayload, onGap) {
      const isNew = !handlers.has(channel);
      const set = handlers.get(channel) ?? new Set();
      set.add(onPayload);
      handlers.set(channel, set);
      if (onGap) gapHandlers.add(onGap);
      try {
        const client = await connectListener();
        if (isNew) await client.query(`LISTEN ${quoteIdent(channel)}`);
      } catch (error) {
        options.logger.warn({ err: reason(error) }, "database listener unavailable; polling only");
        missing = true;
        onGap?.(false);
        void resubscribe();
      }
      return async () => {
        set.delete(onPayload);
        if (onGap) gapHandlers.delete(onGap);
        if (set.size === 0) {
          handlers.delete(channel);
          await listener?.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
        }
      };
    },
    async close() {
      closed = true;
      await listener?.end().catch(() => {});
      await db.destroy();
      // Closed, not only told to close: a server stopped next (the embedded one) then ends no session a connection still holds.
      await Promise.race([
        Promise.all([...connected].map((client) => new Promise((resolve) => client.once("end", resolve)))),
        new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref()),
      ]);
    },
  };
}

/**
 * What `pg` connects with for a `postgres://` URL: the URL, with its sslmode
 * read as libpq (psql) reads it. `pg` 8 takes `prefer`, `require` and
 * `verify-ca` for `verify-full`, so a managed Postgres whose certificate is
 * signed by the provider's own CA is refused, after a warning; under libpq,
 * `prefer` and `require` encrypt without verifying (`require` with an
 * `sslrootcert` verifies the chain), `verify-ca` checks the chain and
 * `verify-full` the host name too. `pg` reads them so with `uselibpqcompat=true`,
 * added here unless the URL says `uselibpqcompat` itself.
 */
export function postgresClientConfig(url: string): pg.ClientConfig {
  return { connectionString: withLibpqSslModes(url) };
}

const MODES_PG_READS_OTHERWISE = new Set(["prefer", "require", "verify-ca"]);

function withLibpqSslModes(url: string): string {
  const queryStart = url.indexOf("?");
  if (queryStart < 0) return url;
  const fragmentStart = url.indexOf("#", queryStart);
  const queryEnd = fragmentStart < 0 ? url.length : fragmentStart;
  const query = new URLSearchParams(url.slice(queryStart + 1, queryEnd));
  if (query.has("uselibpqcompat") || !MODES_PG_READS_OTHERWISE.has(query.get("sslmode") ?? "")) return url;
  return `${url.slice(0, queryEnd)}&uselibpqcompat=true${url.slice(queryEnd)}`;
}

async function openEmbedded(options: StoreOptions): Promise<Store> {
  const kind = options.embedded ?? (await chooseEmbedded(options.dataDir, options.logger));
  return kind === "pglite" ? openPGlite(options.dataDir, options.pgliteTemplate) : openEmbeddedPostgres(options);
}

/**
 * A data dir keeps the database it was made with, so an upgrade never hides
 * data; a new one gets Postgres where its binaries run, else PGlite.
 */
async function chooseEmbedded(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  const has = async (name: string) => (await fs.readdir(path.join(dataDir, name)).catch(() => [])).length > 0;
  if (await has("postgres")) return "postgres";
  if (await has("pglite")) return "pglite";
  const unavailable = await embeddedPostgresUnavailableReason(dataDir);
  if (unavailable === undefined) return "postgres";
  logger.warn({ reason: unavailable }, "embedded Postgres cannot run here; using PGlite");
  return "pglite";
}

async function openEmbeddedPostgres(options: StoreOptions): Promise<Store> {
  const lock = await lockDataDir(options.dataDir);
  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  try {
    server = await startEmbeddedPostgres(options.dataDir, options.logger);
  } catch (error) {
    await lock.release();
    if (error instanceof EmbeddedPostgresUnavailable) throw new DatabaseUnavailableError(error.message);
    throw error;
  }
  const store = openPostgres(server.url, options);
  return {
    ...store,
    async close() {
      try {
        await store.close();
      } finally {
        try {
          await server.stop();
        } finally {
          await lock.release();
        }
      }
    },
  };
}

async function openPGlite(dataDir: string, template: Blob | undefined): Promise<Store> {
  // Before PGlite reads a byte: a second process on this directory must leave the first one's data alone.
  const lock = await lockDataDir(dataDir);
  const dir = path.join(dataDir, "pglite");
  let pglite: PGlite;
  try {
    await fs.mkdir(dir, { recursive: true });
    const isNew = (await fs.readdir(dir)).length === 0;
    // Loaded only when used: the WASM Postgres costs ~40 MB that a server on real Postgres never needs.
    const { PGlite } = await import("@electric-sql/pglite");
    pglite = await PGlite.create(dir, {
      parsers: { [INT8_OID]: parseInt8 },
      ...(isNew && template ? { loadDataDir: template } : {}),
    });
  } catch (error) {
    await lock.release();
    throw error;
  }
  const db = new Kysely<Database>({ dialect: new SerializedPGliteDialect({ pglite }) });
  return {
    db,
    kind: "pglite",
    ping: (timeoutMs = 2000) => pingWithTimeout(db, timeoutMs),
    async listen(channel, onPayload) {
      const unlisten = await pglite.listen(channel, onPayload);
      return () => unlisten();
    },
    dumpDataDir: () => pglite.dumpDataDir("none"),
    async close() {
      try {
        await db.destroy();
      } finally {
        await lock.release();
      }
    },
  };
}

async function pingWithTimeout(db: Kysely<Database>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([sql`select 1`.execute(db), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function describeUrl(url: string | undefined): string {
  if (!url) return "the embedded database";
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  } catch {
    return "DATABASE_URL";
  }
}

function reason(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return reason(error.errors[0]);
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    return code && !error.message.includes(code) ? `${error.message} (${code})` : error.message || String(code);
  }
  return String(error);
}
