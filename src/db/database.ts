import type { PGlite } from "@electric-sql/pglite";
import { existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type tls from "node:tls";
import { Kysely, PostgresDialect, sql } from "kysely";
import { Migrator } from "kysely/migration";
import pg from "pg";
import type { Logger } from "../observability/logger.js";
import { lockDataDir } from "./data-dir-lock.js";
import { EmbeddedPostgresUnavailable, embeddedPostgresUnavailableReason, POSTGRES_CLUSTER_DIR, startEmbeddedPostgres } from "./embedded-postgres.js";
import { migrations } from "./migrations/index.js";
import { PreferTlsSocket } from "./prefer-tls-socket.js";
import { preparingPool } from "./prepared-statements.js";
import type { Database } from "./schema.js";
import { SerializedPGliteDialect } from "./serialized-pglite.js";

export type { Database };

/** The storage handle every component receives. */
export interface Store {
  db: Kysely<Database>;
  kind: "postgres" | "pglite";
  /**
   * True for an embedded database (PGlite, or the Postgres the service runs
   * itself): under the data dir's lock it is this process's alone, so a stage
   * it finds leased at start was leased by a process that is gone.
   */
  exclusive: boolean;
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
  /**
   * The embedded Postgres only: resolves, with why, once the database is gone
   * for good (its server exited unasked), so that only a restart of the
   * service brings it back. Outages of any other database pass.
   */
  lost?: Promise<Error>;
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
  /** Undefined chooses: what the data dir already holds, else Postgres where it can run, else PGlite. Either way, never one beside the other's data (see chooseEmbedded). */
  embedded?: EmbeddedDatabase;
  logger: Logger;
  /**
   * A PGlite data directory dump (`Store.dumpDataDir`) to start from when the
   * directory is new, instead of running initdb. Tests use it to start fast.
   */
  pgliteTemplate?: Blob;
  /** The memory the service may use, in bytes, when choosing PGlite for a new data dir; by default the machine's (or its cgroup's limit), swap included. */
  memoryBytes?: number;
}

/** Raised when the database cannot be reached or opened at start-up; the message is one line for the operator. */
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
    exclusive: false,
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
 * What `pg` connects with for a `postgres://` URL: the URL, read as libpq
 * (psql) reads it where `pg` reads it otherwise.
 *
 * The sslmode: `pg` 8 takes `prefer`, `require` and `verify-ca` for
 * `verify-full`, so a managed Postgres whose certificate is signed by the
 * provider's own CA is refused, after a warning; under libpq, `prefer` and
 * `require` encrypt without verifying (`require` with an `sslrootcert`
 * verifies the chain), `verify-ca` checks the chain and `verify-full` the host
 * name too. `pg` reads them so with `uselibpqcompat=true`, added here unless
 * the URL says `uselibpqcompat` itself. `prefer` also connects in the clear to
 * a server without TLS, which `pg` refuses: PreferTlsSocket asks the server.
 *
 * The host: a URL without one (`postgres:///zero`) takes PGHOST, and with no
 * PGHOST `pg` would try localhost where libpq tries the local server's Unix
 * socket: the socket, where one is, else localhost.
 */
export function postgresClientConfig(url: string): pg.ClientConfig {
  const { query, withParameters } = urlQuery(url);
  const added: Record<string, string> = {};
  if (!query.get("host") && !hostOf(url) && !process.env.PGHOST) added.host = localServer(query.get("port") || process.env.PGPORT || "5432");
  const libpqModes = !query.has("uselibpqcompat") || query.get("uselibpqcompat") === "true";
  if (!query.has("uselibpqcompat") && MODES_PG_READS_OTHERWISE.has(query.get("sslmode") ?? "")) added.uselibpqcompat = "true";
  // libpq does not take `prefer` with `direct` (TLS from the first byte, so nothing to fall back from): left to pg.
  const negotiation = query.get("sslnegotiation") ?? process.env.PGSSLNEGOTIATION;
  if (query.get("sslmode") !== "prefer" || !libpqModes || negotiation === "direct") return { connectionString: withParameters(added) };
  const tlsOptions = tlsOptionsOf(withParameters(added));
  return { connectionString: withParameters({ ...added, sslmode: "disable" }), stream: () => new PreferTlsSocket(tlsOptions) };
}

const MODES_PG_READS_OTHERWISE = new Set(["prefer", "require", "verify-ca"]);

/** Where libpq looks for the local server's socket: Debian's build, then PostgreSQL's own default. */
const SOCKET_DIRECTORIES = ["/var/run/postgresql", "/tmp"];

/** The directory holding the local server's socket for `port`, as libpq connects to it; else localhost (libpq's choice on Windows). */
function localServer(port: string): string {
  if (process.platform === "win32") return "localhost";
  return SOCKET_DIRECTORIES.find((dir) => existsSync(path.join(dir, `.s.PGSQL.${port}`))) ?? "localhost";
}

/** The host a `postgres://` URL names before its path ("" for `postgres:///db` or `postgres://user@/db`). */
function hostOf(url: string): string {
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(url)?.[1] ?? "";
  return authority.slice(authority.lastIndexOf("@") + 1);
}

/** The URL's query, and the URL with `parameters` set in its query (its other parameters kept). */
function urlQuery(url: string): { query: URLSearchParams; withParameters(parameters: Record<string, string>): string } {
  const queryStart = url.indexOf("?");
  const fragmentStart = url.indexOf("#", Math.max(queryStart, 0));
  const queryEnd = fragmentStart < 0 ? url.length : fragmentStart;
  const beforeQuery = queryStart < 0 ? url.slice(0, queryEnd) : url.slice(0, queryStart);
  const queryText = queryStart < 0 ? "" : url.slice(queryStart + 1, queryEnd);
  const query = new URLSearchParams(queryText);
  return {
    query,
    withParameters(parameters) {
      if (Object.keys(parameters).length === 0) return url;
      const changed = new URLSearchParams(queryText);
      for (const [name, value] of Object.entries(parameters)) changed.set(name, value);
      return `${beforeQuery}?${changed}${url.slice(queryEnd)}`;
    },
  };
}

/** The TLS options `pg` reads in `url`: its libpq reading of the sslmode and of the certificate files the URL names. */
function tlsOptionsOf(url: string): tls.ConnectionOptions {
  return new pg.Client({ connectionString: url }).ssl as unknown as tls.ConnectionOptions;
}

async function openEmbedded(options: StoreOptions): Promise<Store> {
  const kind = await chooseEmbedded(options.dataDir, options.embedded, options.logger, options.memoryBytes ?? usableMemory());
  return kind === "pglite" ? openPGlite(options.dataDir, options.pgliteTemplate) : openEmbeddedPostgres(options);
}

/** Each embedded database's name, and the directory of the data dir its files are in. */
const ENGINES: Record<EmbeddedDatabase, { name: string; dir: string }> = {
  postgres: { name: "Postgres", dir: POSTGRES_CLUSTER_DIR },
  pglite: { name: "PGlite", dir: "pglite" },
};

/**
 * A data dir keeps the database it was made with, so that neither an upgrade
 * nor asking for the other engine hides data: one engine never starts an
 * empty database beside the other's. A new data dir gets the engine asked
 * for, else Postgres where its binaries run, else PGlite. A dir holding both
 * (an older version made the second when asked) opens only the one asked for.
 */
async function chooseEmbedded(dataDir: string, asked: EmbeddedDatabase | undefined, logger: Logger, memoryBytes: number): Promise<EmbeddedDatabase> {
  const where = (kind: EmbeddedDatabase) => path.join(dataDir, ENGINES[kind].dir);
  const holds = async (kind: EmbeddedDatabase) => (await fs.readdir(where(kind)).catch(() => [])).length > 0;
  const [postgres, pglite] = await Promise.all([holds("postgres"), holds("pglite")]);
  if (asked) {
    const held: Record<EmbeddedDatabase, boolean> = { postgres, pglite };
    const other = asked === "postgres" ? "pglite" : "postgres";
    const [holdsAsked, holdsOther] = [held[asked], held[other]];
    const [name, otherName] = [ENGINES[asked].name, ENGINES[other].name];
    if (holdsOther && !holdsAsked) {
      throw new DatabaseUnavailableError(
        `ZERO_EMBEDDED_DATABASE=${asked}, but ZERO_DATA_DIR ${dataDir} holds a ${otherName} database, which ${name} cannot open: ` +
          `set ZERO_EMBEDDED_DATABASE=${other} (or auto) to use it, or give ${name} another ZERO_DATA_DIR (or move ${where(other)} away) to start empty`,
      );
    }
    if (holdsOther) logger.warn(`ZERO_EMBEDDED_DATABASE=${asked}: leaving alone the ${otherName} database in ${where(other)}, which this data dir also holds`);
    return asked;
  }
  if (postgres && pglite) {
    throw new DatabaseUnavailableError(
      `ZERO_DATA_DIR ${dataDir} holds two databases, a Postgres one (${where("postgres")}) and a PGlite one (${where("pglite")}), ` +
        "so auto picks neither: set ZERO_EMBEDDED_DATABASE to postgres or pglite, the one with your data",
    );
  }
  if (postgres) return "postgres";
  if (pglite) return "pglite";
  const unavailable = await embeddedPostgresUnavailableReason(dataDir);
  if (unavailable === undefined) return "postgres";
  // Rather than a start the kernel kills for want of memory, with nothing said (a 1 GB machine, as root under /root).
  if (memoryBytes < PGLITE_FIRST_START_BYTES) {
    throw new DatabaseUnavailableError(
      `embedded Postgres cannot run here (${unavailable}), and PGlite needs about 1.1 GB of memory for its first start, ` +
        `more than the ${Math.round(memoryBytes / 2 ** 20)} MB this machine has: set DATABASE_URL to a Postgres, or ZERO_EMBEDDED_DATABASE=pglite to try it anyway`,
    );
  }
  logger.warn({ reason: unavailable }, "embedded Postgres cannot run here; using PGlite");
  return "pglite";
}

/** What PGlite's first start takes at its peak, with room to spare (README, "Footprint": about 1.07 GB). */
const PGLITE_FIRST_START_BYTES = 1_200 * 2 ** 20;

/** The memory this process may use: the machine's, or its cgroup's limit where lower, plus swap. */
function usableMemory(): number {
  const physical = os.totalmem();
  const constrained = process.constrainedMemory();
  const memory = constrained > 0 && constrained < physical ? constrained : physical;
  let swapKb = 0;
  try {
    swapKb = Number(/^SwapTotal:\s+(\d+) kB$/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
  } catch {
    // Not Linux: no swap counted.
  }
  return memory + swapKb * 1024;
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
    exclusive: true,
    lost: server.lost,
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
  const dir = path.join(dataDir, ENGINES.pglite.dir);
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
    exclusive: true,
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

/** Where `url` leads, as `pg` reads it with libpq's variables: `host:port/database`, never the password. */
function describeUrl(url: string | undefined): string {
  if (!url) return "the embedded database";
  try {
    const { host, port, database } = new pg.Client(postgresClientConfig(url));
    return `${host}:${port}/${database}`;
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
