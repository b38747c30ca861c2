import { execFileSync } from "node:child_process";
import path from "node:path";

let started: string | undefined;

/**
 * The Postgres a benchmark runs against: BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else a throwaway cluster started with `.ci/pg-start`
 * (which installs Debian's postgresql if it is missing).
 */
export async function benchDatabaseUrl(): Promise<string> {
  const given = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;
  if (given) return given;
  started ??= execFileSync("bash", [path.resolve(import.meta.dirname, "../../../.ci/pg-start")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  process.env.BENCH_DATABASE_URL = started;
  return started;
}
