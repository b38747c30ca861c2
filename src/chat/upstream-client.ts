import type { Span } from "@opentelemetry/api";
import type { Dispatcher } from "undici";
import Pool from "undici/lib/dispatcher/pool.js";
import type { UpstreamConfig, UpstreamTimeouts } from "../config.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { endSpan, type Tracing } from "../observability/tracing.js";
import { ServiceError } from "../server/errors.js";
import type { GatewayRequest, RequestLog } from "./chat-types.js";
import { upstreamEmbeddingsBody, upstreamRequestBody } from "./completion-rewrite.js";
import { hasTurnWithoutReasoning, type RecalledTurns } from "./tool-turns.js";
import { EMBEDDING_REQUEST_FIELDS, REQUEST_FIELDS } from "./openai-fields.js";
import { UpstreamBody } from "./upstream-body.js";
import { withoutTrailingSlashes } from "../strings.js";

/** An upstream that accepted the request: its answer is now ours to relay. */
export interface UpstreamAnswer {
  body: UpstreamBody;
  /** The upstream's model name, scrubbed from any message we pass on. */
  model: string;
  /** Operator-facing name, for logs only. */
  upstream: string;
  /** Tells the operator (metrics, log and the attempt's span) that this answer failed after it began: it broke off, stalled or made no sense. */
  broke(error: ServiceError): void;
  /** Tells that the relay is done with this answer, read whole or not: the attempt's span ends here, failed if it broke. */
  release(): void;
}

interface Target {
  config: UpstreamConfig;
  pool: Pool;
  path: string;
  embeddingsPath: string;
  headers: Record<string, string>;
  streamHeaders: Record<string, string>;
  /** Fields this upstream refused as unknown (see UNKNOWN_TO_SOME): not sent to it again. */
  refusedFields: Set<string>;
  /** Set once this upstream refused a tool turn without reasoning (a thinking model): each such turn goes with an empty one. */
  thinking: boolean;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Fields some OpenAI-compatible providers refuse as unknown (Mistral answers
 * 422 `extra_forbidden` naming them) that change nothing of the answer's
 * content, or that have a name every provider takes: dropped for an
 * upstream that refused them, once it has, and the request sent again.
 * `max_completion_tokens` goes as `max_tokens`; an empty `tools` goes not at
 * all. Other fields refused stay the request's fault, as a provider that
 * cannot honour `response_format` must not answer without it.
 */
const UNKNOWN_TO_SOME: ReadonlySet<string> = new Set([
  "max_completion_tokens",
  "stream_options",
  "store",
  "metadata",
  "service_tier",
  "prompt_cache_key",
  "prompt_cache_options",
  "prompt_cache_retention",
  "safety_identifier",
  "user",
  "tools",
]);

/**
 * Statuses that say the operator's entry is at fault (its key, its provider
 * account out of credit, or its model name; or a base URL that moved, which
 * is never followed, since the key would go with it): the next upstream may
 * be set up right.
 */
const ENTRY_FAULT = new Set([301, 302, 303, 307, 308, 401, 402, 403, 404]);

/** The cause that tells upstreamMisconfigured's `upstream_error` from any other. */
const ENTRIES_REFUSED = Object.freeze({ reason: "every upstream refused its entry's key or model name" });

/**
 * Every upstream refused the service's own key, account or model name
 * (401, 402, 403, 404), or answered with a redirect: ZERO_UPSTREAMS is wrong, and no retry mends it. A gateway client
 * sees a 502 `upstream_error`; a stage fails at once (see stageFailureOf).
 */
function upstreamMisconfigured(): ServiceError {
  return new ServiceError(
    "upstream_error",
    "the model provider refused the service's key, account or model name; check the API keys, the provider accounts' credit and the model names in ZERO_UPSTREAMS",
    { cause: ENTRIES_REFUSED },
  );
}

/** True for the error `send` throws when every upstream refused its entry's key or model name. */
export function isUpstreamMisconfigured(error: unknown): boolean {
  return error instanceof ServiceError && error.cause === ENTRIES_REFUSED;
}

/** Statuses that say the request itself is at fault: another upstream would refuse it too. */
const CLIENT_FAULT = new Set([400, 413, 415, 422]);

const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** True for undici's connect, first-byte and idle-gap timeouts. */
export function isTimeout(error: unknown): boolean {
  return typeof error === "object" && error !== null && TIMEOUT_CODES.has(String((error as { code?: unknown }).code));
}

/**
 * The configured upstreams, each behind its own keep-alive connection pool.
 * `send` tries them in order and returns the first that answers 2xx; a
 * connect error, a timeout, 429 or 5xx (and 401/403/404, which mean the
 * operator's entry is wrong) moves on to the next. Nothing of the client's
 * request but its body reaches an upstream, and nothing of an upstream
 * (headers, name, model) is returned except the body.
 */
export class UpstreamClient {
  readonly #targets: Target[];
  readonly #logger: Logger;
  /** A body read whole (an answer not streamed, a refusal's text) must be complete this long after its request was sent. */
  readonly #wholeAnswerMs: number;

