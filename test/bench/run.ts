import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { benchDatabaseUrl, stopBenchDatabase } from "./support/postgres.js";

/**
 * `npm run bench [name…]`: runs every `test/bench/*.bench.ts` (or the named ones),
 * each in its own process so one cannot warm or bloat the next. All share one
 * real Postgres (see support/postgres.ts). Each prints its own table.
 */
const dir = import.meta.dirname;
const wanted = process.argv.slice(2);
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort();
if (files.length === 0) {
  console.error(`no benchmarks match ${wanted.join(", ")}`);
  process.exit(1);
}
const databaseUrl = await benchDatabaseUrl();
let failed = 0;
for (const file of files) {
  console.log(`\n=== ${file} ===`);
  const result = spawnSync(process.execPath, ["--import", "tsx", path.join(dir, file)], {
    stdio: "inherit",
    env: { ...process.env, BENCH_DATABASE_URL: databaseUrl },
  });
  if (result.status !== 0) {
    failed++;
    console.error(`${file} failed with exit code ${result.status}`);
  }
}
await stopBenchDatabase();
process.exit(failed === 0 ? 0 : 1);
