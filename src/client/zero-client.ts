import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type CallOptions, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { codeFromHttpStatus } from "@connectrpc/connect/protocol-connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { CapabilitiesService, type GetCapabilitiesResponse } from "../../gen/zero/v1/capabilities_pb.js";
import {
  ChatCompletionParamsSchema,
  ChatService,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionParams,
} from "../../gen/zero/v1/chat_pb.js";
import { ExecutionService, type Plan, type PlanEvent } from "../../gen/zero/v1/execution_pb.js";
import { ZeroError } from "./zero-error.js";
import { ErrorDetailSchema } from "../../gen/zero/v1/error_pb.js";
import { ERROR_TYPES, type ErrorType } from "../api/errors.js";
import { trimEndOf, withoutNameControls, withoutTrailingSlashes } from "../strings.js";

// This module is the browser-safe entry: it imports nothing from `node:` and
// talks Connect over `fetch`, which Node ≥ 18 and every browser have. The
// Node entry (`./node.ts`) only swaps in a connect-node transport.

import { CHAT_ALIAS } from "../api/model.js";
import { isResting as isRestingStatus, newestDraft, RESTING_STATUSES } from "../api/plans.js";
export { ZeroError, type ZeroErrorType } from "./zero-error.js";
export type { Plan, PlanEvent, Project, Stage, StageError } from "../../gen/zero/v1/execution_pb.js";
export { PlanSchema } from "../../gen/zero/v1/execution_pb.js";
export type { ChatCompletion, ChatCompletionChunk } from "../../gen/zero/v1/chat_pb.js";
export { ChatCompletionSchema, ChatCompletionChunkSchema } from "../../gen/zero/v1/chat_pb.js";
export type { GetCapabilitiesResponse } from "../../gen/zero/v1/capabilities_pb.js";
export { GetCapabilitiesResponseSchema } from "../../gen/zero/v1/capabilities_pb.js";

/** The chat alias the service serves; the only model it accepts. */
export const CHAT_MODEL = CHAT_ALIAS;

/**
 * Builds the transport a client talks through, given the interceptors that
 * carry the API key. Use it to pick gRPC, gRPC-Web or HTTP/2, e.g.
 * `({ baseUrl, interceptors }) => createGrpcWebTransport({ baseUrl, interceptors })`.
 */
export type TransportFactory = (init: { baseUrl: string; interceptors: Interceptor[] }) => Transport;

