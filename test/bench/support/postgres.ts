import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";

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
export async function stopBenchDatabase(): Promise<void> {
  if (!started) return;
  const { dir } = started;
  started = undefined;
  // The postmaster's pid heads its pid file; SIGINT is pg_ctl's "fast" shutdown.
  const pid = Number(fs.readFileSync(path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  process.kill(pid, "SIGINT");
  for (let waited = 0; waited < 30_000 && isRunning(pid); waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  fs.rmSync(dir, { recursive: true, force: true });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A database of its own on the bench Postgres, named `zero_bench_<label>_<random>`; `drop` removes it. */
export async function freshBenchDatabase(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = await benchDatabaseUrl();
  const name = `zero_bench_${label}_${randomBytes(4).toString("hex")}`;
  const onAdmin = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await onAdmin(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => onAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {}) };
}
