import os from "node:os";
import { sql, type Transaction } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore, type Database, type Store } from "../../src/db/database.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";

describe.runIf(onRealPostgres)("statements on a real Postgres", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ databaseUrl: await createTestDatabase(), dataDir: os.tmpdir(), logger: createLogger("silent") });
  });
  afterAll(() => store.close());

  const preparedOnThisConnection = (trx: Transaction<Database>) =>
    sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(trx).then((r) => r.rows.map((row) => row.statement));

  it("runs a parameterized query as a named prepared statement, parsed once per connection", async () => {
    await store.db.transaction().execute(async (trx) => {
      const marker = `prepared-marker-${Math.random()}`;
      for (let i = 0; i < 3; i++) {
        const { rows } = await sql<{ n: number }>`SELECT ${i}::int AS n, ${marker}::text AS marker`.execute(trx);
        expect(rows[0]!.n).toBe(i);
      }
      const prepared = await preparedOnThisConnection(trx);
      // Three runs with different values, one statement on the server.
      expect(prepared.filter((text) => text.includes("AS marker"))).toHaveLength(1);
    });
  });

  it("leaves statements without parameters to the simple protocol", async () => {
    await store.db.transaction().execute(async (trx) => {
      await sql`SELECT 'unprepared-marker' AS plain`.execute(trx);
      expect((await preparedOnThisConnection(trx)).some((text) => text.includes("unprepared-marker"))).toBe(false);
    });
  });

  it("reports a failing statement as an error and keeps the connection usable", async () => {
    await expect(sql`SELECT 1 / ${0}::int`.execute(store.db)).rejects.toThrow(/division by zero/);
    const { rows } = await sql<{ n: number }>`SELECT 1 / ${1}::int AS n`.execute(store.db);
    expect(rows[0]!.n).toBe(1);
  });
});
