import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ERROR_TYPES } from "../api/errors.js";
import { createZeroClient } from "../client/node.js";
import { PlanSchema, ZeroError, type Plan, type ZeroClient } from "../client/zero-client.js";
import { transportFailureOf } from "../client/zero-error.js";
import { describeError, ExitCode, exitCodeFor } from "./exit-codes.js";
import { printable, terminalFor, type Terminal, type WritableOutput } from "./terminal.js";
import { withoutTrailingSlashes } from "../strings.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";
/** How long a command waits for the answer to one call (a download's head, not its body; not a watch or a chat stream). */
const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/**
 * `call`'s answer, or a `deadline_exceeded` once `ms` have passed without
 * one, so a server that takes the connection and never answers does not hang
 * the command. The time stops counting once the answer is in: a download's
 * body may rightly take longer than its head.
 */
async function answeredWithin<T>(ms: number, signal: AbortSignal | undefined, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), ms);
  try {
    return await call(signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal);
  } catch (error) {
    if (deadline.signal.aborted && !signal?.aborted) {
      throw new ConnectError(`the service did not answer within ${ms / 1000} s (ZERO_CALL_TIMEOUT_MS)`, Code.DeadlineExceeded);
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Bounds each unary call by `answeredWithin`. Streams (a watch, a chat) may rightly stay open for long. */
function unaryDeadline(ms: number): Interceptor {
  return (next) => (request) => (request.stream ? next(request) : answeredWithin(ms, request.signal, (signal) => next({ ...request, signal })));
}

/** What no key has: anything but visible ASCII (a key is `zk_` and letters and digits); the HTTP header could not carry most of it. */
const NOT_IN_A_KEY = /[^\x21-\x7e]/u;

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
  /** The service, `http(s)://host:port` (or the value as given, when it is not one: see `client()`). */
  readonly baseUrl: string;
  /** Why --url or ZERO_URL cannot be the service's address; reported by the first command that calls it. */
  readonly #badUrl: string | undefined;
  #client: ZeroClient | undefined;

  constructor(
    readonly io: CliIo,
    readonly options: { url: string | undefined; json: boolean; scope: string },
  ) {
    this.out = terminalFor(io.stdout, io.env);
    this.err = terminalFor(io.stderr, io.env);
    const [source, value] = options.url !== undefined ? ["--url", options.url] : io.env.ZERO_URL ? ["ZERO_URL", io.env.ZERO_URL] : ["", DEFAULT_URL];
    const url = serviceUrl(value);
    this.baseUrl = url.ok ? url.origin : value;
    this.#badUrl = url.ok ? undefined : `${source} must be http(s)://host:port${url.problem}, not ${JSON.stringify(value)}${url.hint}`;
  }

  get json(): boolean {
    return this.options.json;
  }

  /** The client, with the key from ZERO_API_KEY; stops with exit 2 on a bad --url or ZERO_URL, exit 3 without a usable key. */
  client(): ZeroClient {
    if (this.#badUrl) {
      this.report("invalid_request", this.#badUrl);
      throw new CommandStop(ExitCode.usage);
    }
    const apiKey = this.io.env.ZERO_API_KEY?.trim();
    if (!apiKey) {
      this.report("unauthenticated", `ZERO_API_KEY is not set; make a key in the Console (${this.baseUrl}/console) and export ZERO_API_KEY=zk_…`);
      throw new CommandStop(ExitCode.auth);
    }
    const stray = NOT_IN_A_KEY.exec(apiKey);
    if (stray) {
      // A key copied with the quotes or spaces around it, never sent: it would not be accepted, or not fit a header.
      const character = `U+${stray[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
      this.report(
        "unauthenticated",
        `ZERO_API_KEY contains characters a key never has (${character} at character ${stray.index + 1}); a key is zk_ and letters and digits: copy it again from the Console (${this.baseUrl}/console)`,
      );
      throw new CommandStop(ExitCode.auth);
    }
    this.#client ??= createZeroClient({ baseUrl: this.baseUrl, apiKey, interceptors: [unaryDeadline(this.#callTimeoutMs())] });
    return this.#client;
  }

  /** ZERO_CALL_TIMEOUT_MS, checked: how long each call's answer is waited for. */
  #callTimeoutMs(): number {
    const timeout = this.io.env.ZERO_CALL_TIMEOUT_MS?.trim() || String(DEFAULT_CALL_TIMEOUT_MS);
    if (!/^[1-9]\d{0,8}$/.test(timeout)) {
      this.report("invalid_request", `ZERO_CALL_TIMEOUT_MS must be a whole number of milliseconds, not "${printable(timeout)}"`);
      throw new CommandStop(ExitCode.usage);
    }
    return Number(timeout);
  }

  /**
   * `call`'s answer, waited for no longer than ZERO_CALL_TIMEOUT_MS, as each
   * call of `client()` is: for a download, a plain fetch that no interceptor
   * sees. `signal` (Ctrl-C) still ends it at any time.
   */
  answerWithin<T>(signal: AbortSignal, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return answeredWithin(this.#callTimeoutMs(), signal, call);
  }

  /** A human line on stdout (skipped with --json, where stdout is for JSON only). */
  say(text: string): void {
    if (!this.json) this.out.write(`${text}\n`);
  }

  /** Advice and progress notes: on stderr, so they never mix into piped results; with --json as `{"note": …}`, like errors. */
  note(text: string): void {
    this.err.write(this.json ? `${JSON.stringify({ note: text })}\n` : `${printable(text)}\n`);
  }

  /** One JSON value per line on stdout. */
  emit(value: JsonValue): void {
    this.out.write(`${JSON.stringify(value)}\n`);
  }

  planJson(plan: Plan): JsonValue {
    return toJson(PlanSchema, plan, { alwaysEmitImplicit: true });
  }

  /** Reports a failed call in one line (or one JSON object) and returns the exit code it means. */
  async fail(error: unknown): Promise<ExitCode> {
    if (error instanceof CommandStop) return error.exitCode;
    const zeroError = ZeroError.from(error);
    const otherAnswer = answeredByAnotherServer(zeroError) ? zeroError.message : await this.#otherServerAnswer(zeroError);
    if (otherAnswer !== undefined) {
      this.report("unreachable", `${this.baseUrl} is not a project-zero service (it answered: ${otherAnswer}); check --url or ZERO_URL`);
      return ExitCode.unavailable;
    }
    this.report(zeroError.type, describeError(zeroError, { baseUrl: this.baseUrl, scope: this.options.scope }), zeroError);
    return exitCodeFor(zeroError);
  }

  /**
   * For a call that got no answer (a connection closed or refused): what
   * answers a plain GET of the service's capabilities at that address, when
   * something does and it is not project-zero. A web server that answers a
   * POST before reading it and hangs up (Python's http.server) looks, to the
   * call, like no server at all. A 5xx proves nothing either way (the service
   * starting, or a proxy in front of it while it restarts), and an error in
   * the service's own shape is the service.
   */
  async #otherServerAnswer(error: ZeroError): Promise<string | undefined> {
    if (error.type !== "unreachable" || transportFailureOf(error.cause) !== "no_answer") return undefined;
    try {
      const answer = await answeredWithin(this.#callTimeoutMs(), undefined, async (signal) => {
        const response = await fetch(`${this.baseUrl}/api/capabilities`, { signal });
        const body = (await response.json().catch(() => undefined)) as { service?: unknown; error?: { type?: unknown } } | undefined;
        const ours = body?.service === "project-zero" || (typeof body?.error?.type === "string" && Object.hasOwn(ERROR_TYPES, body.error.type));
        return { status: response.status, ours };
      });
      return answer.ours || answer.status >= 500 ? undefined : `HTTP ${answer.status}`;
    } catch {
      // Nothing answers that either: the call's own words say it best.
      return undefined;
    }
  }

  report(type: string, line: string, error?: ZeroError): void {
    if (this.json) {
      const detail: Record<string, JsonValue> = { type, message: error?.message ?? line };
      if (error && error.unavailable.length > 0) detail.unavailable = [...error.unavailable];
      if (error?.retryAfterSeconds !== undefined) detail.retryAfterSeconds = error.retryAfterSeconds;
      this.err.write(`${JSON.stringify({ error: detail })}\n`);
    } else {
      this.err.write(`project-zero: ${printable(line)}\n`);
    }
  }
}

/**
 * `value` as the service's address. The client appends RPC paths to it, so
 * anything past the port (`/api`) would reach nothing, and a value without
 * `http://` is no URL at all (or, as `localhost:8080`, one with scheme `localhost:`).
 */
export function serviceUrl(value: string): { ok: true; origin: string } | { ok: false; problem: string; hint: string } {
  const url = parsedUrl(withoutTrailingSlashes(value));
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    const guess = value.includes("://") ? undefined : serviceUrl(`http://${value}`);
    return { ok: false, problem: "", hint: guess?.ok ? ` (did you mean http://${value}?)` : "" };
  }
  if (url.pathname !== "/" && url.pathname !== "") return { ok: false, problem: " with no path", hint: "" };
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") return { ok: false, problem: "", hint: "" };
  return { ok: true, origin: url.origin };
}

function parsedUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/**
 * A failure no project-zero service would send: every error it answers with
 * carries an ErrorDetail, so an answer without one that the transport took
 * for a wrong content type, a missing route (404, 405) or a server fault came
 * from something else at that address. Failures this process raised itself
 * (a ConnectError wrapping another error) are not that.
 */
function answeredByAnotherServer(error: ZeroError): boolean {
  return !error.fromServer && (error.type === "internal" || error.type === "method_not_allowed") && error.cause.cause === undefined;
}
