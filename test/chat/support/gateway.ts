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
  /** A key with the `chat` scope. */
  apiKey: string;
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
export function useSdkGateway(upstreamFields: Record<string, unknown> = {}): SdkGateway {
  const called: string[] = [];
  const gateway = { called, fetch: recordingFetch(called) } as SdkGateway;
  beforeAll(async () => {
    gateway.upstream = await FakeUpstream.start();
    gateway.app = await startGateway([gateway.upstream], { ZERO_UPSTREAMS: upstreamsEnv([gateway.upstream.url], upstreamFields) });
    gateway.apiKey = (await createAccountWithKey(gateway.app, ["chat"])).apiKey;
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
