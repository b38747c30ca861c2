import type { RestPlan } from "../support/executions.js";
import { CHAT_ANSWER, STREAM_PIECES } from "./soak-upstream.js";

/** The kinds of request the soak sends. */
export type Kind = "create" | "read" | "list" | "approve" | "resume" | "revise" | "cancel" | "delete" | "history" | "chat" | "stream";
export const KINDS: readonly Kind[] = ["create", "read", "list", "approve", "resume", "revise", "cancel", "delete", "history", "chat", "stream"];

/**
 * How one request ended:
 * - `ok`: the answer the soak expects;
 * - `error`: an error answer (HTTP status, or a `data: {"error"}` event in a stream);
 * - `network`: no HTTP answer at all (refused, reset, client timeout).
 */
export interface Sample {
  kind: Kind;
  instance: string;
  phase: string;
  /** performance.now() when sent. */
  at: number;
  ms: number;
  result: "ok" | "error" | "network";
  status: number;
  /** The error's `type` (or a soak label such as `network` or `truncated_stream`). */
  errorType?: string;
  /** True when the error is one the documentation names, in the documented shape and status. */
  documented: boolean;
  /** A short description of anything undocumented, for the report. */
  detail?: string;
}

/** Error types and their statuses from SPEC.md's tables (`/api` and `/v1`), plus the 503 of a database outage (README). */
const API_ERRORS: Record<string, number[]> = {
  invalid_request: [400],
  unauthenticated: [401],
  permission_denied: [403],
  not_found: [404],
  conflict: [409],
  payload_too_large: [413],
  rate_limited: [429],
  unavailable: [503],
  outcome_unavailable: [503],
};
const CHAT_ERRORS: Record<string, number[]> = {
  invalid_request: [400],
  model_not_found: [400, 404],
  program_mismatch: [422],
  invalid_api_key: [401],
  insufficient_scope: [403],
  zero_capacity_unavailable: [429],
  idempotency_key_reused: [422],
  idempotency_key_in_progress: [409],
  upstream_error: [502],
  upstream_timeout: [504],
  unavailable: [503],
};

export interface Target {
  name: string;
  url: string;
}

export interface Credentials {
  apiKey: string;
  /** `zero_session=…`; some reads go with the cookie, so the session token travels through the service too. */
  cookie: string;
}

export interface Answer<T> {
  sample: Sample;
  body: T | undefined;
}

const CLIENT_TIMEOUT_MS = 20_000;