export interface ZeroClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:8080` (no path). */
  baseUrl: string;
  /** An API key (`zk_…`), sent as `Authorization: Bearer`. Omit for public calls or cookie sessions in a browser. */
  apiKey?: string | undefined;
  /**
   * How to reach the service. A factory receives the interceptors (the key's
   * among them) and returns a transport; a ready Transport is used as is and
   * gets the key as a header on each call. Default: Connect over `fetch`.
   */
  transport?: TransportFactory | Transport;
  /** More interceptors (logging, tracing), run after the one that sets the key. */
  interceptors?: Interceptor[];
}

/** A plan's result as a file: its name as the service suggests it, its type, and the bytes as they arrive. */
export interface PlanDownload {
  /** `<project slug>.zip` or `<project slug>.epub`. */
  filename: string;
  /** `application/zip` or `application/epub+zip`. */
  contentType: string;
  body: ReadableStream<Uint8Array>;
}

/** `{plan, unavailable}`: what a create or a resume answers. */
export interface PlanAccepted {
  plan: Plan;
  /** Outcomes of the service that cannot run here; empty when all can. */
  unavailable: string[];
}

export interface CreateExecutionInput {
  /** The goal in plain language, 8 to 2000 characters. */
  goal: string;
  /** `website` (the default) or `ebook`. */
  outcome?: string | undefined;
}

export interface ResumeExecutionInput {
  planId: string;
  /** Stage ids to approve, e.g. `["review"]` to pass the approval gate. */
  approve?: string[] | undefined;
  /**
   * The draft the approval is for: the newest `revisions[].number` the caller
   * saw, 0 before any revision. If the plan has a newer draft by then, the
   * service refuses with a `conflict` and nothing changes.
   */
  revision?: number | undefined;
}

/** One chat message in OpenAI's JSON shape. */
export type ChatMessageInput = JsonObject & {
  role: "system" | "developer" | "user" | "assistant" | "tool" | (string & {});
  content: JsonValue;
};

/**
 * A chat request in OpenAI's JSON shape (`messages`, `temperature`,
 * `max_tokens`, `tools`, …). `model` defaults to `project-zero`; `stream`
 * is decided by the method called.
 */
export type ChatInput = JsonObject & {
  messages: ChatMessageInput[];
  // JSON has no undefined: the index signature takes none, so neither does `model`.
  model?: string;
};

export interface ZeroClient {
  executions: {
    /** Starts an execution; answers at once, the stages run after. */
    create(input: CreateExecutionInput, options?: CallOptions): Promise<PlanAccepted>;
    /** Resumes a plan at the gate (with `approve: ["review"]`), after a failure or a crash. */
    resume(input: ResumeExecutionInput, options?: CallOptions): Promise<PlanAccepted>;
    /**
     * At the gate: a new draft with `feedback` (1 to 2000 characters). The
     * draft stages run again and the plan stops at the gate once more; it
     * counts against the generation limit. Answers at once. With `revision`
     * (the draft the feedback is about, as in `resume`), a newer draft is a `conflict`.
     */
    revise(id: string, feedback: string, options?: CallOptions & { revision?: number | undefined }): Promise<PlanAccepted>;
    get(id: string, options?: CallOptions): Promise<Plan>;
    /** The caller's ten most recent plans, newest first; with `before` (a plan id), the ten older than it. */
    list(options?: CallOptions & { before?: string | undefined }): Promise<Plan[]>;
    /**
     * The plan now and each time it changes, until it rests (succeeded,
     * failed, interrupted, cancelled, or waiting at the gate). Leaving the loop early
     * (`break`, or aborting `options.signal`) hangs up; the plan keeps running.
     * The service sends a heartbeat after each `heartbeatSeconds` of quiet
     * (default 15; 0 for none); with none for three of them, the watch fails
     * as `unreachable`, as a dropped connection does: one that died without a
     * word (a network gone, a sleeping laptop) would otherwise wait forever.
     */
    watch(id: string, options?: CallOptions & { heartbeatSeconds?: number | undefined }): AsyncIterable<Plan>;
    /** The plan's history, oldest first: what changed, when, on which stage and attempt. */
    history(id: string, options?: CallOptions): Promise<PlanEvent[]>;
    /**
     * The plan's newest build as one file, streamed: a website as a zip of
     * every file, a book as its EPUB (`GET /api/execution/download`). A
     * `not_found` ZeroError until the build (or assemble) stage succeeded.
     * A plain fetch, not an RPC: `headers`, `signal` and `timeoutMs` apply
     * (the timeout bounds the whole download, as it bounds a whole call);
     * interceptors do not run. Anything but such a file in answer (another
     * server at that URL), or no answer, fails as an RPC would fail from it:
     * the same ZeroError `type` and `code`.
     */
    download(id: string, options?: Pick<CallOptions, "headers" | "signal" | "timeoutMs">): Promise<PlanDownload>;
    /**
     * Cancels a plan and answers it `cancelled`; a running stage stops within one lease
     * heartbeat. An already cancelled plan is answered as it is; a succeeded one is a `conflict`.
     */
    cancel(id: string, options?: CallOptions): Promise<Plan>;
    /** Cancels, then removes the plan, its history and its preview and published files. */
    delete(id: string, options?: CallOptions): Promise<void>;
  };
  chat: {
    complete(input: ChatInput, options?: CallOptions & { idempotencyKey?: string | undefined }): Promise<ChatCompletion>;
    /**
     * The completion as chunks, each as soon as the service has it. As a
     * watch does, it asks for a heartbeat after each `heartbeatSeconds`
     * without a chunk (default 15; 0 for none) and fails as `unreachable`
     * after three missed.
     */
    stream(input: ChatInput, options?: CallOptions & { heartbeatSeconds?: number | undefined }): AsyncIterable<ChatCompletionChunk>;
  };
  /** What this deployment can do: outcomes, what cannot run here, limits. Needs no key. */
  capabilities(options?: CallOptions): Promise<GetCapabilitiesResponse>;
}

/** Connect over `fetch`: works in browsers and in Node alike. */
export const fetchTransport: TransportFactory = ({ baseUrl, interceptors }) => createConnectTransport({ baseUrl, interceptors });

/** A typed client for project-zero's executions, chat and capabilities. */
export function createZeroClient(options: ZeroClientOptions): ZeroClient {
  return buildZeroClient(options, fetchTransport);
}

/**
 * Shared by the browser and Node entries, which differ only in the default
 * transport. @internal
 */
export function buildZeroClient(options: ZeroClientOptions, defaultTransport: TransportFactory): ZeroClient {
  const baseUrl = withoutTrailingSlashes(options.baseUrl);
  const keyHeader: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  const sendKey: Interceptor = (next) => (request) => {
    for (const [name, value] of Object.entries(keyHeader)) request.header.set(name, value);
    return next(request);
  };
  const interceptors = [sendKey, ...(options.interceptors ?? [])];
  const given = options.transport ?? defaultTransport;
  const transport = typeof given === "function" ? given({ baseUrl, interceptors }) : given;
  // A ready-made transport has its own interceptors; the key then rides on each call.
  const call = (callOptions: CallOptions = {}): CallOptions =>
    typeof given === "function" ? callOptions : { ...callOptions, headers: mergeHeaders(keyHeader, callOptions.headers) };

  const executions: Client<typeof ExecutionService> = createClient(ExecutionService, transport);
  const chat: Client<typeof ChatService> = createClient(ChatService, transport);
  const capabilities: Client<typeof CapabilitiesService> = createClient(CapabilitiesService, transport);

  return {
    executions: {
      create: (input, callOptions) =>
        wrap(async () => accepted(await executions.createExecution({ goal: input.goal, outcome: input.outcome ?? "" }, call(callOptions)))),
      resume: (input, callOptions) =>
        wrap(async () =>
          accepted(await executions.resumeExecution({ planId: input.planId, approve: input.approve ?? [], revision: input.revision }, call(callOptions))),
        ),
      revise: (id, feedback, { revision, ...callOptions } = {}) =>
        wrap(async () => accepted(await executions.resumeExecution({ planId: id, approve: [], feedback, revision }, call(callOptions)))),
      get: (id, callOptions) => wrap(async () => required((await executions.getExecution({ id }, call(callOptions))).plan)),
      list: ({ before = "", ...callOptions } = {}) => wrap(async () => (await executions.listExecutions({ before }, call(callOptions))).plans),
      watch: (id, { heartbeatSeconds = DEFAULT_HEARTBEAT_SECONDS, ...callOptions } = {}) =>
        mapStream(
          failingWhenSilent(
            (signal) => executions.watchExecution({ id, heartbeatSeconds }, call({ ...callOptions, signal })),
            callOptions.signal,
            heartbeatSeconds * 3000,
          ),
          (response) => response.plan,
        ),
      history: (id, callOptions) => wrap(async () => (await executions.getExecutionHistory({ id }, call(callOptions))).events),
      download: (id, { headers, signal, timeoutMs } = {}) =>
        wrap(async () => {
          // A file, not a message: the REST route serves it, with the same key and the same errors.
          const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
          const response = await fetch(`${baseUrl}/api/execution/download?id=${encodeURIComponent(id)}`, {
            headers: mergeHeaders(keyHeader, headers),
            signal: signal && timeout ? AbortSignal.any([signal, timeout]) : (signal ?? timeout),
          }).catch((error: unknown) => {
            if (timeout?.aborted && !signal?.aborted) throw new ConnectError(`the download did not finish within ${timeoutMs} ms`, Code.DeadlineExceeded);
            throw error;
          });
          if (!response.ok || !response.body) throw await restError(response);
          const contentType = response.headers.get("content-type") ?? "";
          const mediaType = contentType.split(";", 1)[0]!.trim().toLowerCase();
          if (!DOWNLOAD_TYPES.has(mediaType)) {
            // Another server's page, not a plan's file: refused as the RPC transports refuse a wrong content type.
            await response.body.cancel();
            throw new ConnectError(`unsupported content type ${contentType || "(none)"}`, Code.Internal, response.headers);
          }
          return {
            filename:
              plainFilename(suggestedFilename(response.headers.get("content-disposition") ?? "")) ??
              `${id}${mediaType === "application/epub+zip" ? ".epub" : ".zip"}`,
            contentType,
            body: failingAsZeroErrors(response.body, () =>
              timeout?.aborted && !signal?.aborted ? new ConnectError(`the download did not finish within ${timeoutMs} ms`, Code.DeadlineExceeded) : undefined,
            ),
          };
        }),
      cancel: (id, callOptions) => wrap(async () => required((await executions.cancelExecution({ id }, call(callOptions))).plan)),
      delete: (id, callOptions) =>
        wrap(async () => {
          await executions.deleteExecution({ id }, call(callOptions));
        }),
    },
    chat: {
      complete: (input, callOptions) =>
        wrap(async () => {
          const { idempotencyKey, ...rest } = callOptions ?? {};
          const response = await chat.createChatCompletion({ params: chatParams(input), idempotencyKey }, call(rest));
          return required(response.completion);
        }),
      stream: (input, { heartbeatSeconds = DEFAULT_HEARTBEAT_SECONDS, ...callOptions } = {}) =>
        mapStream(
          failingWhenSilent(
            (signal) => chat.streamChatCompletion({ params: chatParams(input), heartbeatSeconds }, call({ ...callOptions, signal })),
            callOptions.signal,
            heartbeatSeconds * 3000,
          ),
          (response) => response.chunk,
        ),
    },
    capabilities: (callOptions) => wrap(() => capabilities.getCapabilities({}, call(callOptions))),
  };
}

/** Plan statuses at which a watch ends: nothing more happens without a resume (or at all). */
export { newestDraft, RESTING_STATUSES };

/** True when the plan waits for someone (the gate, a resume after a failure) or is done. */
export function isResting(plan: Plan): boolean {
  return isRestingStatus(plan.status);
}

/** The text a chunk adds to the answer (its first choice's `delta.content`), or "". */
export function chunkText(chunk: ChatCompletionChunk): string {
  const content = chunk.choices[0]?.delta?.content;
  return content?.kind.case === "stringValue" ? content.kind.value : "";
}

/** The answer's text (its first choice's `message.content`), or "". */
export function completionText(completion: ChatCompletion): string {
  const content = completion.choices[0]?.message?.content;
  return content?.kind.case === "stringValue" ? content.kind.value : "";
}

function chatParams(input: ChatInput): ChatCompletionParams {
  // The message's JSON form is OpenAI's, so OpenAI-shaped input converts as is.
  const { stream: _ignored, ...params } = input;
  return fromJson(ChatCompletionParamsSchema, { ...params, model: params.model ?? CHAT_MODEL });
}

function accepted(response: { plan?: Plan; unavailable: string[] }): PlanAccepted {
  return { plan: required(response.plan), unavailable: response.unavailable };
}

function required<T>(value: T | undefined): T {
  // The service always fills these; an empty one means a server that does not speak this API.
  if (value === undefined) throw new ZeroError(new ConnectError("the service answered without the expected message", Code.Internal));
  return value;
}

/** What a download answers with: a site's zip or a book's EPUB. */
const DOWNLOAD_TYPES: ReadonlySet<string> = new Set(["application/zip", "application/epub+zip"]);

/** A REST error answer (`{"error": {"type", "message", …}}`) as the ConnectError an RPC would have thrown, its detail attached. */
async function restError(response: Response): Promise<ConnectError> {
  const body = (await response.json().catch(() => ({}))) as { error?: { type?: unknown; message?: unknown; unavailable?: string[] } };
  const type = typeof body.error?.type === "string" ? body.error.type : "";
  // Only the service's own error shape is its word (fromServer); another server's page at that URL is not, and
  // fails as an RPC that got it would: named by its HTTP status alone.
  if (type === "" || typeof body.error?.message !== "string") {
    return new ConnectError(`HTTP ${response.status}`, codeFromHttpStatus(response.status), response.headers);
  }
  const code = type in ERROR_TYPES ? ERROR_TYPES[type as ErrorType].code : codeForStatus(response.status);
  const message = body.error.message;
  const detail = { type, message, unavailable: body.error.unavailable ?? [] };
  return new ConnectError(message, code, response.headers, [{ desc: ErrorDetailSchema, value: detail }]);
}

function codeForStatus(status: number): Code {
  const known = Object.values(ERROR_TYPES).find((entry) => entry.status === status);
  return known?.code ?? (status >= 500 ? Code.Unavailable : Code.Unknown);
}

/**
 * A download's bytes, whose failures while they are read are ZeroErrors as
 * the call's own are: a dropped connection `unreachable`, the call's timeout
 * (`timedOut`, read when a read fails) `deadline_exceeded`.
 */
function failingAsZeroErrors(body: ReadableStream<Uint8Array>, timedOut: () => ConnectError | undefined): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        controller.error(ZeroError.from(timedOut() ?? error));
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

async function wrap<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw ZeroError.from(error);
  }
}

/** What a watch or a chat stream asks for when not told: a heartbeat after each 15 s of quiet, so 45 s of silence is a dead connection. */
const DEFAULT_HEARTBEAT_SECONDS = 15;

/**
 * A stream that fails as a dropped connection (`unreachable`) once nothing
 * has come for `silentMs` while its reader waits (0: never). Its call is
 * aborted then, so the connection is let go.
 */
function failingWhenSilent<R>(
  open: (signal: AbortSignal | undefined) => AsyncIterable<R>,
  callerSignal: AbortSignal | undefined,
  silentMs: number,
): () => AsyncIterable<R> {
  if (silentMs <= 0) return () => open(callerSignal);
  return () => ({
    async *[Symbol.asyncIterator]() {
      const silence = new AbortController();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const listen = () => {
        timer = setTimeout(() => silence.abort(), silentMs);
      };
      const signal = callerSignal ? AbortSignal.any([callerSignal, silence.signal]) : silence.signal;
      try {
        listen();
        for await (const response of open(signal)) {
          // The reader's own pauses are not the service's silence.
          clearTimeout(timer);
          yield response;
          listen();
        }
      } catch (error) {
        if (silence.signal.aborted && !callerSignal?.aborted) {
          // ETIMEDOUT: what TCP says of a peer that stopped answering; it reads as `unreachable`.
          const cause = Object.assign(new Error("no word from the service"), { code: "ETIMEDOUT" });
          throw new ConnectError(
            `no word from the service in ${silentMs / 1000} s, not even a heartbeat; the connection is taken for dead`,
            Code.Unavailable,
            undefined,
            undefined,
            cause,
          );
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
  });
}

/** A server stream as an async iterable of its payloads, with errors as ZeroErrors. */
function mapStream<R, T>(open: () => AsyncIterable<R>, pick: (response: R) => T | undefined): AsyncIterable<T> {
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for await (const response of open()) {
          const value = pick(response);
          if (value !== undefined) yield value;
        }
      } catch (error) {
        throw ZeroError.from(error);
      }
    },
  };
}

function mergeHeaders(extra: Record<string, string>, headers: ConstructorParameters<typeof Headers>[0] | undefined): Headers {
  const merged = new Headers(headers);
  for (const [name, value] of Object.entries(extra)) if (!merged.has(name)) merged.set(name, value);
  return merged;
}

/**
 * The file name a `Content-Disposition` suggests: its `filename*` (RFC 8187, UTF-8, which names a slug in any
 * script), else its plain `filename`.
 */
function suggestedFilename(header: string): string | undefined {
  const extended = /filename\*\s*=\s*UTF-8''([^;\s]+)/i.exec(header)?.[1];
  if (extended !== undefined) {
    try {
      return decodeURIComponent(extended);
    } catch {
      // Malformed escapes: the plain name is the one left to use.
    }
  }
  return /filename="([^"]+)"/.exec(header)?.[1];
}

/**
 * The service's suggested file name as a plain name in the current folder,
 * as browsers and `curl -J` take it: no directories (its last part only), no
 * control characters (bidi controls included) or invisible ones, not a hidden
 * file, and nothing Windows would read as a drive ("C:x.zip"), a stream
 * ("x.zip:Zone.Identifier") or a device ("CON.zip"); undefined when nothing
 * usable is left. Whatever answers at the base URL chooses it, so it must not
 * choose where a file is written.
 */
function plainFilename(suggested: string | undefined): string | undefined {
  const last = suggested?.split(/[\\/]/).at(-1);
  if (last === undefined) return undefined;
  // Bidi controls too: one in "gpj.exe" would show a program as a picture.
  const shown = withoutNameControls(last)
    .replace(/[\t\n\r]/g, "")
    .replace(/\p{Default_Ignorable_Code_Point}/gu, "")
    .trim();
  // Windows drops a name's trailing dots and spaces itself.
  const name = trimEndOf(shown, ". ");
  if (name === "" || name.startsWith(".") || /[<>:"|?*]/.test(name) || WINDOWS_DEVICE.test(name)) return undefined;
  return name;
}

/** Windows's device names, which a file cannot have with any extension. */
const WINDOWS_DEVICE = /^(?:con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])(?:\.|$)/i;
