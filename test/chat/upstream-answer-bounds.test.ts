import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { type Behavior, chunk, completion, drip, fail, FakeUpstream, reply, sleep, stream, textChunks } from "./support/fake-upstream.js";
import { expectNoLeak, postChat, readSse, startGateway } from "./support/gateway.js";

/** ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS here: an answer that is not streamed must be whole within it. */
const ANSWER_MS = 800;
/** ZERO_UPSTREAM_IDLE_TIMEOUT_MS here: the longest silence inside an answer. */
const IDLE_MS = 2000;

let primary: FakeUpstream;
let secondary: FakeUpstream;
let app: TestApp;
let apiKey: string;

beforeAll(async () => {
  primary = await FakeUpstream.start();
  secondary = await FakeUpstream.start();
  app = await startGateway([primary, secondary], { ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: String(ANSWER_MS), ZERO_UPSTREAM_IDLE_TIMEOUT_MS: String(IDLE_MS) });
  ({ apiKey } = await createAccountWithKey(app, ["chat"]));
});

afterAll(async () => {
  await app?.close();
  await primary?.close();
  await secondary?.close();
});

beforeEach(() => {
  primary.reset();
  secondary.reset();
});

const request = { model: "project-zero", messages: [{ role: "user", content: "Say hello" }] };

/** A valid completion behind `megabytes` MiB of leading whitespace, sent as fast as the gateway reads. */
function oversized(megabytes: number): Behavior {
  return async ({ res }) => {
    res.writeHead(200, { "content-type": "application/json" });
    const mebibyte = Buffer.alloc(1024 * 1024, " ");
    for (let i = 0; i < megabytes && !res.destroyed; i++) {
      if (!res.write(mebibyte)) await new Promise((resolve) => res.once("drain", resolve));
    }
    if (!res.destroyed) res.end(JSON.stringify(completion("from the oversized one")));
  };
}

