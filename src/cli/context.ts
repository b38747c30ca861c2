import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { createZeroClient } from "../client/node.js";
import { PlanSchema, ZeroError, type Plan, type ZeroClient } from "../client/zero-client.js";
import { describeError, ExitCode, exitCodeFor } from "./exit-codes.js";
import { terminalFor, type Terminal, type WritableOutput } from "./terminal.js";
import { withoutTrailingSlashes } from "../strings.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The process around the CLI, passed in so tests can run it with their own streams. */
export interface CliIo {
  stdout: WritableOutput & NodeJS.WritableStream;
  stderr: WritableOutput & NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** Calls `handler` on Ctrl-C (SIGINT) until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
}

/** Thrown when a command cannot go on; carries the exit code and has been reported already. */
export class CommandStop extends Error {
  constructor(readonly exitCode: ExitCode) {
    super(`exit ${exitCode}`);
  }
}

/** What every command gets: where to write, whom to call, how to report. */
export class CliContext {
  readonly out: Terminal;
  readonly err: Terminal;
  readonly baseUrl: string;
  #client: ZeroClient | undefined;

  constructor(
    readonly io: CliIo,
    readonly options: { url: string | undefined; json: boolean; scope: string },
  ) {
    this.out = terminalFor(io.stdout, io.env);
    this.err = terminalFor(io.stderr, io.env);
    this.baseUrl = withoutTrailingSlashes(options.url ?? io.env.ZERO_URL ?? DEFAULT_URL);
  }

  get json(): boolean {
    return this.options.json;
  }

  /** The client, with the key from ZERO_API_KEY; stops with exit 3 when there is none. */
  client(): ZeroClient {
    const apiKey = this.io.env.ZERO_API_KEY?.trim();
    if (!apiKey) {
      this.report("unauthenticated", `ZERO_API_KEY is not set; make a key in the Console (${this.baseUrl}/console) and export ZERO_API_KEY=zk_…`);
      throw new CommandStop(ExitCode.auth);
    }
    this.#client ??= createZeroClient({ baseUrl: this.baseUrl, apiKey });
    return this.#client;
  }

  /** A human line on stdout (skipped with --json, where stdout is for JSON only). */
  say(text: string): void {
    if (!this.json) this.out.write(`${text}\n`);
  }

  /** Advice and progress notes: on stderr, so they never mix into piped results. */
  note(text: string): void {
    this.err.write(`${text}\n`);
  }

  /** One JSON value per line on stdout. */
  emit(value: JsonValue): void {
    this.out.write(`${JSON.stringify(value)}\n`);
  }

  planJson(plan: Plan): JsonValue {
    return toJson(PlanSchema, plan, { alwaysEmitImplicit: true });
  }

  /** Reports a failed call in one line (or one JSON object) and returns the exit code it means. */
  fail(error: unknown): ExitCode {
    if (error instanceof CommandStop) return error.exitCode;
    const zeroError = ZeroError.from(error);
    this.report(zeroError.type, describeError(zeroError, { baseUrl: this.baseUrl, scope: this.options.scope }), zeroError);
    return exitCodeFor(zeroError);
  }

  report(type: string, line: string, error?: ZeroError): void {
    if (this.json) {
      const detail: Record<string, JsonValue> = { type, message: error?.message ?? line };
      if (error && error.unavailable.length > 0) detail.unavailable = [...error.unavailable];
      if (error?.retryAfterSeconds !== undefined) detail.retryAfterSeconds = error.retryAfterSeconds;
      this.err.write(`${JSON.stringify({ error: detail })}\n`);
    } else {
      this.err.write(`project-zero: ${line}\n`);
    }
  }
}
