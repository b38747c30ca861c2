import http from "node:http";
import { expect } from "vitest";
import type { AddressInfo } from "node:net";

/** What the fake upstream saw of one request. */
export interface UpstreamRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** When the gateway closed the request before the answer finished (ms, performance.now()), else undefined. */
  abortedAt: number | undefined;
  /** Resolves with `abortedAt` when the gateway hangs up early. */
  aborted: Promise<number>;
}

export interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  body: Record<string, unknown>;
  record: UpstreamRequest;
}

/** One scripted answer. */
export type Behavior = (exchange: Exchange) => void | Promise<void>;

/** The upstream's own names, which must never reach a client of the gateway. */
export const UPSTREAM_MODEL = "secret-upstream-model-7b";
export const UPSTREAM_ID = "upstream-cmpl-SECRET";
export const UPSTREAM_FINGERPRINT = "fp_secret_upstream";

/** Headers a real provider sends that name it or its limits; the gateway must drop them all. */
const LEAKY_HEADERS = {
  "openai-organization": "secret-org",
  "openai-model": UPSTREAM_MODEL,
  "x-ratelimit-remaining-requests": "41",
  "x-upstream-provider": "SecretCo",
  server: "SecretCo-edge",
};

/**
 * A real HTTP server standing in for an OpenAI-compatible provider. Each test
 * scripts it: `next(...)` queues answers for the coming requests in order,
 * `otherwise(...)` answers the rest.
 */
export class FakeUpstream {
  readonly requests: UpstreamRequest[] = [];
  #queue: Behavior[] = [];
  #fallback: Behavior = answer("hello");
  readonly #server: http.Server;
  #url = "";

  private constructor() {
    this.#server = http.createServer((req, res) => void this.#handle(req, res));
    this.#server.keepAliveTimeout = 30_000;
  }

  static async start(): Promise<FakeUpstream> {
    const fake = new FakeUpstream();
    await new Promise<void>((resolve) => fake.#server.listen(0, "127.0.0.1", resolve));
    fake.#url = `http://127.0.0.1:${(fake.#server.address() as AddressInfo).port}/v1`;
    return fake;
  }

  /** Base URL as an operator would put it in ZERO_UPSTREAMS. */
  get url(): string {
    return this.#url;
  }

  /** Queues answers for the next requests, in order. */
  next(...behaviors: Behavior[]): this {
    this.#queue.push(...behaviors);
    return this;
  }

  /** Answers every request the queue does not cover. */
  otherwise(behavior: Behavior): this {
    this.#fallback = behavior;
    return this;
  }

  reset(): this {
    this.requests.length = 0;
    this.#queue = [];
    this.#fallback = answer("hello");
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
    } catch {
      // Recorded as empty; the test will see it.
    }
    let resolveAborted!: (at: number) => void;
    const record: UpstreamRequest = {
      path: req.url ?? "",
      headers: req.headers,
      body,
      abortedAt: undefined,
      aborted: new Promise((resolve) => (resolveAborted = resolve)),
    };
    res.once("close", () => {
      if (!res.writableFinished) {
        record.abortedAt = performance.now();
        resolveAborted(record.abortedAt);
      }
    });
    this.requests.push(record);
    const behavior = this.#queue.shift() ?? this.#fallback;
    await behavior({ req, res, body, record });
  }
}

/** An upstream-flavoured completion: its own id, model and fingerprint, which the gateway must replace. */
export function completion(content: string | null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: UPSTREAM_ID,
    object: "chat.completion",
    created: 1_763_000_000,
    model: UPSTREAM_MODEL,
    system_fingerprint: UPSTREAM_FINGERPRINT,
    provider: "SecretCo",
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: "stop" }],
    usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
    ...extra,
  };
}

/** A completion whose answer is a tool call. */
export function toolCallCompletion(name: string, args: string): Record<string, unknown> {
  return completion(null, {
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_abc123", type: "function", function: { name, arguments: args } }],
        },
        logprobs: null,
        finish_reason: "tool_calls",
      },
    ],
  });
}

/** A stream chunk in OpenAI's format. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: UPSTREAM_ID,
    object: "chat.completion.chunk",
    created: 1_763_000_000,
    model: UPSTREAM_MODEL,
    system_fingerprint: UPSTREAM_FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...extra,
  };
}

/** The chunks of a plain text answer, split into `pieces`, with a usage chunk at the end. */
export function textChunks(pieces: string[]): Record<string, unknown>[] {
  return [
    chunk({ role: "assistant", content: "" }),
    ...pieces.map((content) => chunk({ content })),
    chunk({}, "stop"),
    { ...chunk({}), choices: [], usage: { prompt_tokens: 5, completion_tokens: pieces.length, total_tokens: 5 + pieces.length } },
  ];
}

/** Answers with a JSON body and the provider's leaky headers. */
export function reply(body: unknown, status = 200, headers: Record<string, string> = {}): Behavior {
  return ({ res }) => {
    const payload = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(payload), ...LEAKY_HEADERS, ...headers });
    res.end(payload);
  };
}

/** An OpenAI-shaped error from the upstream. */
export function fail(status: number, message = "upstream trouble at SecretCo"): Behavior {
  return reply({ error: { message, type: "server_error", code: null, param: null } }, status, status === 429 ? { "retry-after": "7" } : {});
}

export interface StreamOptions {
  /** Pause before each chunk. */
  delayMs?: number;
  /** Send `data: [DONE]` at the end (default true). */
  done?: boolean;
  /** Destroy the socket after this many chunks: a mid-stream drop. */
  dropAfter?: number;
  /** Stop sending after this many chunks and keep the connection open: a mid-stream hang. */
  hangAfter?: number;
}

/** Streams chunks as server-sent events, one write per event (CRLF-free, as OpenAI does). */
export function stream(chunks: unknown[], options: StreamOptions = {}): Behavior {
  return async ({ res }) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...LEAKY_HEADERS });
    res.flushHeaders();
    for (let i = 0; i < chunks.length; i++) {
      if (options.dropAfter === i) {
        // Let what was written leave first, as a crash after sending would.
        await sleep(30);
        res.socket?.destroy();
        return;
      }
      if (options.hangAfter === i) return;
      if (options.delayMs) await sleep(options.delayMs);
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(chunks[i])}\n\n`);
    }
    if (options.done !== false) res.end("data: [DONE]\n\n");
    else res.end();
  };
}

/** A well-behaved upstream: streams when asked to, else one completion. */
export function answer(content: string): Behavior {
  return (exchange) => (exchange.body.stream === true ? stream(textChunks([content])) : reply(completion(content)))(exchange);
}

/** Never answers (the connection stays open). */
export function hang(): Behavior {
  return () => {};
}

/** A 200 head, then one space every 50 ms for as long as the client listens: never silent, never done. */
export function drip(): Behavior {
  return async ({ res }) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    while (!res.destroyed) {
      res.write(" ");
      await sleep(50);
    }
  };
}

/** `behavior`, run only once the test calls `release`: the request holds whatever it took meanwhile. */
export function held(behavior: Behavior): { behavior: Behavior; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return {
    behavior: async (exchange) => {
      await released;
      await behavior(exchange);
    },
    release,
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A tool call id as a client of the gateway has it: the provider's `providerId`, made unique with a suffix of ours. */
export function ownId(providerId: string): string {
  return expect.stringMatching(new RegExp(`^${providerId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}__pz[0-9a-f]{12}$`)) as unknown as string;
}