/** Sends the request and turns whatever happens into a Sample; the body is parsed JSON when it is. */
async function exchange<T>(
  kind: Kind,
  target: Target,
  phase: string,
  path: string,
  init: RequestInit,
  expectStatus: number,
  errors: Record<string, number[]>,
): Promise<Answer<T>> {
  const at = performance.now();
  const base = { kind, instance: target.name, phase, at };
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${target.url}${path}`, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
    text = await res.text();
  } catch (error) {
    return {
      sample: { ...base, ms: performance.now() - at, result: "network", status: 0, errorType: "network", documented: false, detail: networkDetail(error) },
      body: undefined,
    };
  }
  const ms = performance.now() - at;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  // A 204 has no body to parse.
  if (res.status === expectStatus && (body !== undefined || (expectStatus === 204 && text === "")))
    return { sample: { ...base, ms, result: "ok", status: res.status, documented: true }, body: body as T };
  const sample: Sample = { ...base, ms, result: "error", status: res.status, ...classifyError(res.status, body, errors, text) };
  return { sample, body: undefined };
}

function classifyError(status: number, body: unknown, errors: Record<string, number[]>, text: string): Pick<Sample, "errorType" | "documented" | "detail"> {
  const error = (body as { error?: { type?: unknown; message?: unknown } } | undefined)?.error;
  const type = typeof error?.type === "string" ? error.type : `http_${status}`;
  const documented = typeof error?.message === "string" && (errors[type]?.includes(status) ?? false);
  return { errorType: type, documented, ...(documented ? {} : { detail: `${status} ${text.slice(0, 200)}` }) };
}

function networkDetail(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

function apiHeaders(credentials: Credentials, target: Target, viaCookie = false): Record<string, string> {
  return viaCookie
    ? { cookie: credentials.cookie, origin: new URL(target.url).origin, "content-type": "application/json" }
    : { authorization: `Bearer ${credentials.apiKey}`, "content-type": "application/json" };
}

export function createPlan(target: Target, credentials: Credentials, phase: string, goal: string, outcome: string): Promise<Answer<{ plan: RestPlan }>> {
  return exchange(
    "create",
    target,
    phase,
    "/api/execution",
    {
      method: "POST",
      headers: apiHeaders(credentials, target),
      body: JSON.stringify({ goal, outcome }),
    },
    202,
    API_ERRORS,
  );
}

export function readPlan(target: Target, credentials: Credentials, phase: string, id: string): Promise<Answer<{ plan: RestPlan }>> {
  return exchange("read", target, phase, `/api/execution?id=${encodeURIComponent(id)}`, { headers: apiHeaders(credentials, target) }, 200, API_ERRORS);
}

/** The list, with the session cookie as the Console would send it. */
export function listPlans(target: Target, credentials: Credentials, phase: string): Promise<Answer<{ plans: RestPlan[] }>> {
  return exchange("list", target, phase, "/api/execution", { headers: apiHeaders(credentials, target, true) }, 200, API_ERRORS);
}

/** A resume: `approve` passes the gate; without it, a failed or interrupted stage is run again. */
export function resumePlan(target: Target, credentials: Credentials, phase: string, planId: string, approve?: string[]): Promise<Answer<{ plan: RestPlan }>> {
  return exchange(
    approve ? "approve" : "resume",
    target,
    phase,
    "/api/execution",
    {
      method: "POST",
      headers: apiHeaders(credentials, target),
      body: JSON.stringify(approve ? { planId, approve } : { planId }),
    },
    202,
    API_ERRORS,
  );
}

/** Feedback at the gate: outline, write and build run again with it, then the plan waits at the gate again. */
export function revisePlan(target: Target, credentials: Credentials, phase: string, planId: string, feedback: string): Promise<Answer<{ plan: RestPlan }>> {
  return exchange(
    "revise",
    target,
    phase,
    "/api/execution",
    { method: "POST", headers: apiHeaders(credentials, target), body: JSON.stringify({ planId, feedback }) },
    202,
    API_ERRORS,
  );
}

export function cancelPlan(target: Target, credentials: Credentials, phase: string, planId: string): Promise<Answer<{ plan: RestPlan }>> {
  return exchange(
    "cancel",
    target,
    phase,
    "/api/execution",
    { method: "POST", headers: apiHeaders(credentials, target), body: JSON.stringify({ planId, cancel: true }) },
    202,
    API_ERRORS,
  );
}

export function deletePlan(target: Target, credentials: Credentials, phase: string, planId: string): Promise<Answer<unknown>> {
  return exchange(
    "delete",
    target,
    phase,
    `/api/execution?id=${encodeURIComponent(planId)}`,
    { method: "DELETE", headers: apiHeaders(credentials, target) },
    204,
    API_ERRORS,
  );
}

/** One event of a plan's history, oldest first. */
export interface PlanEvent {
  at: string;
  type: string;
  stage: string | null;
  attempt: number | null;
  /** A `cancelled` event's `{"from": status}`; a failed stage's error. */
  detail: { from?: string } | null;
}

export function planHistory(target: Target, credentials: Credentials, phase: string, planId: string): Promise<Answer<{ events: PlanEvent[] }>> {
  return exchange(
    "history",
    target,
    phase,
    `/api/execution/history?id=${encodeURIComponent(planId)}`,
    { headers: apiHeaders(credentials, target) },
    200,
    API_ERRORS,
  );
}

function chatBody(content: string, stream: boolean): string {
  return JSON.stringify({ model: "project-zero", messages: [{ role: "user", content }], ...(stream ? { stream: true } : {}) });
}

/** A non-streaming completion; `ok` only when the answer is the upstream's, under the alias. */
export async function chat(target: Target, credentials: Credentials, phase: string, content = "ping"): Promise<Answer<unknown>> {
  const answer = await exchange<{ model?: string; choices?: { message?: { content?: string } }[] }>(
    "chat",
    target,
    phase,
    "/v1/chat/completions",
    {
      method: "POST",
      headers: { authorization: `Bearer ${credentials.apiKey}`, "content-type": "application/json" },
      body: chatBody(content, false),
    },
    200,
    CHAT_ERRORS,
  );
  const { sample, body } = answer;
  if (sample.result === "ok" && (body?.model !== "project-zero" || body.choices?.[0]?.message?.content !== CHAT_ANSWER)) {
    Object.assign(sample, { result: "error", errorType: "wrong_answer", documented: false, detail: JSON.stringify(body).slice(0, 200) });
  }
  return answer;
}

/**
 * A streamed completion, read to the end. `ok` when the pieces arrive in
 * order and `[DONE]` ends the stream; an error event followed by `[DONE]` is
 * a documented error; a stream that stops without `[DONE]` is undocumented.
 */
export async function chatStream(target: Target, credentials: Credentials, phase: string): Promise<Sample> {
  const at = performance.now();
  const base = { kind: "stream" as const, instance: target.name, phase, at };
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${target.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${credentials.apiKey}`, "content-type": "application/json" },
      body: chatBody("stream me a greeting", true),
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (error) {
    return { ...base, ms: performance.now() - at, result: "network", status: 0, errorType: "network", documented: false, detail: networkDetail(error) };
  }
  const ms = performance.now() - at;
  if (res.status !== 200 || !res.headers.get("content-type")?.startsWith("text/event-stream")) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { ...base, ms, result: "error", status: res.status, ...classifyError(res.status, body, CHAT_ERRORS, text) };
  }
  const events = sseData(text);
  const last = events.at(-1);
  const errorEvent = events
    .map(parseJson)
    .find((e): e is { error: { type?: unknown; message?: unknown; code?: unknown } } => typeof e === "object" && e !== null && "error" in e);
  if (errorEvent) {
    const type = typeof errorEvent.error.type === "string" ? errorEvent.error.type : "unknown";
    const documented = last === "[DONE]" && typeof errorEvent.error.message === "string" && type in CHAT_ERRORS && type !== "invalid_request";
    return { ...base, ms, result: "error", status: 200, errorType: `${type} (event)`, documented, ...(documented ? {} : { detail: text.slice(-300) }) };
  }
  const content = events
    .filter((e) => e !== "[DONE]")
    .map(parseJson)
    .map((c) => (c as { choices?: { delta?: { content?: string } }[] } | undefined)?.choices?.[0]?.delta?.content ?? "")
    .join("");
  if (last !== "[DONE]") return { ...base, ms, result: "error", status: 200, errorType: "truncated_stream", documented: false, detail: text.slice(-300) };
  if (content !== STREAM_PIECES.join(""))
    return { ...base, ms, result: "error", status: 200, errorType: "wrong_answer", documented: false, detail: content.slice(0, 200) };
  return { ...base, ms, result: "ok", status: 200, documented: true };
}

/** The `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  return text
    .split(/\n\n/)
    .map((event) =>
      event
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n"),
    )
    .filter((d) => d !== "");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
