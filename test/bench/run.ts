import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { benchDatabaseUrl, stopBenchDatabase } from "./support/postgres.js";

/**
 * `npm run bench [--against <git ref>] [name…]`: runs every
 * `test/bench/*.bench.ts` (or the named ones), each in its own process so one
 * cannot warm or bloat the next. All share one real Postgres (see
 * support/postgres.ts). Each prints its own table. With `--against`, each
 * benchmark also runs on a checkout of that ref, just before this tree's
 * run, so a change is measured against its baseline on the same machine in
 * the same minutes.
 */
const dir = import.meta.dirname;
const args = process.argv.slice(2);
const againstAt = args.indexOf("--against");
const against = againstAt === -1 ? undefined : args.splice(againstAt, 2)[1];
const wanted = args;
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort();
if (files.length === 0) {
  console.error(`no benchmarks match ${wanted.join(", ")}`);
  process.exit(1);
}
const baseline = against === undefined ? undefined : checkoutOf(against);
const databaseUrl = await benchDatabaseUrl();
let failed = 0;
for (const file of files) {
  const runs = baseline ? [{ label: `${file} at ${against}`, dir: path.join(baseline, "test/bench") }] : [];
  runs.push({ label: baseline ? `${file} in this tree` : file, dir });
  for (const run of runs) {
    console.log(`\n=== ${run.label} ===`);
    const result = spawnSync(process.execPath, ["--import", "tsx", path.join(run.dir, file)], {
      stdio: "inherit",
      cwd: path.resolve(run.dir, "../.."),
      env: { ...process.env, BENCH_DATABASE_URL: databaseUrl },
    });
    if (result.status !== 0) {
      failed++;
      console.error(`${run.label} failed with exit code ${result.status}`);
    }
  }
}
await stopBenchDatabase();
if (baseline) spawnSync("git", ["worktree", "remove", "--force", baseline], { stdio: "inherit" });
process.exit(failed === 0 ? 0 : 1);

/** A throwaway checkout of `ref` sharing this tree's node_modules. */
function checkoutOf(ref: string): string {
  const target = fs.mkdtempSync(path.join(os.tmpdir(), "zero-bench-"));
  const added = spawnSync("git", ["worktree", "add", "--detach", target, ref], { stdio: "inherit" });
  if (added.status !== 0) {
    console.error(`cannot check out ${ref}`);
    process.exit(1);
  }
  fs.symlinkSync(path.resolve(dir, "../../node_modules"), path.join(target, "node_modules"));
  return target;
}
