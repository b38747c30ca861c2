import { randomBytes } from "node:crypto";
import pg from "pg";

/** Which database this run of the suite uses ("pglite" unless the postgres project runs it). */
export const testDatabaseKind: "pglite" | "postgres" = process.env.ZERO_TEST_DB === "postgres" ? "postgres" : "pglite";

/** True when a real Postgres server backs this run (tests of several instances need one). */
export const onRealPostgres = testDatabaseKind === "postgres";

const created: { admin: string; name: string }[] = [];

/**
 * A fresh, empty database on the TEST_DATABASE_URL server, dropped when the
 * test process ends. Undefined on PGlite runs (each app gets its own files).
 */
export async function createTestDatabase(): Promise<string | undefined> {
  if (!onRealPostgres) return undefined;
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) throw new Error("the postgres project needs TEST_DATABASE_URL");
  const name = `zero_test_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  created.push({ admin, name });
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.href;
}

/** Drops the databases this process created. */
export async function dropTestDatabases(): Promise<void> {
  for (const { admin, name } of created.splice(0)) {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  }
}
