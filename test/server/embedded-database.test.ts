import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey } from "../support/accounts.js";
import { testDatabaseKind } from "../support/database.js";
import { getExecution, postExecution } from "../support/executions.js";
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

  it.runIf(process.getuid?.() === 0)(
    "as root, where the postgres user cannot reach the data dir: PGlite with one warning, or a one-line refusal if Postgres was asked for",
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
    },
    120_000,
  );

  describe("a service killed with SIGKILL while it writes", () => {
    let command: ServerCommand;
    beforeAll(async () => {
      command = await serverCommand("src/main.ts", "dist/test");
    });

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

  describe("a service started in a terminal", () => {
    let command: ServerCommand;
    beforeAll(async () => {
      command = await serverCommand("src/main.ts", "dist/test");
    });

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

/** `npm start`'s build and flags, on a free port; resolves once it listens. */
async function spawnServer(command: ServerCommand, env: Record<string, string>, options: { ownProcessGroup?: boolean } = {}): Promise<Spawned> {
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
  for (let i = 0; !stdout.includes('"msg":"listening"'); i++) {
    if (child.exitCode !== null || i > 1200) throw new Error(`the server did not start: ${stdout}${stderr}`);
    await sleep(50);
  }
  return { child, url: /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(stdout)![1]!, exit, stdout: () => stdout, stderr: () => stderr };
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
