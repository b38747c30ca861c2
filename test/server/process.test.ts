import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { canMountPrivately, onPrivateTmpfs, removeDataDir, serverCommand, type ServerCommand } from "../support/server-process.js";
import { unusedPort } from "../support/ports.js";

const root = path.resolve(import.meta.dirname, "../..");
/** `node <start flags> dist/test/main.js`: what `npm start` runs, built once for this file. */
let command: ServerCommand;

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/** The server as `npm start` runs it; `wrap` puts a command around it (a private mount, say). */
function runServer(env: Record<string, string>, wrap: (argv: string[]) => string[] = (argv) => argv): Run {
  const [node, ...args] = wrap(command.argv);
  const child = spawn(node!, args, { cwd: root, env: { ...process.env, ...command.env, LOG_LEVEL: "info", ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

async function waitFor(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the server said on stderr, one entry a line, less npm's own warnings. */
function stderrLines(run: Run): string[] {
  return run
    .stderr()
    .trim()
    .split("\n")
    .filter((line) => line !== "" && !line.includes("npm warn"));
}

/** The URL a server on port 0 logged when it started listening. */
function listeningUrl(stdout: string): string {
  return /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(stdout)![1]!;
}

describe("the server process, built as npm start builds it", () => {
  beforeAll(async () => {
    command = await serverCommand("src/main.ts", "dist/test");
  });
  it("is built as ASCII, which V8 keeps at one byte a character (one other character doubles it)", async () => {
    const bundle = await fs.readFile(command.argv.at(-1)!, "latin1");
    const offending = [...bundle.matchAll(/.{0,40}[^\x00-\x7f].{0,20}/g)].map((m) => m[0]);
    expect(offending).toEqual([]);
  });

  // Each test starts a real process (PGlite's first initdb): slow on a busy machine.
  it("exits non-zero with one clear line when DATABASE_URL points at a stopped server", async () => {
    const port = await unusedPort();
    const run = runServer({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/zero`, PORT: "0" });
    expect(await run.exit).toBe(1);
    const lines = run
      .stderr()
      .trim()
      .split("\n")
      .filter((l) => !l.includes("npm warn"));
    expect(lines).toEqual([expect.stringMatching(new RegExp(`^project-zero: cannot reach the database at 127\\.0\\.0\\.1:${port}/zero: .*ECONNREFUSED`))]);
  });

  it("exits 2 naming each bad variable before starting anything", async () => {
    const run = runServer({ PORT: "http", ZERO_SIGNUP: "sometimes" });
    expect(await run.exit).toBe(2);
    expect(run.stderr()).toContain("project-zero: bad configuration: PORT:");
    expect(run.stderr()).toContain("project-zero: bad configuration: ZERO_SIGNUP:");
  });

  it("checks the TLS files and the data dir with the rest of the configuration: exit 2, one line each, nothing made or started", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-proc-"));
    try {
      const dataDir = path.join(dir, "data");
      const missing = path.join(dir, "missing.pem");
      const run = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir, ZERO_TLS_CERT_FILE: missing, ZERO_TLS_KEY_FILE: dir });
      expect(await run.exit).toBe(2);
      const lines = run
        .stderr()
        .trim()
        .split("\n")
        .filter((l) => !l.includes("npm warn"));
      expect(lines).toEqual([
        `project-zero: bad configuration: ZERO_TLS_CERT_FILE: cannot read ${missing}: no such file`,
        `project-zero: bad configuration: ZERO_TLS_KEY_FILE: cannot read ${dir}: a directory, not a file`,
      ]);
      expect(await fs.readdir(dir)).toEqual([]);

      await fs.writeFile(path.join(dir, "a-file"), "");
      const underFile = runServer({ PORT: "0", ZERO_DATA_DIR: path.join(dir, "a-file", "data") });
      expect(await underFile.exit).toBe(2);
      expect(underFile.stderr().trim()).toBe(`project-zero: bad configuration: ZERO_DATA_DIR: ${path.join(dir, "a-file")} is a file, not a directory`);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("names HOST or PORT, with the system's reason, when it cannot listen there, before it starts a database", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-proc-"));
    const taken = net.createServer();
    const takenPort = await new Promise<number>((resolve) => taken.listen(0, "127.0.0.1", () => resolve((taken.address() as net.AddressInfo).port)));
    try {
      const cases: [Record<string, string>, RegExp][] = [
        [{ HOST: "nosuchhost.invalid" }, /^project-zero: HOST: cannot listen on nosuchhost\.invalid: the name does not resolve \((ENOTFOUND|EAI_AGAIN)\)$/],
        [{ HOST: "192.0.2.1" }, /^project-zero: HOST: cannot listen on 192\.0\.2\.1: not an address of this machine \(EADDRNOTAVAIL\)$/],
        [
          { PORT: String(takenPort) },
          new RegExp(`^project-zero: PORT: cannot listen on 127\\.0\\.0\\.1:${takenPort}: another process listens there \\(EADDRINUSE\\)$`),
        ],
      ];
      for (const [env, line] of cases) {
        const run = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir, ...env });
        expect(await run.exit).toBe(1);
        expect(stderrLines(run)).toEqual([expect.stringMatching(line)]);
        expect(run.stdout()).not.toMatch(/"level":[4-6]\d/);
        // No database was made, so none had to be stopped.
        expect(await fs.readdir(dataDir)).toEqual([]);
      }
    } finally {
      taken.close();
      await removeDataDir(dataDir);
    }
  }, 60_000);

  it.runIf(canMountPrivately())("names ZERO_DATA_DIR when it is on a read-only file system, whether it exists or is to be made: exit 2", async () => {
    const mount = await fs.mkdtemp(path.join(os.tmpdir(), "zero-proc-"));
    try {
      for (const dataDir of [mount, path.join(mount, "new", "data")]) {
        const run = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir }, (argv) => onPrivateTmpfs(mount, "ro", argv));
        expect(await run.exit).toBe(2);
        expect(stderrLines(run)).toEqual([`project-zero: bad configuration: ZERO_DATA_DIR: cannot write in ${mount}: read-only file system`]);
      }
    } finally {
      await fs.rm(mount, { recursive: true, force: true });
    }
  });

  it("names ZERO_DATA_DIR when a file in it fails at start, with the system's reason", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-proc-"));
    try {
      // A cluster whose password file was deleted.
      await fs.mkdir(path.join(dataDir, "postgres"));
      await fs.writeFile(path.join(dataDir, "postgres", "PG_VERSION"), "18\n");
      const run = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir });
      expect(await run.exit).toBe(1);
      expect(stderrLines(run)).toEqual([
        `project-zero: ZERO_DATA_DIR: cannot open ${path.join(dataDir, "postgres.password")}: no such file or directory (ENOENT)`,
      ]);
    } finally {
      await removeDataDir(dataDir);
    }
  });

  // Root may write in /proc, where mkdir answers ENOENT: Node's recursive mkdir retried that for ever, at full CPU.
  it.runIf(process.getuid?.() === 0)(
    "names ZERO_DATA_DIR, with the system's reason, when it cannot make it in a file system that takes no directories",
    async () => {
      for (const dataDir of ["/proc/zero-data", "/proc/zero-data/nested"]) {
        const run = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir });
        const exited = await Promise.race([run.exit, new Promise((resolve) => setTimeout(resolve, 20_000, "still running"))]);
        if (exited === "still running") run.child.kill("SIGKILL");
        expect(exited).toBe(1);
        expect(stderrLines(run)).toEqual(["project-zero: ZERO_DATA_DIR: cannot mkdir /proc/zero-data: no such file or directory (ENOENT)"]);
      }
    },
    60_000,
  );

  it("refuses a second process on the same data dir with one line, and the first keeps its data", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-proc-"));
    const first = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir });
    try {
      await waitFor(() => first.stdout().includes('"msg":"listening"'), "the first server to listen", 60_000);
      const firstUrl = listeningUrl(first.stdout());
      const before = await (await fetch(`${firstUrl}/api/capabilities`)).json();
      const second = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir });
      expect(await second.exit).toBe(1);
      const lines = second
        .stderr()
        .trim()
        .split("\n")
        .filter((l) => !l.includes("npm warn"));
      expect(lines).toEqual([
        `project-zero: another process (pid ${first.child.pid}) holds the data dir ${dataDir}; stop it, or give this one its own ZERO_DATA_DIR`,
      ]);
      expect(second.stdout()).not.toContain('"msg":"listening"');
      // The first is untouched and still answers from its database.
      expect(await (await fetch(`${firstUrl}/api/capabilities`)).json()).toEqual(before);
      expect(await fetch(`${firstUrl}/readyz`).then((r) => r.status)).toBe(200);
    } finally {
      first.child.kill("SIGKILL");
      await first.exit;
    }
    // kill -9 leaves no stale lock: the kernel released it with the process.
    const third = runServer({ PORT: "0", ZERO_DATA_DIR: dataDir });
    try {
      await waitFor(() => third.stdout().includes('"msg":"listening"'), "a new server after kill -9", 60_000);
    } finally {
      third.child.kill("SIGKILL");
      await third.exit;
      await removeDataDir(dataDir);
    }
  }, 180_000);

  it("serves on the configured port and stops cleanly on SIGTERM, ending open streams", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-proc-"));
    const port = await unusedPort();
    const run = runServer({ PORT: String(port), ZERO_DATA_DIR: dataDir, ZERO_SHUTDOWN_GRACE_MS: "5000" });
    try {
      await waitFor(() => run.stdout().includes('"msg":"listening"'), "the server to listen", 60_000);
      const res = await fetch(`http://127.0.0.1:${port}/api/capabilities`);
      expect(res.status).toBe(200);
      // The Console's front end is bundled from its sources at run time; from dist/ they must still be found.
      const page = await (await fetch(`http://127.0.0.1:${port}/console`)).text();
      const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page)?.[1];
      expect(script).toBeDefined();
      const asset = await fetch(`http://127.0.0.1:${port}${script}`);
      expect(asset.status).toBe(200);
      expect((await asset.text()).length).toBeGreaterThan(1000);
      // A long-lived server stream (gRPC health Watch over Connect) is open when the signal arrives.
      const watch = await fetch(`http://127.0.0.1:${port}/grpc.health.v1.Health/Watch`, {
        method: "POST",
        headers: { "content-type": "application/connect+json" },
        body: Buffer.concat([Buffer.from([0, 0, 0, 0, 2]), Buffer.from("{}")]),
      });
      const reader = watch.body!.pipeThrough(new TextDecoderStream()).getReader();
      let said = "";
      // The stream is open, and has said so, before the signal.
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        said += read.value;
        if (said.includes("SERVING")) break;
      }
      run.child.kill("SIGTERM");
      expect(await run.exit).toBe(0);
      for (let read = await reader.read(); !read.done; read = await reader.read()) said += read.value;
      expect(said).toContain("SERVING");
      expect(run.stdout()).toContain('"msg":"stopped"');
    } finally {
      run.child.kill("SIGKILL");
      await run.exit;
      await removeDataDir(dataDir);
    }
  }, 120_000);
  it("in a terminal, says one thing at start: the URL to open", async () => {
    // `script` (util-linux) gives the server a pseudo-terminal as stdout, as `npm start` in a shell does.
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-tty-"));
    const quoted = command.argv.map((word) => `'${word}'`).join(" ");
    // Port 0, and the port read from the line: a port picked beforehand can be taken by another test's socket meanwhile.
    const env: NodeJS.ProcessEnv = { ...process.env, ...command.env, PORT: "0", ZERO_DATA_DIR: dataDir };
    delete env.LOG_LEVEL;
    const child = spawn("script", ["-qfec", quoted, "/dev/null"], { cwd: root, env });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const lines = () => output.split(/\r?\n/).filter((line) => line.trim() !== "");
    const running = /^project-zero is running: open (http:\/\/127\.0\.0\.1:\d+)\/console\/ \(Ctrl-C stops it\)$/;
    try {
      await waitFor(() => output.includes("\n"), "the first line", 60_000);
      expect(lines()).toEqual([expect.stringMatching(running)]);
      const page = await fetch(`${running.exec(lines()[0]!)![1]}/console/`);
      expect(page.status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
      expect(lines()).toHaveLength(1);
    } finally {
      child.kill("SIGTERM");
      await exit;
    }
  });
});
