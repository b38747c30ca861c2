import { createHash } from "node:crypto";
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import type pg from "pg";

/** Past this many distinct statements on one connection, new ones run unprepared (bounds server memory). */
const MAX_PREPARED_PER_CONNECTION = 500;

/**
 * The `pg` pool as Kysely sees it, with every parameterized statement run as
 * a named prepared statement, as postgres.js does by default. `pg` parses a
 * named statement once per connection and afterwards sends only Bind and
 * Execute, and Postgres reuses the plan: for the one-statement create of a
 * plan (three data-modifying CTEs) that is 0.4 ms instead of 1.3 ms, most of
 * the difference being planning.
 *
 * Statements are named by a hash of their text, so the same query shares one
 * name on every connection. Statements without parameters (BEGIN, COMMIT,
 * DDL) keep the simple protocol.
 *
 * Known limit, as with any prepared statement: if another instance changes a
 * table's columns, a prepared `SELECT *` on it fails with "cached plan must
 * not change result type" until its connection is replaced. Our migrations
 * only add tables and columns, and instances are restarted to take them.
 */
export function preparingPool(pool: pg.Pool): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    options: pool.options,
    async connect() {
      const client = await pool.connect();
      let wrapper = wrapped.get(client);
      if (!wrapper) {
        wrapper = preparingClient(client);
        wrapped.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function preparingClient(client: pg.PoolClient): PostgresPoolClient {
  const names = new Set<string>();
  function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  function query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== "string") {
      return client.query(sqlOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
    }
    const values = parameters ? [...parameters] : [];
    if (values.length === 0) return client.query(sqlOrCursor) as unknown as Promise<PostgresQueryResult<R>>;
    const name = statementName(sqlOrCursor);
    if (!names.has(name)) {
      if (names.size >= MAX_PREPARED_PER_CONNECTION) {
        return client.query(sqlOrCursor, values) as unknown as Promise<PostgresQueryResult<R>>;
      }
      names.add(name);
    }
    return client.query({ name, text: sqlOrCursor, values }) as unknown as Promise<PostgresQueryResult<R>>;
  }
  return { query, release: (destroy?: boolean) => client.release(destroy) };
}

const statementNames = new Map<string, string>();

function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `k_${createHash("sha1").update(sql).digest("base64url")}`;
    // The texts come from our code, so their number is bounded; the cap guards against a generated-SQL surprise.
    if (statementNames.size < 10_000) statementNames.set(sql, name);
  }
  return name;
}
