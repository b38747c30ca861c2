import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openStore } from "../../src/db/database.js";
import { createLogger } from "../../src/observability/logger.js";

/**
 * Runs once per `vitest run`: builds a migrated PGlite data directory and
 * dumps it, so each test app loads it (~0.7 s) instead of running initdb (~4 s).
 */
export default async function setup(): Promise<() => Promise<void>> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-template-"));
  const store = await openStore({ databaseUrl: undefined, dataDir: dir, embedded: "pglite", logger: createLogger("silent") });
  const dump = await store.dumpDataDir!();
  await store.close();
  const file = path.join(dir, "template.tar");
  await fs.writeFile(file, Buffer.from(await dump.arrayBuffer()));
  process.env.ZERO_TEST_PGLITE_TEMPLATE = file;
  return async () => {
    await fs.rm(dir, { recursive: true, force: true });
  };
}
