import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

/** A server process started from test/support/stage-server.ts. */
export interface StageServerProcess {
  child: ChildProcess;
  url: string;
  /** Every line it printed so far. */
  lines: () => string[];
  /** Its exit code (null after a signal). */
  exit: Promise<number | null>;
}

/** Starts test/support/stage-server.ts as its own process, configured by `env`; resolves once it listens. Killed after the test file. */
export async function spawnStageServer(env: Record<string, string>): Promise<StageServerProcess> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-crash-"));
  // Node itself with tsx's loader, not the tsx wrapper: a signal must reach the server, not a parent that relays it.
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/stage-server.ts"], {
    cwd: root,
    env: { ...process.env, PORT: "0", LOG_LEVEL: "warn", ZERO_DATA_DIR: dataDir, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const lines: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        lines.push(line);
        if (line.startsWith('{"url"')) resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    void exit.then((code) => reject(new Error(`server exited with ${code} before listening`)));
  });
  return { child, url, lines: () => lines, exit };
}
