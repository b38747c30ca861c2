import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * One instance of the service as an operator runs it: `src/main.ts` in its
 * own process, configured from the environment. Its stdout (the JSON log)
 * is appended to `logFile` across restarts, so the whole life of the
 * instance can be scanned afterwards.
 */
export class ServiceInstance {
  #child: ChildProcess | undefined;
  #exit: Promise<number | null> = Promise.resolve(null);
  #url = "";
  #instanceId = "";
  #port = 0;
  /** Bumped on every start; requests remember which life they were sent to. */
  generation = 0;

  constructor(
    readonly name: string,
    readonly env: Record<string, string>,
    readonly logFile: string,
  ) {}

  get url(): string {
    return this.#url;
  }

  /** The id of the current process in `service_instances` (and the lease owner of its stages). */
  get instanceId(): string {
    return this.#instanceId;
  }

  /** The process id of the current life (for counting its descriptors). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /**
   * Starts the process and resolves once it logs "listening". A restart keeps
   * the port of the first start, as a process manager would.
   */
  async start(timeoutMs = 60_000): Promise<void> {
    const log = fs.createWriteStream(this.logFile, { flags: "a" });
    // Node with tsx's loader rather than the tsx wrapper: SIGKILL must hit the server itself, not a parent.
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      env: { ...process.env, ...this.env, PORT: String(this.#port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#child = child;
    this.generation++;
    this.#exit = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    child.stderr!.pipe(log, { end: false });
    const listening = new Promise<{ url: string; instanceId: string }>((resolve, reject) => {
      let buffered = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        log.write(chunk);
        buffered += chunk.toString("utf8");
        for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          if (line.includes('"msg":"listening"')) resolve(JSON.parse(line) as { url: string; instanceId: string });
        }
      });
      void this.#exit.then((code) => reject(new Error(`${this.name} exited with ${code} before listening; see ${this.logFile}`)));
      setTimeout(() => reject(new Error(`${this.name} did not listen within ${timeoutMs} ms`)), timeoutMs).unref();
    });
    void this.#exit.then(() => log.end());
    const { url, instanceId } = await listening;
    this.#url = url;
    this.#instanceId = instanceId;
    this.#port = Number(new URL(url).port);
  }

  /** SIGKILL: no hand-back, no give-back; resolves once the process is gone. */
  async kill(): Promise<void> {
    this.#child?.kill("SIGKILL");
    await this.#exit;
  }

  /** SIGTERM: the graceful stop (leases handed back, pool units given back). Resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (!this.running) return this.#exit;
    this.#child!.kill("SIGTERM");
    return this.#exit;
  }
}