  readonly #metrics: Pick<Metrics, "upstreamDuration" | "upstreamErrors"> | undefined;
  readonly #tracing: Tracing | undefined;

  constructor(
    upstreams: readonly UpstreamConfig[],
    timeouts: UpstreamTimeouts,
    logger: Logger,
    metrics?: Pick<Metrics, "upstreamDuration" | "upstreamErrors">,
    tracing?: Tracing,
  ) {
    this.#metrics = metrics;
    this.#tracing = tracing;
    this.#logger = logger;
    // A non-streamed answer's head comes once it is complete, so its first-byte timeout bounds the whole of it.
    this.#wholeAnswerMs = timeouts.firstByteMs;
    this.#targets = upstreams.map((config) => {
      const base = new URL(config.baseUrl);
      // Answers are read as they come, so none may be compressed (a server may pick any coding when none is named).
      const headers: Record<string, string> = { "content-type": "application/json", "accept-encoding": "identity" };
      if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
      return {
        config,
        pool: new Pool(base.origin, {
          connectTimeout: timeouts.connectMs,
          headersTimeout: timeouts.firstByteMs,
          bodyTimeout: timeouts.idleMs,
          keepAliveTimeout: 30_000,
          // Bounds sockets per upstream; requests beyond it queue in the pool.
          connections: 512,
        }),
        // A query the base URL carries (Azure's `?api-version=`) goes with every request.
        path: `${withoutTrailingSlashes(base.pathname)}/chat/completions${base.search}`,
        embeddingsPath: `${withoutTrailingSlashes(base.pathname)}/embeddings${base.search}`,
        headers,
        streamHeaders: { ...headers, accept: "text/event-stream" },
        refusedFields: new Set<string>(),
        thinking: false,
      };
    });
  }

  /** True when at least one upstream is configured. */
  get configured(): boolean {
    return this.#targets.length > 0;
  }

  /** True when an upstream comes after `name` in the order `send` tries them: a failover is left. */
  hasAfter(name: string, embeddings = false): boolean {
    return this.#targetsAfter(name, embeddings).length > 0;
  }

  /** The upstreams `send` tries, in order; with `after`, only those after that one (a failover from its answer). */
  #targetsAfter(after: string | undefined, embeddings = false) {
    const targets = embeddings ? this.#targets.filter((target) => target.config.embeddingModel !== undefined) : this.#targets;
    return after === undefined ? targets : targets.slice(targets.findIndex((target) => target.config.name === after) + 1);
  }

  /** True when at least one upstream declares an embedding model. */
  get servesEmbeddings(): boolean {
    return this.#targets.some((target) => target.config.embeddingModel !== undefined);
  }

  /**
   * Sends the request to the first upstream that accepts it. Throws a
   * ServiceError: `upstream_timeout` or `upstream_error` when none did
   * (isUpstreamMisconfigured when each refused its entry's key or model),
   * `invalid_request` when one refused the request itself. An abort of
   * `signal` rejects with undici's abort error at once. Failures are logged
   * to `requestLog` when given, else to the client's own logger.
   */
  async send(
    request: GatewayRequest,
    options: {
      stream: boolean;
      signal?: AbortSignal;
      embeddings?: boolean;
      after?: string | undefined;
      requestLog?: RequestLog;
      /** What the request's tool turns need back, each for the upstream that wrote it. */
      recalled?: RecalledTurns;
    },
  ): Promise<UpstreamAnswer> {
    const targets = this.#targetsAfter(options.after, options.embeddings);
    if (targets.length === 0) {
      throw new ServiceError("upstream_error", "chat is not available here: no upstream is configured");
    }
    let timedOut = false;
    // Seconds the upstreams that said 429 asked us to wait; unset once any refused otherwise (then waiting is no remedy).
    let rateLimitedFor: number | undefined;
    let refusedOtherwise = false;
    // Stays true while every upstream asked refused the operator's entry (ENTRY_FAULT).
    let misconfigured = true;
    for (let next = 0, adapted = false; next < targets.length; next++) {
      const target = targets[next]!;
      options.signal?.throwIfAborted();
      let response: Exchanged;
      const started = performance.now();
      const span = this.#tracing?.start(options.embeddings ? "upstream embeddings" : "upstream chat completion", "client", {
        "zero.upstream": target.config.name,
        "zero.stream": options.stream,
      });
      // An accepted answer's span stays open until the answer is over (see AcceptedAnswer); the duration is to its head.
      const observe = (result: string, errorKind?: string, accepted = false) => {
        const upstream = target.config.name;
        if (accepted) span?.setAttribute("zero.result", result);
        else endSpan(span, { "zero.result": result }, errorKind !== undefined);
        this.#metrics?.upstreamDuration.observe({ upstream, result }, (performance.now() - started) / 1000);
        if (errorKind) this.#metrics?.upstreamErrors.inc({ upstream, kind: errorKind });
      };
      // What this body was built without: a refusal of anything else is news, even if another request learnt it meanwhile.
      const unsent = target.refusedFields.size === 0 ? NONE : new Set(target.refusedFields);
      const thinking = target.thinking;
      try {
        response = await exchange(
          target.pool,
          {
            method: "POST",
            path: options.embeddings ? target.embeddingsPath : target.path,
            headers: options.stream ? target.streamHeaders : target.headers,
            body: options.embeddings
              ? upstreamEmbeddingsBody(request, target.config.embeddingModel!)
              : upstreamRequestBody(request, target.config, options.stream, options.recalled, { refused: unsent, thinking }),
          },
          options.signal,
          performance.now() + this.#wholeAnswerMs,
        );
      } catch (error) {
        if (options.signal?.aborted) throw error;
        timedOut = isTimeout(error);
        misconfigured = false;
        observe(timedOut ? "timeout" : "error", timedOut ? "timeout" : "connect");
        logTo(options.requestLog, this.#logger).warn({ upstream: target.config.name, err: errorText(error) }, "upstream attempt failed");
        continue;
      }
      const { statusCode, body } = response;
      const accepted = statusCode >= 200 && statusCode < 300;
      observe(
        String(statusCode),
        accepted ? undefined : statusCode === 429 ? "status_429" : statusCode >= 500 ? "status_5xx" : `status_${statusCode}`,
        accepted,
      );
      if (accepted) {
        const model = options.embeddings ? target.config.embeddingModel! : target.config.model;
        return new AcceptedAnswer(body, model, target.config.name, span, (error) => this.#broke(target, error, options.requestLog));
      }
      timedOut = false;
      const text = await body.text().catch(() => "");
      const learnt =
        CLIENT_FAULT.has(statusCode) && !options.embeddings && !adapted ? adaptTo(target, text, request, { refused: unsent, thinking }) : undefined;
      if (learnt !== undefined) {
        // Once per request: the same upstream again, as it turned out to want, and so from then on.
        logTo(options.requestLog, this.#logger).info(
          { upstream: target.config.name, ...learnt },
          "upstream refused the request as sent; sent again as it wants it",
        );
        adapted = true;
        next--;
        continue;
      }
      if (!ENTRY_FAULT.has(statusCode)) misconfigured = false;
      if (statusCode === 429) rateLimitedFor = Math.max(rateLimitedFor ?? 1, retryAfterSeconds(response.retryAfter));
      else refusedOtherwise = true;
      if (CLIENT_FAULT.has(statusCode)) {
        const { error, upstreamMessage } = refusal(text, statusCode, request, options.embeddings ? EMBEDDING_REQUEST_FIELDS : REQUEST_FIELDS);
        logTo(options.requestLog, this.#logger).info({ upstream: target.config.name, status: statusCode, upstreamMessage }, "upstream refused the request");
        throw error;
      }
      logTo(options.requestLog, this.#logger).warn({ upstream: target.config.name, status: statusCode }, "upstream attempt refused");
    }
    if (misconfigured) throw upstreamMisconfigured();
    if (timedOut) throw new ServiceError("upstream_timeout", "the model did not answer in time; try again");
    if (rateLimitedFor !== undefined && !refusedOtherwise) {
      throw new ServiceError("upstream_error", `the model is busy right now; try again in ${rateLimitedFor} s`, {
        headers: { "retry-after": String(rateLimitedFor) },
      });
    }
    throw new ServiceError("upstream_error", "the model is unavailable right now; try again shortly");
  }

  /** Counts and logs an answer that failed after it began. */
  #broke(target: Target, error: ServiceError, requestLog: RequestLog | undefined): void {
    this.#metrics?.upstreamErrors.inc({ upstream: target.config.name, kind: error.type === "upstream_timeout" ? "timeout" : "stream" });
    logTo(requestLog, this.#logger).warn({ upstream: target.config.name, err: error.message }, "upstream answer failed after it began");
  }

  /** Closes every pooled connection. */
  async close(): Promise<void> {
    await Promise.all(this.#targets.map((t) => t.pool.destroy().catch(() => {})));
  }
}

/** The request's logger when there is one (made only now, on a failure), else the client's. */
function logTo(requestLog: RequestLog | undefined, fallback: Logger): Logger {
  return requestLog?.log ?? fallback;
}

/**
 * An answer an upstream accepted (2xx). Its attempt's span is ended by
 * `release`, not at the head, so that a failure after the head (`broke`)
 * is the span's too.
 */
class AcceptedAnswer implements UpstreamAnswer {
  #span: Span | undefined;
  readonly #report: (error: ServiceError) => void;
  #failure: ServiceError | undefined;

  constructor(
    readonly body: UpstreamBody,
    readonly model: string,
    readonly upstream: string,
    span: Span | undefined,
    report: (error: ServiceError) => void,
  ) {
    this.#span = span;
    this.#report = report;
  }

  broke(error: ServiceError): void {
    this.#failure ??= error;
    this.#report(error);
  }

  release(): void {
    const failure = this.#failure;
    endSpan(this.#span, failure ? { "error.type": failure.type } : {}, failure !== undefined);
    this.#span = undefined;
  }
}

/** An upstream's answer as it starts: its status, the body to follow, and (for a 429) how long it asks us to wait. */
interface Exchanged {
  statusCode: number;
  body: UpstreamBody;
  retryAfter?: string;
}

/** A `Retry-After` (seconds, or an HTTP date) as whole seconds from 1 to 60; 1 when absent or unreadable. */
function retryAfterSeconds(header: string | undefined): number {
  if (header === undefined) return 1;
  const seconds = /^\d+$/.test(header.trim()) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  return Number.isFinite(seconds) ? Math.min(60, Math.max(1, Math.ceil(seconds))) : 1;
}

/**
 * One request to an upstream through undici's dispatch API, resolved when
 * the answer's status arrives; its body then follows into an UpstreamBody,
 * which, read whole, must be complete by `wholeBy`.
 * An abort of `signal` aborts the exchange at once, queued or under way.
 */
function exchange(pool: Pool, request: Dispatcher.DispatchOptions, signal: AbortSignal | undefined, wholeBy: number): Promise<Exchanged> {
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined;
    let body: UpstreamBody | undefined;
    const onAbort = () => controller?.abort(abortReason(signal));
    signal?.addEventListener("abort", onAbort, { once: true });
    const settle = () => signal?.removeEventListener("abort", onAbort);
    pool.dispatch(request, {
      onRequestStart(started) {
        controller = started;
        if (signal?.aborted) started.abort(abortReason(signal));
      },
      onResponseStart(started, statusCode, headers) {
        // An informational answer (103 Early Hints) comes before the real one, which undici reports next.
        if (statusCode < 200) return;
        body = new UpstreamBody(started, wholeBy);
        const retryAfter = statusCode === 429 ? headers["retry-after"] : undefined;
        resolve({ statusCode, body, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
      },
      onResponseData(_, chunk) {
        body?.push(chunk);
      },
      onResponseEnd() {
        settle();
        body?.end();
      },
      onResponseError(_, error) {
        settle();
        if (body) body.fail(error);
        else reject(error);
      },
    });
  });
}

function abortReason(signal: AbortSignal | undefined): Error {
  return signal?.reason instanceof Error ? signal.reason : new Error("aborted");
}

/** Our words for an upstream's refusal: its own message may name its organisation, keys, regions or models. */
const REFUSALS: Record<number, string> = {
  400: "the model provider refused the request as invalid; check its fields against OpenAI's API reference",
  413: "the request is too large for the model provider",
  415: "the model provider refused the request's content type",
  422: "the model provider could not process the request; check its field values",
};

/**
 * A 4xx the upstream blamed on the request, passed on as our `invalid_request`
 * in our words. Its `param` is passed on only when it names a field the
 * client sent and we passed on (`sent`); the upstream's own text goes to the operator's log.
 */
function refusal(text: string, status: number, request: GatewayRequest, sent: ReadonlySet<string>): { error: ServiceError; upstreamMessage: string } {
  let upstreamMessage = "";
  let param: string | undefined;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; param?: unknown } };
    if (typeof parsed.error?.message === "string") upstreamMessage = parsed.error.message.slice(0, 1000);
    const named = typeof parsed.error?.param === "string" ? parsed.error.param : undefined;
    const field = named?.split(/[.[]/, 1)[0];
    if (named && field && Object.hasOwn(request, field) && sent.has(field) && named.length <= 200) param = named;
  } catch {
    // Not OpenAI's error shape: nothing to pass on.
  }
  return { error: new ServiceError("invalid_request", REFUSALS[status] ?? REFUSALS[400]!, { param }), upstreamMessage };
}

/**
 * What a refusal (`text`) of a body built as `sent` teaches of `target`,
 * recorded on it; undefined when nothing. Fields it refused as unknown that
 * it may go without (UNKNOWN_TO_SOME), and that were sent; or, from a
 * thinking model, that it wants reasoning on every tool turn (one another
 * upstream wrote, or one kept under another name), which then goes with an
 * empty one.
 */
function adaptTo(
  target: Target,
  text: string,
  request: GatewayRequest,
  sent: { refused: ReadonlySet<string>; thinking: boolean },
): { fields: string[] } | { thinking: true } | undefined {
  const unknown = fieldsRefusedAsUnknown(text).filter((field) => UNKNOWN_TO_SOME.has(field) && !sent.refused.has(field));
  if (unknown.length > 0) {
    for (const field of unknown) target.refusedFields.add(field);
    return { fields: unknown };
  }
  if (!sent.thinking && /reasoning_content/.test(text) && hasTurnWithoutReasoning(request.messages)) {
    target.thinking = true;
    return { thinking: true };
  }
  return undefined;
}

/**
 * The top-level fields a refusal names as unknown: pydantic's
 * `extra_forbidden` with `loc: ["body", field]`, as Mistral sends it (its
 * `detail` at the top, or in `message`, or as JSON text there).
 */
function fieldsRefusedAsUnknown(text: string): string[] {
  if (!text.includes("extra_forbidden")) return [];
  const fields = new Set<string>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 6) return;
    if (typeof value === "string") {
      if (value.includes("extra_forbidden")) {
        try {
          visit(JSON.parse(value), depth + 1);
        } catch {
          // Not JSON: nothing named.
        }
      }
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) visit(item, depth + 1);
      return;
    }
    if (typeof value !== "object" || value === null) return;
    const entry = value as { type?: unknown; loc?: unknown };
    if (entry.type === "extra_forbidden" && Array.isArray(entry.loc) && entry.loc.length === 2 && entry.loc[0] === "body" && typeof entry.loc[1] === "string") {
      fields.add(entry.loc[1]);
    }
    for (const item of Object.values(value)) visit(item, depth + 1);
  };
  try {
    visit(JSON.parse(text), 0);
  } catch {
    return [];
  }
  return [...fields];
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
