import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { DatabaseUnavailableError, openStore } from "../../src/db/database.js";
import { initdbFailure, postgresEnvironment } from "../../src/db/embedded-postgres.js";
import { createLogger, type Logger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { testDatabaseKind } from "../support/database.js";
import { getExecution, postExecution } from "../support/executions.js";
import { unusedPort } from "../support/ports.js";
import { canMountPrivately, onPrivateTmpfs, removeDataDir, serverCommand, type ServerCommand } from "../support/server-process.js";

/**
 * With no DATABASE_URL the service runs a database itself: a real Postgres as
 * its child process for a new data dir, PGlite for one PGlite made or where
 * Postgres cannot run. These tests start real servers of both kinds; they do
 * not depend on TEST_DATABASE_URL, so they run once, in the PGlite project.
 */
describe.runIf(testDatabaseKind === "pglite")("the embedded database", () => {
  const dirs: string[] = [];
  const freshDataDir = async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-embedded-"));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const dir of dirs) await removeDataDir(dir);
  });

  const start = (dataDir: string, env: Record<string, string> = {}) =>
    startApp(loadConfig({ PORT: "0", HOST: "127.0.0.1", ZERO_DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env }));

  // The service as `npm start` runs it, built once for the blocks below that run it in a process of its own.
  let command: ServerCommand;
  beforeAll(async () => {
    command = await serverCommand("src/main.ts", "dist/test");
  });

  it("a new data dir gets a real Postgres as a child process; it stops with the service and its data survives a restart", async () => {
    const dataDir = await freshDataDir();
    const first = await start(dataDir);
    expect(first.store.kind).toBe("postgres");
    const { rows } = await sql<{ version: string }>`select version()`.execute(first.store.db);
    expect(rows[0]!.version).toMatch(/^PostgreSQL 18\./);
    const postmaster = Number((await fs.readFile(path.join(dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0]);
    expect(isAlive(postmaster)).toBe(true);
    const account = await createAccountWithKey(first, ["build", "read"]);
    const created = await postExecution(first.url, { apiKey: account.apiKey }, { goal: "A website for a small bakery", outcome: "website" });
    expect(created.status).toBe(202);
    await first.close();
    expect(isAlive(postmaster)).toBe(false);

    const second = await start(dataDir);
    try {
      expect(second.store.kind).toBe("postgres");
      const read = await getExecution(second.url, { apiKey: account.apiKey }, (created.body as { plan: { id: string } }).plan.id);
      expect(read.status).toBe(200);
    } finally {
      await second.close();
    }
  }, 120_000);

  // Found operating the service: its Postgres's stderr was logged a line a record at debug, so a FATAL was never seen at info.
  it("its Postgres's warnings and fatal errors reach the service's log at warn and error, one record each, the rest only at debug", async () => {
    const logs: string[] = [];
    const logger = createLogger("info", { write: (line: string) => logs.push(line) } as unknown as NodeJS.WritableStream);
    const app = await startApp(loadConfig({ PORT: "0", HOST: "127.0.0.1", ZERO_DATA_DIR: await freshDataDir() }), { logger });
    try {
      expect(app.store.kind).toBe("postgres");
      await sql`do $$ begin raise warning 'a warning for the operator'; end $$`.execute(app.store.db);
      // A failed statement is the service's own to handle: Postgres's line about it is no news.
      await expect(sql`select * from no_such_table`.execute(app.store.db)).rejects.toThrow(/does not exist/);
      await expect(sql`select pg_terminate_backend(pg_backend_pid())`.execute(app.store.db)).rejects.toThrow(/terminating connection/);
      const postgresLines = () => logs.map((line) => JSON.parse(line) as { level: number; postgres?: string }).filter((line) => line.postgres !== undefined);
      for (let i = 0; i < 100 && !postgresLines().some((line) => line.postgres!.includes("FATAL")); i++) await new Promise((r) => setTimeout(r, 50));
      expect(postgresLines()).toEqual([
        expect.objectContaining({ level: 40, postgres: expect.stringMatching(/ WARNING: {2}a warning for the operator$/) }),
        expect.objectContaining({ level: 50, postgres: expect.stringMatching(/ FATAL: {2}terminating connection due to administrator command$/) }),
      ]);
    } finally {
      await app.close();
    }
  }, 120_000);

  it("ignores the PG* variables exported for psql, and its Postgres gets none of the service's environment", async () => {
    const exported: Record<string, string> = {
      PGSSLMODE: "require",
      PGSSLNEGOTIATION: "direct",
      PGHOST: "192.0.2.1",
      PGPORT: "1",
      PGUSER: "nobody",
      PGPASSWORD: "wrong",
      PGDATABASE: "nowhere",
      PGOPTIONS: "-c search_path=elsewhere",
      PGAPPNAME: "psql",
      ZERO_TEST_UPSTREAM_KEY: "sk-live-not-for-postgres",
    };
    const saved = Object.fromEntries(Object.keys(exported).map((name) => [name, process.env[name]]));
    Object.assign(process.env, exported);
    try {
      const app = await start(await freshDataDir());
      try {
        expect(app.store.kind).toBe("postgres");
        const account = await createAccountWithKey(app, ["build", "read"]);
        const created = await postExecution(app.url, { apiKey: account.apiKey }, { goal: "A website for a small bakery", outcome: "website" });
        expect(created.status).toBe(202);
        const postmaster = Number((await fs.readFile(path.join(app.config.dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0]);
        const environment = (await fs.readFile(`/proc/${postmaster}/environ`, "utf8")).split("\0").map((entry) => entry.slice(0, entry.indexOf("=")));
        expect(environment.filter((name) => name in exported)).toEqual([]);
      } finally {
        await app.close();
      }
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }, 120_000);

  it("while its Postgres starts, the port says the service is alive but not ready, and asks every other request to come back", async () => {
    const port = await unusedPort();
    const base = `http://127.0.0.1:${port}`;
    const starting = start(await freshDataDir(), { PORT: String(port) });
    let started = false;
    void starting.then(() => (started = true)).catch(() => {});
    let alive: Response | undefined;
    for (let i = 0; !alive && i < 600; i++) alive = await fetch(`${base}/healthz`).catch(() => sleep(10).then(() => undefined));
    expect(alive!.status).toBe(200);
    expect(await alive!.json()).toEqual({ status: "starting" });

    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get("retry-after")).toBe("1");
    expect(await ready.json()).toEqual({ error: { type: "unavailable", message: expect.stringContaining("starting") } });
    // Every /v1 answer is in OpenAI's shape, this one too.
    const openAi = await fetch(`${base}/v1/models`);
    expect(openAi.status).toBe(503);
    expect(openAi.headers.get("retry-after")).toBe("1");
    expect(await openAi.json()).toEqual({ error: { message: expect.stringContaining("starting"), type: "unavailable", code: "unavailable", param: null } });
    const api = await fetch(`${base}/api/executions`);
    expect(api.status).toBe(503);
    expect(api.headers.get("retry-after")).toBe("1");
    expect(await api.json()).toEqual({ error: { type: "unavailable", message: expect.stringContaining("starting") } });
    expect(started).toBe(false);

    const app = await starting;
    try {
      expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: "ok" });
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    } finally {
      await app.close();
    }
  }, 120_000);

  it("a start that fails once its Postgres runs stops that Postgres and lets the port go", async () => {
    const dataDir = await freshDataDir();
    const first = await start(dataDir);
    // A database that refuses this instance's row: the start fails after the database opened.
    await sql`create function refuse_instances() returns trigger language plpgsql as $$ begin raise exception 'no instances here'; end $$`.execute(
      first.store.db,
    );
    await sql`create trigger refuse_instances before insert on service_instances for each row execute function refuse_instances()`.execute(first.store.db);
    await first.close();

    const port = await unusedPort();
    await expect(start(dataDir, { PORT: String(port) })).rejects.toThrow("no instances here");
    expect(await postgresProcessesOn(dataDir)).toEqual([]);
    const again = net.createServer();
    await new Promise<void>((resolve, reject) => again.once("error", reject).listen(port, "127.0.0.1", resolve));
    await new Promise((resolve) => again.close(resolve));
  }, 120_000);

  it("a data dir that PGlite made keeps PGlite, so an upgrade never hides data", async () => {
    const dataDir = await freshDataDir();
    const made = await start(dataDir, { ZERO_EMBEDDED_DATABASE: "pglite" });
    expect(made.store.kind).toBe("pglite");
    const account = await createAccountWithKey(made, ["read"]);
    await made.close();
    const reopened = await start(dataDir);
    try {
      expect(reopened.store.kind).toBe("pglite");
      const listed = await getExecution(reopened.url, { apiKey: account.apiKey });
      expect(listed.status).toBe(200);
    } finally {
      await reopened.close();
    }
  }, 120_000);

  describe("a data dir that holds the other engine's database", () => {
    // One data dir made by each engine, each with an account whose key must keep working.
    let pgliteDir: string;
    let postgresDir: string;
    let pgliteAccount: TestAccount;
    let postgresAccount: TestAccount;
    beforeAll(async () => {
      pgliteDir = await freshDataDir();
      const pglite = await start(pgliteDir, { ZERO_EMBEDDED_DATABASE: "pglite" });
      pgliteAccount = await createAccountWithKey(pglite, ["read"]);
      await pglite.close();
      postgresDir = await freshDataDir();
      const postgres = await start(postgresDir);
      postgresAccount = await createAccountWithKey(postgres, ["read"]);
      await postgres.close();
    }, 120_000);

    /** Whether `account`'s key is accepted by a service started on `dataDir` with `env`, and which engine it ran. */
    const opened = async (dataDir: string, account: TestAccount, env: Record<string, string> = {}, logger?: Logger) => {
      const app = await startApp(loadConfig({ PORT: "0", HOST: "127.0.0.1", ZERO_DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env }), logger ? { logger } : {});
      try {
        return { kind: app.store.kind, keyStatus: (await getExecution(app.url, { apiKey: account.apiKey })).status };
      } finally {
        await app.close();
      }
    };

    it("is refused when ZERO_EMBEDDED_DATABASE asks for the other engine, with one line saying what to do, and nothing is made", async () => {
      const before = await fs.readdir(pgliteDir);
      await expect(start(pgliteDir, { ZERO_EMBEDDED_DATABASE: "postgres" })).rejects.toThrow(
        `ZERO_EMBEDDED_DATABASE=postgres, but ZERO_DATA_DIR ${pgliteDir} holds a PGlite database, which Postgres cannot open: ` +
          `set ZERO_EMBEDDED_DATABASE=pglite (or auto) to use it, or give Postgres another ZERO_DATA_DIR (or move ${path.join(pgliteDir, "pglite")} away) to start empty`,
      );
      expect((await fs.readdir(pgliteDir)).sort()).toEqual(before.sort());
      expect(await opened(pgliteDir, pgliteAccount)).toEqual({ kind: "pglite", keyStatus: 200 });

      const beforePostgres = await fs.readdir(postgresDir);
      await expect(start(postgresDir, { ZERO_EMBEDDED_DATABASE: "pglite" })).rejects.toThrow(
        `ZERO_EMBEDDED_DATABASE=pglite, but ZERO_DATA_DIR ${postgresDir} holds a Postgres database, which PGlite cannot open: ` +
          `set ZERO_EMBEDDED_DATABASE=postgres (or auto) to use it, or give PGlite another ZERO_DATA_DIR (or move ${path.join(postgresDir, "postgres")} away) to start empty`,
      );
      expect((await fs.readdir(postgresDir)).sort()).toEqual(beforePostgres.sort());
      expect(await opened(postgresDir, postgresAccount)).toEqual({ kind: "postgres", keyStatus: 200 });
    }, 120_000);

    it("holding both (as an older version left it when told the other engine): auto refuses, naming both; the one asked for opens with its data", async () => {
      const both = pgliteDir;
      for (const name of ["postgres", "postgres.password"]) await fs.rename(path.join(postgresDir, name), path.join(both, name));
      await expect(start(both)).rejects.toThrow(
        `ZERO_DATA_DIR ${both} holds two databases, a Postgres one (${path.join(both, "postgres")}) and a PGlite one (${path.join(both, "pglite")}), ` +
          "so auto picks neither: set ZERO_EMBEDDED_DATABASE to postgres or pglite, the one with your data",
      );
      const logs: string[] = [];
      const logger = createLogger("warn", { write: (line: string) => logs.push(line) } as unknown as NodeJS.WritableStream);
      expect(await opened(both, pgliteAccount, { ZERO_EMBEDDED_DATABASE: "pglite" }, logger)).toEqual({ kind: "pglite", keyStatus: 200 });
      expect(logs.join("\n")).toContain(`leaving alone the Postgres database in ${path.join(both, "postgres")}`);
      expect(await opened(both, postgresAccount, { ZERO_EMBEDDED_DATABASE: "postgres" })).toEqual({ kind: "postgres", keyStatus: 200 });
    }, 120_000);
  });

  it.runIf(process.getuid?.() === 0)(
    "as root, where the postgres user cannot reach the data dir: PGlite with one warning, or a one-line refusal if Postgres was asked for or the machine has too little memory for PGlite",
    async () => {
      const locked = await freshDataDir(); // mkdtemp: mode 0700, owned by root
      const dataDir = path.join(locked, "data");
      const logs: string[] = [];
      const logger = createLogger("warn", { write: (line: string) => logs.push(line) } as unknown as NodeJS.WritableStream);
      const chosen = await startApp(loadConfig({ PORT: "0", HOST: "127.0.0.1", ZERO_DATA_DIR: dataDir }), { logger });
      try {
        expect(chosen.store.kind).toBe("pglite");
        expect(logs.join("\n")).toContain(`cannot enter ${locked} (mode 700)`);
      } finally {
        await chosen.close();
      }
      const asked = path.join(locked, "asked");
      await expect(start(asked, { ZERO_EMBEDDED_DATABASE: "postgres" })).rejects.toThrow(
        `Postgres runs as the postgres user, which cannot enter ${locked} (mode 700); set ZERO_DATA_DIR to a directory it can reach, or ZERO_EMBEDDED_DATABASE=pglite`,
      );

      // Found on a 1 GB machine: there PGlite's first start was killed by the kernel for want of memory, with nothing said.
      const small = path.join(locked, "small");
      const silent = createLogger("silent");
      await expect(openStore({ databaseUrl: undefined, dataDir: small, logger: silent, memoryBytes: 1024 * 2 ** 20 })).rejects.toThrow(
        new DatabaseUnavailableError(
          `embedded Postgres cannot run here (Postgres runs as the postgres user, which cannot enter ${locked} (mode 700); set ZERO_DATA_DIR to a directory it can reach, or ZERO_EMBEDDED_DATABASE=pglite), ` +
            "and PGlite needs about 1.1 GB of memory for its first start, more than the 1024 MB this machine has: set DATABASE_URL to a Postgres, or ZERO_EMBEDDED_DATABASE=pglite to try it anyway",
        ),
      );
      expect(await fs.readdir(small).catch(() => [])).toEqual([]);
      const tried = await openStore({ databaseUrl: undefined, dataDir: small, logger: silent, embedded: "pglite", memoryBytes: 1024 * 2 ** 20 });
      expect(tried.kind).toBe("pglite");
      await tried.close();
    },
    120_000,
  );

  describe("a service killed with SIGKILL while it writes", () => {
    it("takes its Postgres with it, and after a restart every accepted plan is there", async () => {
      const dataDir = await freshDataDir();
      const env = { ZERO_DATA_DIR: dataDir, ZERO_GENERATION_LIMIT: "100000", LOG_LEVEL: "info" };
      const first = await spawnServer(command, env);
      const account = await createAccountWithKey(first, ["build", "read"]);
      const credential = { apiKey: account.apiKey };
      const accepted: string[] = [];
      let writing = true;
      const writers = Array.from({ length: 8 }, async () => {
        while (writing) {
          const answer = await postExecution(first.url, credential, { goal: "A website for a small bakery", outcome: "website" }).catch(() => undefined);
          if (answer?.status === 202) accepted.push((answer.body as { plan: { id: string } }).plan.id);
        }
      });
      while (accepted.length < 40) await sleep(20);
      const postmaster = Number((await fs.readFile(path.join(dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0]);
      first.child.kill("SIGKILL");
      await first.exit;
      writing = false;
      await Promise.all(writers);
      // The kernel's parent-death signal asked the postmaster for a fast shutdown.
      for (let i = 0; i < 200 && isAlive(postmaster); i++) await sleep(50);
      expect(isAlive(postmaster)).toBe(false);

      const second = await spawnServer(command, env);
      try {
        for (const planId of accepted) expect((await getExecution(second.url, credential, planId)).status, planId).toBe(200);
      } finally {
        second.child.kill("SIGTERM");
        await second.exit;
      }
    }, 180_000);
  });

  describe("a service killed with SIGKILL during its first start's initdb", () => {
    // Found on a small machine: initdb outlived the service, and a restart at once made its staging directory anew under it.
    it("takes initdb with it, and a restart at once makes the cluster", async () => {
      const dataDir = await freshDataDir();
      const env = { ZERO_DATA_DIR: dataDir, LOG_LEVEL: "info" };
      const first = launchServer(command, env);
      // Once initdb runs (setpriv, which starts it, has set its parent-death signal by then).
      for (let i = 0; !(await postgresProcessesOn(dataDir, "initdb")).length; i++) {
        if (first.child.exitCode !== null || i > 3000) throw new Error(`initdb did not start: ${first.stdout()}${first.stderr()}`);
        await sleep(10);
      }
      first.child.kill("SIGKILL");
      await first.exit;
      expect(await survivors(await postgresProcessesOn(dataDir), 500)).toEqual([]);

      const second = await spawnServer(command, env);
      second.child.kill("SIGTERM");
      expect(await second.exit).toBe(0);
    }, 180_000);
  });

  describe("a service whose Postgres dies under it (the OOM killer, say)", () => {
    it("exits 1 within seconds, so that its supervisor restarts it, and the restarted service has its data", async () => {
      const dataDir = await freshDataDir();
      const env = { ZERO_DATA_DIR: dataDir, LOG_LEVEL: "info" };
      const first = await spawnServer(command, env);
      let account: TestAccount;
      let exited: number | null | "still running";
      try {
        account = await createAccountWithKey(first, ["build", "read"]);
        const postmaster = Number((await fs.readFile(path.join(dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0]);
        process.kill(postmaster, "SIGKILL");
        exited = await Promise.race([first.exit, sleep(15_000).then(() => "still running" as const)]);
      } finally {
        if (first.child.exitCode === null) first.child.kill("SIGKILL");
      }
      expect(exited).toBe(1);
      expect(first.stderr()).toMatch(/^project-zero: the embedded Postgres exited \(signal SIGKILL\)/m);

      const second = await spawnServer(command, env);
      try {
        expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
        expect((await getExecution(second.url, { apiKey: account.apiKey })).status).toBe(200);
      } finally {
        second.child.kill("SIGTERM");
        await second.exit;
      }
    }, 120_000);
  });

  describe("a service started in a terminal", () => {
    it("Ctrl-C (SIGINT to the terminal's whole process group) stops the service, which stops its Postgres itself, with nothing to warn about", async () => {
      const dataDir = await freshDataDir();
      // A process group of its own, as a shell gives a foreground job: Ctrl-C signals every process in it.
      const server = await spawnServer(command, { ZERO_DATA_DIR: dataDir, LOG_LEVEL: "info" }, { ownProcessGroup: true });
      let postmaster: number;
      try {
        const account = await createAccountWithKey(server, ["build", "read"]);
        expect((await getExecution(server.url, { apiKey: account.apiKey })).status).toBe(200);
        postmaster = Number((await fs.readFile(path.join(dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0]);
        process.kill(-server.child.pid!, "SIGINT");
      } catch (error) {
        process.kill(-server.child.pid!, "SIGKILL");
        throw error;
      }
      expect(await server.exit).toBe(0);
      expect(isAlive(postmaster)).toBe(false);
      expect(server.stderr()).toBe("");
      const logged = server
        .stdout()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { level: number; msg: string });
      expect(logged.filter((line) => line.level >= 40)).toEqual([]);
      expect(logged.at(-1)!.msg).toBe("stopped");
    }, 120_000);

    /** Launched in a process group of its own on a fresh data dir; resolves once its Postgres runs, the start not yet done. */
    async function launchWhilePostgresStarts(dataDir: string, env: Record<string, string> = {}): Promise<Launched> {
      const server = launchServer(command, { ZERO_DATA_DIR: dataDir, LOG_LEVEL: "info", ...env }, { ownProcessGroup: true });
      const pidFile = path.join(dataDir, "postgres", "postmaster.pid");
      for (let i = 0; !(await fs.stat(pidFile).catch(() => undefined)); i++) {
        if (server.child.exitCode !== null || i > 6000) throw new Error(`Postgres did not start: ${server.stdout()}${server.stderr()}`);
        await sleep(10);
      }
      expect(server.stdout()).not.toContain('"msg":"listening"');
      return server;
    }

    it("Ctrl-C while its Postgres starts gives the start up: Postgres is stopped, and the service exits 130", async () => {
      const dataDir = await freshDataDir();
      const server = await launchWhilePostgresStarts(dataDir, { PATH: await withoutParentDeathSignal(await freshDataDir()) });
      const running = await postgresProcessesOn(dataDir);
      try {
        process.kill(-server.child.pid!, "SIGINT");
        expect(await server.exit).toBe(130);
        expect(await postgresProcessesOn(dataDir)).toEqual([]);
        expect(server.stdout()).not.toContain('"msg":"listening"');
        expect(server.stderr()).toBe("");
      } finally {
        for (const pid of await survivors(running, 0)) process.kill(pid, "SIGQUIT");
      }
    }, 120_000);

    it("a second signal while the start is given up exits at once, and still stops Postgres", async () => {
      const dataDir = await freshDataDir();
      const server = await launchWhilePostgresStarts(dataDir, { PATH: await withoutParentDeathSignal(await freshDataDir()) });
      const running = await postgresProcessesOn(dataDir);
      try {
        // Two kinds: the kernel keeps one of each pending, so two SIGINTs sent together may arrive as one.
        process.kill(-server.child.pid!, "SIGINT");
        process.kill(-server.child.pid!, "SIGTERM");
        expect(await server.exit).toBe(1);
        expect(server.stderr()).toMatch(/exiting now/);
        expect(await survivors(running)).toEqual([]);
      } finally {
        for (const pid of await survivors(running, 0)) process.kill(pid, "SIGQUIT");
      }
    }, 120_000);

    it.runIf(canMountPrivately())(
      "a first start on a full disk says why initdb failed",
      async () => {
        const dataDir = await freshDataDir();
        const [program, ...args] = onPrivateTmpfs(dataDir, "size=8m", command.argv);
        const child = spawn(program!, args, {
          env: { ...process.env, ...command.env, PORT: "0", HOST: "127.0.0.1", ZERO_DATA_DIR: dataDir, ZERO_EMBEDDED_DATABASE: "postgres" },
          stdio: ["ignore", "ignore", "pipe"],
        });
        let stderr = "";
        child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        expect(await new Promise((resolve) => child.once("exit", resolve))).toBe(1);
        expect(stderr.trim().split("\n")).toEqual([
          expect.stringMatching(/^project-zero: initdb failed: could not write to file ".+": No space left on device$/),
        ]);
      },
      120_000,
    );
  });
});

interface Spawned {
  child: ChildProcess;
  url: string;
  exit: Promise<number | null>;
  stdout(): string;
  stderr(): string;
}

describe("the environment the embedded Postgres runs with", () => {
  const service = {
    PATH: "/usr/local/bin:/usr/bin",
    TZ: "Europe/Paris",
    SystemRoot: "C:\\Windows",
    windir: "C:\\Windows",
    TEMP: "C:\\Users\\zero\\AppData\\Local\\Temp",
    TMP: "C:\\Users\\zero\\AppData\\Local\\Temp",
    USERPROFILE: "C:\\Users\\zero",
    PGSSLMODE: "require",
    PGPASSWORD: "psql's",
    OPENAI_API_KEY: "sk-not-for-postgres",
  };

  it("is PATH and TZ, messages in English, and none of the service's secrets or PG* variables", () => {
    expect(postgresEnvironment(service, "linux")).toEqual({ PATH: service.PATH, TZ: service.TZ, LC_MESSAGES: "C" });
    expect(postgresEnvironment(service, "darwin")).toEqual({ PATH: service.PATH, TZ: service.TZ, LC_MESSAGES: "C" });
  });

  it("on Windows also has what Winsock and temporary files need there", () => {
    const { PGSSLMODE, PGPASSWORD, OPENAI_API_KEY, ...kept } = service;
    expect(postgresEnvironment(service, "win32")).toEqual({ ...kept, LC_MESSAGES: "C" });
  });
});

// Found in CI: a first start failed with only "initdb failed: initdb: removing data directory …", initdb's cleanup,
// which says nothing of why.
describe("why initdb failed, as the service says it", () => {
  it("is the error its server reported, or its own", () => {
    const full =
      'running bootstrap script ... 2026-11-27 05:40:01.123 UTC [42] FATAL:  could not write to file "pg_wal/x": No space left on device\nchild process exited with exit code 1\ninitdb: removing data directory "/d"\n';
    expect(initdbFailure(full)).toBe('could not write to file "pg_wal/x": No space left on device');
    expect(initdbFailure('initdb: error: directory "/d" exists but is not empty\n')).toBe('directory "/d" exists but is not empty');
  });

  it("is how its child ended when no error was reported, never only its cleanup", () => {
    const killed = 'running bootstrap script ... child process was terminated by signal 9: Killed\ninitdb: removing data directory "/d"\n';
    expect(initdbFailure(killed)).toBe("child process was terminated by signal 9: Killed");
    const other = 'selecting dynamic shared memory implementation ... could not open shared memory segment\ninitdb: removing contents of data directory "/d"\n';
    expect(initdbFailure(other)).toBe("selecting dynamic shared memory implementation ... could not open shared memory segment");
  });
});

interface Launched {
  child: ChildProcess;
  exit: Promise<number | null>;
  stdout(): string;
  stderr(): string;
}

interface Spawned extends Launched {
  url: string;
}

/** `npm start`'s build and flags, on a free port, as it starts. */
function launchServer(command: ServerCommand, env: Record<string, string>, options: { ownProcessGroup?: boolean } = {}): Launched {
  const [node, ...args] = command.argv;
  const child = spawn(node!, args, {
    // Port 0, and the URL from its log: a port picked beforehand can be taken by another test's socket meanwhile.
    env: { ...process.env, ...command.env, PORT: "0", HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.ownProcessGroup === true,
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, exit, stdout: () => stdout, stderr: () => stderr };
}

/** launchServer, resolved once it listens. */
async function spawnServer(command: ServerCommand, env: Record<string, string>, options: { ownProcessGroup?: boolean } = {}): Promise<Spawned> {
  const launched = launchServer(command, env, options);
  for (let i = 0; !launched.stdout().includes('"msg":"listening"'); i++) {
    if (launched.child.exitCode !== null || i > 1200) throw new Error(`the server did not start: ${launched.stdout()}${launched.stderr()}`);
    await sleep(50);
  }
  return { ...launched, url: /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(launched.stdout())![1]! };
}

/** The processes (Linux: from /proc) whose command line names a directory in `dataDir`: its Postgres and initdb; only those running `program`, if named. */
async function postgresProcessesOn(dataDir: string, program?: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await fs.readdir("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const argv = (await fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
    if (program !== undefined && path.basename(argv[0]!) !== program) continue;
    if (argv.some((arg) => arg.startsWith(`${dataDir}${path.sep}`))) pids.push(pid);
  }
  return pids;
}

/**
 * A directory to put first in PATH whose `setpriv` has no `--pdeathsig`, as
 * where no parent-death signal exists (macOS, util-linux before 2.33):
 * nothing but the service itself then stops its Postgres.
 */
async function withoutParentDeathSignal(dir: string): Promise<string> {
  const bin = path.join(dir, "bin");
  await fs.mkdir(bin);
  await fs.writeFile(path.join(bin, "setpriv"), "#!/bin/sh\nexit 1\n", { mode: 0o755 });
  return `${bin}${path.delimiter}${process.env.PATH ?? ""}`;
}

/** Waits until `pids` are gone, up to `ms`; answers those still alive. */
async function survivors(pids: number[], ms = 10_000): Promise<number[]> {
  for (const until = Date.now() + ms; pids.some(isAlive) && Date.now() < until; ) await sleep(50);
  return pids.filter(isAlive);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
