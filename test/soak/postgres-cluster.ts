import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

/** The newest PostgreSQL server binaries installed (Debian layout), e.g. /usr/lib/postgresql/15/bin. */
function pgBin(): string {
  const base = "/usr/lib/postgresql";
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, "bin", "pg_ctl"))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql (run .ci/pg-start once to install them)");
  return path.join(base, newest, "bin");
}

/**
 * A throwaway Postgres cluster in its own directory, made by `.ci/pg-start`.
 * Its port lives in `<dir>/data/postgresql.conf`, so `stop` and `start` bring
 * it back on the same URL: what a database restart looks like to the service.
 */
export class PostgresCluster {
  private constructor(
    readonly dir: string,
    readonly url: string,
  ) {}

  static async start(): Promise<PostgresCluster> {
    const dir = fs.mkdtempSync("/tmp/zero-soak-pg-");
    const { stdout } = await run("bash", [path.join(root, ".ci/pg-start"), "", dir], { encoding: "utf8" });
    return new PostgresCluster(dir, stdout.trim());
  }

  /** Fast shutdown: open connections are cut, as in a failover or a restart for an upgrade. */
  async stop(): Promise<void> {
    await this.#pgCtl("-w -t 60 stop -m fast");
  }

  async start(): Promise<void> {
    await this.#pgCtl("-w -t 60 start");
  }

  /** Stops the server and removes its files. */
  async destroy(): Promise<void> {
    await this.#pgCtl("-w -t 60 stop -m immediate").catch(() => {});
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  async #pgCtl(args: string): Promise<void> {
    await run("su", ["postgres", "-c", `${pgBin()}/pg_ctl -D '${this.dir}/data' -l '${this.dir}/server.log' ${args}`]);
  }
}
