import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import { createAccountWithKey } from "../../support/accounts.js";
import { startTestApp, type TestApp } from "../../support/app.js";
import { FakeUpstream, UPSTREAM_MODEL } from "./fake-upstream.js";

/** The upstream key the gateway holds; it must reach upstreams and nothing else. */
export const UPSTREAM_KEY = "sk-upstream-SECRET-key";

/** A port nothing listens on: a connect error on every attempt. */
export const DEAD_UPSTREAM = "http://127.0.0.1:9/v1";

/** ZERO_UPSTREAMS for these base URLs, in order, named so a leak would be visible; `fields` are added to each entry. */
export function upstreamsEnv(baseUrls: string[], fields: Record<string, unknown> = {}): string {
  return JSON.stringify(baseUrls.map((baseUrl, i) => ({ name: `SecretCo-${i}`, baseUrl, apiKey: UPSTREAM_KEY, model: UPSTREAM_MODEL, ...fields })));
}

/** The real service with these fakes as its upstreams and short upstream timeouts. */
export function startGateway(upstreams: (FakeUpstream | string)[], env: Record<string, string> = {}, databaseUrl?: string): Promise<TestApp> {
  return startTestApp({
    databaseUrl,
    env: {
      ZERO_UPSTREAMS: upstreamsEnv(upstreams.map((u) => (typeof u === "string" ? u : u.url))),
      ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "600",
      ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "600",
      ZERO_FREE_POOL_DAILY_REQUESTS: "100000",
      ...env,
    },
  });
}

/** The official SDK pointed at the gateway, without its automatic retries (tests count requests). */
export function openAiClient(app: { url: string }, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${app.url}/v1`, apiKey, maxRetries: 0 });
}

/** Reads an SSE body to the end: the `data:` payloads in order. */
export async function readSse(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((event) => event.trim() !== "")
    .map((event) => {
      if (!event.startsWith("data: ")) throw new Error(`not a data event: ${event}`);
      return event.slice(6);
    });
}

/** POSTs a chat request with fetch, for what the SDKs hide (raw status, headers, events). */
export function postChat(
  app: { url: string },
  apiKey: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${app.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
}

/** Every secret the upstream side holds; none may appear in anything a client receives. */
/** Checks an answer is `status` with OpenAI's error shape (exactly its four fields), holding `error`'s fields. */
export async function expectOpenAiError(response: Response, status: number, error: Record<string, unknown>): Promise<void> {
  expect(response.status).toBe(status);
  const body = (await response.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(body.error).toMatchObject(error);
}

export const UPSTREAM_SECRETS = ["SecretCo", UPSTREAM_MODEL, UPSTREAM_KEY, "upstream-cmpl-SECRET", "fp_secret_upstream", "secret-org"];

/** Fails with the leaked secret when a header name or value, or the body, carries one. */
export function expectNoLeak(headers: Headers, body: string): void {
  const seen = `${[...headers.entries()].map(([k, v]) => `${k}: ${v}`).join("\n")}\n${body}`;
  for (const secret of UPSTREAM_SECRETS) {
    if (seen.includes(secret)) throw new Error(`upstream detail leaked: ${secret}\n${seen}`);
  }
  for (const name of ["openai-organization", "openai-model", "x-ratelimit-remaining-requests", "x-upstream-provider", "server"]) {
    if (headers.has(name)) throw new Error(`upstream header leaked: ${name}`);
  }
}

/** A fetch that records the gateway paths it is asked for: which API a client's default speaks. */
export function recordingFetch(paths: string[]): typeof fetch {
  return (input, init) => {
    paths.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
    return fetch(input, init);
  };
}

/** What `useSdkGateway` hands a suite; filled in by its `beforeAll`. */
export interface SdkGateway {
  upstream: FakeUpstream;
  app: TestApp;
  /** A key with the `chat` scope, and its account. */
  apiKey: string;
  accountId: string;
  /** The gateway paths an SDK called through `fetch` (cleared before each test). */
  called: string[];
  /** A fetch that records into `called`, for the SDK under test. */
  fetch: typeof fetch;
}

/**
 * The gateway over one fake upstream, for a suite that drives a real SDK:
 * started once, the upstream's queue and the called paths cleared before
 * each test, everything closed after. `upstreamFields` are added to the
 * upstream's ZERO_UPSTREAMS entry (e.g. its `embeddingModel`).
 */
export function useSdkGateway(upstreamFields: Record<string, unknown> = {}, env: Record<string, string> = {}): SdkGateway {
  const called: string[] = [];
  const gateway = { called, fetch: recordingFetch(called) } as SdkGateway;
  beforeAll(async () => {
    gateway.upstream = await FakeUpstream.start();
    gateway.app = await startGateway([gateway.upstream], { ZERO_UPSTREAMS: upstreamsEnv([gateway.upstream.url], upstreamFields), ...env });
    ({ apiKey: gateway.apiKey, accountId: gateway.accountId } = await createAccountWithKey(gateway.app, ["chat"]));
  });
  afterAll(async () => {
    await gateway.app?.close();
    await gateway.upstream?.close();
  });
  beforeEach(() => {
    gateway.upstream.reset();
    called.length = 0;
  });
  return gateway;
}

/** How many requests to `route` `/metrics` counts with this `code` (a status, or `aborted`). */
export async function requestsCounted(app: { url: string }, route: string, code: string): Promise<number> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`zero_http_requests_total{route="${route}",method="POST",code="${code}"}`));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

/**
 * Sends `body` to `path` and leaves once the upstream has it, before any answer: what `/metrics` then
 * counts for the route, before and after (waiting until the `aborted` count moves, or a second).
 */
export async function leaveBeforeTheAnswer(
  app: { url: string },
  apiKey: string,
  path: string,
  body: unknown,
  upstream: { requests: unknown[] },
): Promise<{ aborted: number; ok: number }> {
  const [abortedBefore, okBefore] = [await requestsCounted(app, path, "aborted"), await requestsCounted(app, path, "200")];
  const leaving = new AbortController();
  const sent = upstream.requests.length;
  const request = fetch(`${app.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: leaving.signal,
  }).catch(() => undefined);
  for (let i = 0; i < 200 && upstream.requests.length === sent; i++) await new Promise((r) => setTimeout(r, 5));
  leaving.abort();
  await request;
  for (let i = 0; i < 50 && (await requestsCounted(app, path, "aborted")) === abortedBefore; i++) await new Promise((r) => setTimeout(r, 20));
  return { aborted: (await requestsCounted(app, path, "aborted")) - abortedBefore, ok: (await requestsCounted(app, path, "200")) - okBefore };
}

/** A Responses API function tool the tests' models call: the weather in a city. */
export const WEATHER_TOOLS: OpenAI.Responses.FunctionTool[] = [
  { type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false },
];
