import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

let started: { url: string; dir: string } | undefined;

/**
 * The Postgres a benchmark runs against: BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else a throwaway cluster started with `.ci/pg-start`
 * (which installs Debian's postgresql if it is missing); `stopBenchDatabase`
 * stops that one again.
 */
export async function benchDatabaseUrl(): Promise<string> {
  const given = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;
  if (given) return given;
  if (!started) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zero-bench-pg-"));
    const url = execFileSync("bash", [path.resolve(import.meta.dirname, "../../../.ci/pg-start"), "", dir], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    }).trim();
    started = { url, dir };
  }
  process.env.BENCH_DATABASE_URL = started.url;
  return started.url;
}

/** Stops and removes the cluster `benchDatabaseUrl` started, if it started one. */
export function stopBenchDatabase(): void {
  if (!started) return;
  const bin = fs
    .readdirSync("/usr/lib/postgresql")
    .sort((a, b) => Number(a) - Number(b))
    .map((version) => `/usr/lib/postgresql/${version}/bin/pg_ctl`)
    .findLast((pgCtl) => fs.existsSync(pgCtl));
  if (bin) execFileSync("su", ["postgres", "-c", `${bin} -D '${started.dir}/data' stop -m fast`], { stdio: "ignore" });
  fs.rmSync(started.dir, { recursive: true, force: true });
  started = undefined;
}