describe("an answer that is not streamed is bounded in time and size", () => {
  it("cuts off an answer that keeps sending bytes past the deadline and asks the next upstream", async () => {
    primary.next(drip());
    secondary.next(reply(completion("from the second")));
    const started = performance.now();
    const response = await postChat(app, apiKey, request);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("from the second");
    expect(performance.now() - started).toBeLessThan(ANSWER_MS + 2000);
    await primary.requests[0]!.aborted;
  }, 15_000);

  it("is 504 upstream_timeout when every upstream keeps dripping", async () => {
    primary.next(drip());
    secondary.next(drip());
    const response = await postChat(app, apiKey, request);
    expect(response.status).toBe(504);
    const text = await response.text();
    expect(JSON.parse(text).error.type).toBe("upstream_timeout");
    expectNoLeak(response.headers, text);
  }, 15_000);

  it("refuses an answer past the size cap as not what was asked for, and asks the next upstream", async () => {
    primary.next(oversized(40));
    secondary.next(reply(completion("from the second")));
    const response = await postChat(app, apiKey, request);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("from the second");
    expect(secondary.requests).toHaveLength(1);
  }, 15_000);

  it("is 502 upstream_error when every upstream's answer is past the size cap", async () => {
    primary.next(oversized(40));
    secondary.next(oversized(40));
    const response = await postChat(app, apiKey, request);
    expect(response.status).toBe(502);
    const text = await response.text();
    expect(JSON.parse(text).error).toMatchObject({ type: "upstream_error", message: "the model's answer is larger than the service accepts" });
    expectNoLeak(response.headers, text);
  }, 15_000);

  it("lets a stream run past the deadline while its tokens flow", async () => {
    const pieces = Array.from({ length: 12 }, (_, i) => `word${i} `);
    primary.next(stream(textChunks(pieces), { delayMs: 120 }));
    const response = await postChat(app, apiKey, { ...request, stream: true });
    expect(response.status).toBe(200);
    const events = await readSse(response);
    expect(events.at(-1)).toBe("[DONE]");
    const text = events
      .slice(0, -1)
      .map((event) => (JSON.parse(event) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "")
      .join("");
    expect(text).toBe(pieces.join(""));
  }, 15_000);
});

describe("a streamed answer is bounded in size too", () => {
  it("fails an event that grows past the size cap (a line that never ends) at the cap, not when the upstream stops", async () => {
    // A first chunk, then one `data:` line of 48 MiB with no end, then silence with the connection open.
    primary.next(async ({ res }) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(textChunks(["one"])[0])}\n\ndata: {"choices":[{"index":0,"delta":{"content":"`);
      const mebibyte = Buffer.alloc(1024 * 1024, "x");
      for (let i = 0; i < 48 && !res.destroyed; i++) {
        if (!res.write(mebibyte)) await new Promise((resolve) => res.once("drain", resolve));
      }
      while (!res.destroyed) await sleep(50);
    });
    const response = await postChat(app, apiKey, { ...request, stream: true });
    expect(response.status).toBe(200);
    const events = await readSse(response);
    expect(JSON.parse(events.at(-2)!).error).toMatchObject({ type: "upstream_error", message: "the model's answer is larger than the service accepts" });
    expect(events.at(-1)).toBe("[DONE]");
    await primary.requests[0]!.aborted;
  }, 15_000);
});

describe("a streamed Responses answer is bounded in size, as a whole answer is", () => {
  it("ends with an error event once the words it gathers pass the cap, and stops the upstream", async () => {
    const mebibyte = "w".repeat(1024 * 1024);
    primary.next(async ({ res }) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (let i = 0; i < 40 && !res.destroyed; i++) {
        if (!res.write(`data: ${JSON.stringify(chunk({ content: mebibyte }))}\n\n`)) await new Promise((resolve) => res.once("drain", resolve));
      }
      while (!res.destroyed) await sleep(50);
    });
    const response = await fetch(`${app.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", input: "Say a lot", stream: true, store: false }),
    });
    const text = await response.text();
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!.slice("data: ".length)) as { type: string; message?: string };
    expect(last).toMatchObject({ type: "error", message: "the model's answer is larger than the service accepts" });
    await primary.requests[0]!.aborted;
  }, 30_000);
});

describe("every upstream refusing the service's own key or model name", () => {
  const configuration =
    "the model provider refused the service's key, account or model name; check the API keys, the provider accounts' credit and the model names in ZERO_UPSTREAMS";

  it("still fails over, then says to check the upstream configuration, naming no provider", async () => {
    for (const [first, second] of [
      [401, 404],
      [403, 401],
    ] as const) {
      primary.reset().next(fail(first, "Incorrect API key provided: sk-upstream-SECRET-key at SecretCo"));
      secondary.reset().next(fail(second, `The model secret-upstream-model-7b does not exist`));
      const response = await postChat(app, apiKey, request);
      expect(response.status).toBe(502);
      const text = await response.text();
      expect(JSON.parse(text).error).toMatchObject({ type: "upstream_error", message: configuration });
      expectNoLeak(response.headers, text);
      expect([primary.requests.length, secondary.requests.length]).toEqual([1, 1]);
    }
  });

  it("is not said when one of them did answer, with something that was not a completion", async () => {
    primary.next(({ res }) => void res.writeHead(200, { "content-type": "text/html" }).end("<html>down for maintenance</html>"));
    secondary.next(fail(401));
    const response = await postChat(app, apiKey, request);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe("the model returned an answer that is not JSON");
  });

  it("says the model is unavailable when one of them failed otherwise", async () => {
    primary.next(fail(401));
    secondary.next(fail(503));
    const response = await postChat(app, apiKey, request);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe("the model is unavailable right now; try again shortly");
  });
});

// Found by a review of misbehaving upstreams: answers HTTP allows, or 2xx answers that are no use, each as a provider or its proxy sends them.
describe("an upstream answering as HTTP allows, or with a 2xx that is no use", () => {
  const answered = async (response: Response) => {
    expect(response.status).toBe(200);
    return ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
  };

  it("asks the next upstream when a 2xx holds no usable choice", async () => {
    const broken: unknown[] = [
      { ...completion("x"), choices: [] },
      { ...completion("x"), choices: [null] },
      { ...completion("x"), choices: [{ index: 0, message: null, finish_reason: "stop" }] },
      { ...completion("x"), choices: [{ index: 0, message: { role: "assistant", content: 42 }, finish_reason: "stop" }] },
      { ...completion("x"), choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: 7 }] },
    ];
    for (const body of broken) {
      primary.reset().next(reply(body));
      secondary.reset().next(reply(completion("from the second")));
      expect(await answered(await postChat(app, apiKey, request)), JSON.stringify(body)).toBe("from the second");
      expect([primary.requests.length, secondary.requests.length]).toEqual([1, 1]);
    }
  });

  it("reads the answer after a 103 Early Hints, and asks for it uncompressed", async () => {
    primary.next((exchange) => {
      exchange.res.writeEarlyHints({ link: "</style.css>; rel=preload; as=style" });
      return reply(completion("after the hints"))(exchange);
    });
    expect(await answered(await postChat(app, apiKey, request))).toBe("after the hints");
    expect(secondary.requests).toHaveLength(0);
    expect(primary.requests[0]!.headers["accept-encoding"]).toBe("identity");
  });

  it("counts a redirect as the entry's fault: it fails over, then says to check the configuration", async () => {
    for (const status of [301, 307, 308]) {
      const moved: Behavior = ({ res }) => void res.writeHead(status, { location: "https://elsewhere.example/v1/chat/completions" }).end();
      primary.reset().next(moved);
      secondary.reset().next(moved);
      const response = await postChat(app, apiKey, request);
      expect(response.status).toBe(502);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/check .* ZERO_UPSTREAMS/);
      expect([primary.requests.length, secondary.requests.length]).toEqual([1, 1]);
    }
  });

  it("fails a stream that ends with [DONE] before any answer, rather than relaying an empty one", async () => {
    primary.next(stream([]));
    const response = await postChat(app, apiKey, { ...request, stream: true });
    const events = await readSse(response);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0]!).error).toMatchObject({ type: "upstream_error" });
    expect(events[1]).toBe("[DONE]");
  });

  it("fails a stream that sends only comments and empty chunks past the first-byte timeout, as an answer that never began", async () => {
    for (const filler of [": keep-alive\n\n", `data: ${JSON.stringify({ ...chunk({}), choices: [] })}\n\n`]) {
      primary.reset().next(async ({ res }) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        while (!res.destroyed) {
          res.write(filler);
          await sleep(50);
        }
      });
      const response = await postChat(app, apiKey, { ...request, stream: true });
      const events = await readSse(response);
      expect(JSON.parse(events[0]!).error, filler).toMatchObject({ type: "upstream_timeout" });
      expect(events.slice(1)).toEqual(["[DONE]"]);
      await primary.requests[0]!.aborted;
    }
  }, 15_000);

  it("ends a stream as whole when its upstream goes silent after every choice finished, rather than failing what the client already has", async () => {
    primary.next(stream(textChunks(["Hello", "!"]), { hangAfter: 4 }));
    const response = await postChat(app, apiKey, { ...request, stream: true });
    const events = await readSse(response);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events
      .slice(0, -1)
      .map((event) => JSON.parse(event) as { error?: unknown; choices: { delta: { content?: string }; finish_reason: string | null }[] });
    expect(chunks.some((c) => c.error !== undefined)).toBe(false);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Hello!");
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
  }, 15_000);
});
