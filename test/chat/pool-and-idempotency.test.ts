import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, fail, FakeUpstream, held, reply, sleep } from "./support/fake-upstream.js";
import { openAiClient, postChat, readSse, startGateway } from "./support/gateway.js";

const CAPACITY = 4;

let upstream: FakeUpstream;
let app: TestApp;
let apiKey: string;
let client: OpenAI;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  app = await startGateway([upstream], { ZERO_FREE_POOL_DAILY_REQUESTS: String(CAPACITY) });
  ({ apiKey } = await createAccountWithKey(app, ["chat"]));
  client = openAiClient(app, apiKey);
});

afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

const body = { model: "project-zero", messages: [{ role: "user" as const, content: "Count to three" }] };
const otherBody = { model: "project-zero", messages: [{ role: "user" as const, content: "Count to four" }] };

// One story, in order: the pool's units are counted across the steps.
describe.sequential("Idempotency-Key, then the free pool running out", () => {
  let firstId = "";

  it("replays a served request with the same key and body, without asking the upstream again", async () => {
    upstream.next(reply(completion("one, two, three")));
    const first = await postChat(app, apiKey, body, { "idempotency-key": "key-1" });
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const firstText = await first.text();
    firstId = (JSON.parse(firstText) as { id: string }).id;

    // Same JSON, other spacing: the same request.
    const again = await postChat(app, apiKey, JSON.stringify(body, null, 2), { "idempotency-key": "key-1" });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(firstText);
    // The same JSON with its keys in another order, at every level (a retry that builds its body anew): the same request too.
    const reordered = `{"messages":[{"content":"Count to three","role":"user"}],"model":"project-zero"}`;
    const rebuilt = await postChat(app, apiKey, reordered, { "idempotency-key": "key-1" });
    expect(rebuilt.status).toBe(200);
    expect(rebuilt.headers.get("idempotent-replayed")).toBe("true");
    expect(await rebuilt.text()).toBe(firstText);
    expect(upstream.requests).toHaveLength(1);
  });

  it("422 idempotency_key_reused for the same key with another body", async () => {
    const error = await client.chat.completions.create(otherBody, { headers: { "Idempotency-Key": "key-1" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("idempotency_key_reused");
    expect(upstream.requests).toHaveLength(1);
  });

  it("422 idempotency_key_reused for the same key on another route: a key cannot replay the chat answer as a response", async () => {
    const error = await client.responses
      .create({ model: "project-zero", input: "Count to three" }, { headers: { "Idempotency-Key": "key-1" } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("idempotency_key_reused");
    expect(upstream.requests).toHaveLength(1);
  });

  it("keys belong to an account: another account's same key is a new request", async () => {
    const other = await createAccountWithKey(app, ["chat"]);
    upstream.next(reply(completion("theirs")));
    const response = await postChat(app, other.apiKey, body, { "idempotency-key": "key-1" });
    expect(response.status).toBe(200);
    expect(response.headers.get("idempotent-replayed")).toBeNull();
    expect(((await response.json()) as { id: string }).id).not.toBe(firstId);
  });

  it("409 idempotency_key_in_progress while the first request is still running", async () => {
    const slow = held(reply(completion("slow")));
    upstream.next(slow.behavior);
    const first = postChat(app, apiKey, body, { "idempotency-key": "key-2" });
    const seen = upstream.requests.length;
    while (upstream.requests.length === seen) await sleep(5);
    const second = await postChat(app, apiKey, body, { "idempotency-key": "key-2" });
    slow.release();
    expect(second.status).toBe(409);
    expect(((await second.json()) as { error: { type: string } }).error.type).toBe("idempotency_key_in_progress");
    expect((await first).status).toBe(200);
  });

  it("a failed request leaves its key free to retry, and gives its pool unit back", async () => {
    upstream.next(fail(500));
    const failed = await postChat(app, apiKey, body, { "idempotency-key": "key-3" });
    expect(failed.status).toBe(502);
    upstream.next(reply(completion("second try")));
    const retried = await postChat(app, apiKey, body, { "idempotency-key": "key-3" });
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    expect(((await retried.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("second try");
  });

  it("429 zero_capacity_unavailable once the day's units are spent (the SDK's RateLimitError)", async () => {
    // Served so far: key-1, the other account, key-2 and key-3's retry = 4 = CAPACITY.
    const served = upstream.requests.length;
    const error = await client.chat.completions.create(body).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const rateLimit = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rateLimit.code).toBe("zero_capacity_unavailable");
    const detail = rateLimit.error as { capacity_state: string; reset_at: string };
    expect(detail.capacity_state).toBe("exhausted");
    const resetAt = new Date(detail.reset_at);
    expect(detail.reset_at).toMatch(/^\d{4}-\d{2}-\d{2}T00:00:00Z$/);
    expect(resetAt.getTime()).toBeGreaterThan(Date.now());
    expect(resetAt.getTime() - Date.now()).toBeLessThanOrEqual(86_400_000);
    const retryAfter = Number(rateLimit.headers?.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(Math.abs(retryAfter - (resetAt.getTime() - Date.now()) / 1000)).toBeLessThan(5);
    expect(upstream.requests).toHaveLength(served);
  });

  it("a streaming request gets the same refusal as one error event after 200", async () => {
    const response = await postChat(app, apiKey, { ...body, stream: true });
    expect(response.status).toBe(200);
    const events = await readSse(response);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0]!)).toEqual({
      error: {
        type: "zero_capacity_unavailable",
        code: "zero_capacity_unavailable",
        message: expect.any(String),
        param: null,
        capacity_state: "exhausted",
        reset_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T00:00:00Z$/),
      },
    });
    expect(events[1]).toBe("[DONE]");
  });

  it("a replay needs no unit: it is still served from the record", async () => {
    const replay = await postChat(app, apiKey, body, { "idempotency-key": "key-1" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(((await replay.json()) as { id: string }).id).toBe(firstId);
  });
});
