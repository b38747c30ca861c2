import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";

/** The launcher `npx project-zero` runs (package.json `bin`). */
export const CLI_BIN = fileURLToPath(new URL("../../src/cli/project-zero.js", import.meta.url));

export interface CliRun {
  child: ChildProcessWithoutNullStreams;
  /** Everything written so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves once `pattern` has appeared on stdout (or stderr with `{ stream: "stderr" }`). */
  waitFor(pattern: string | RegExp, options?: { stream?: "stdout" | "stderr"; timeoutMs?: number }): Promise<void>;
  /** The exit code (or 128 + signal number, as a shell reports it). */
  exit: Promise<number>;
}

/**
 * Starts `project-zero …` as its own process, the way a person or a script
 * would, with only the environment given (plus PATH), from a directory
 * outside the package: stdin and stdout are pipes, so it is not on a terminal.
 */
export function startCli(args: string[], env: Record<string, string>, cwd = os.tmpdir()): CliRun {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    cwd,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const check of waiters) check();
  };
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    stdout += text;
    wake();
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
    wake();
  });
  // Set before the waiters are woken, so that one still waiting for a line gives up at once when the CLI has exited.
  let exited = false;
  const exit = new Promise<number>((resolve) => {
    child.on("close", (code, signal) => {
      exited = true;
      wake();
      resolve(code ?? 128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 9));
    });
  });

  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exit,
    waitFor(pattern, options = {}) {
      const read = () => (options.stream === "stderr" ? stderr : stdout);
      const found = () => (typeof pattern === "string" ? read().includes(pattern) : pattern.test(read()));
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${String(pattern)} on ${options.stream ?? "stdout"} in time\nstdout: ${stdout}\nstderr: ${stderr}`));
        }, options.timeoutMs ?? 20_000);
        const check = () => {
          if (found()) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          } else if (exited) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`the CLI exited before ${String(pattern)}\nstdout: ${stdout}\nstderr: ${stderr}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** Runs `project-zero …` to the end. */
export async function runCli(args: string[], env: Record<string, string>, cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = startCli(args, env, cwd);
  run.child.stdin.end();
  const code = await run.exit;
  return { code, stdout: run.stdout, stderr: run.stderr };
}
