import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { fail, FakeUpstream, held, sleep, stream, textChunks, type Behavior } from "./support/fake-upstream.js";
import { postChat, startGateway } from "./support/gateway.js";

const hello = { model: "project-zero", messages: [{ role: "user", content: "hi" }] };

/** Waits until the upstream has been asked `count` times: those requests hold their units. */
async function untilAsked(upstream: FakeUpstream, count: number): Promise<void> {
  while (upstream.requests.length < count) await sleep(5);
}

describe("the pool refuses as spent only when no unit can come back", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let apiKey: string;
  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream], { ZERO_FREE_POOL_DAILY_REQUESTS: "2", ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "5000" });
    ({ apiKey } = await createAccountWithKey(app, ["chat"]));
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  it("while the last units are held by requests that then fail, others are told to retry at once, and then served", async () => {
    const failures = held(fail(500));
    upstream.next(failures.behavior, failures.behavior);
    const inFlight = [postChat(app, apiKey, hello), postChat(app, apiKey, hello)];
    await untilAsked(upstream, 2);
    const refused = await postChat(app, apiKey, hello);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-should-retry")).toBe("true");
    expect(refused.headers.get("retry-after")).toBe("1");
    const body = (await refused.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "zero_capacity_unavailable", capacity_state: "in_flight" });
    failures.release();
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([502, 502]);
    // Both units came back: two more requests are served, and only then is the day spent.
    expect((await postChat(app, apiKey, hello)).status).toBe(200);
    expect((await postChat(app, apiKey, hello)).status).toBe(200);
    const spent = await postChat(app, apiKey, hello);
    expect(spent.status).toBe(429);
    expect(spent.headers.get("x-should-retry")).toBe("false");
    expect(((await spent.json()) as { error: Record<string, unknown> }).error.capacity_state).toBe("exhausted");
  });
});

describe("ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    // Upstreams here fail after 600 ms: a first-byte timeout of the same 600 ms (the helper's) raced them.
    app = await startGateway([upstream], { ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT: "5", ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "5000" });
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  afterEach(() => upstream.reset());

  it("serves exactly the cap per account under concurrency, over REST and RPC, and leaves other accounts alone", async () => {
    const greedy = await createAccountWithKey(app, ["chat"]);
    const other = await createAccountWithKey(app, ["chat"]);
    const answers = await Promise.all(Array.from({ length: 12 }, () => postChat(app, greedy.apiKey, hello)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
    // Once the five are served, the day is used up: not to be retried before midnight.
    const refusal = await postChat(app, greedy.apiKey, hello);
    expect(refusal.status).toBe(429);
    expect(refusal.headers.get("x-should-retry")).toBe("false");
    expect(Number(refusal.headers.get("retry-after"))).toBeGreaterThan(1);
    expect(((await refusal.json()) as { error: Record<string, unknown> }).error).toMatchObject({ type: "rate_limited", code: "rate_limited" });

    const rpc = createClient(ChatService, createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }));
    const overRpc = await rpc
      .createChatCompletion(
        { params: { model: "project-zero", messages: [{ role: "user", content: { kind: { case: "stringValue", value: "hi" } } }] } },
        { headers: { authorization: `Bearer ${greedy.apiKey}` } },
      )
      .catch((e: unknown) => e);
    expect((overRpc as ConnectError).code).toBe(Code.ResourceExhausted);

    expect((await postChat(app, other.apiKey, hello)).status).toBe(200);
    expect(upstream.requests).toHaveLength(6);
  });

  it("while the account's last requests are in flight, others are told to retry in a second, not at midnight; served once those fail", async () => {
    const account = await createAccountWithKey(app, ["chat"]);
    const failures = held(fail(500));
    upstream.next(...Array.from({ length: 5 }, () => failures.behavior));
    const inFlight = Array.from({ length: 5 }, () => postChat(app, account.apiKey, hello));
    await untilAsked(upstream, 5);
    const refused = await postChat(app, account.apiKey, hello);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-should-retry")).toBe("true");
    expect(refused.headers.get("retry-after")).toBe("1");
    const body = (await refused.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("rate_limited");
    expect(body.error.message).toContain("still being answered");
    failures.release();
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([502, 502, 502, 502, 502]);
    // None was served, so the whole day's five are still there.
    const served = await Promise.all(Array.from({ length: 5 }, () => postChat(app, account.apiKey, hello)));
    expect(served.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await postChat(app, account.apiKey, hello)).headers.get("x-should-retry")).toBe("false");
  });

  it("a request no upstream accepted does not count", async () => {
    const account = await createAccountWithKey(app, ["chat"]);
    upstream.next(fail(500), fail(500));
    expect((await postChat(app, account.apiKey, hello)).status).toBe(502);
    expect((await postChat(app, account.apiKey, hello)).status).toBe(502);
    const served = await Promise.all(Array.from({ length: 5 }, () => postChat(app, account.apiKey, hello)));
    expect(served.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await postChat(app, account.apiKey, hello)).status).toBe(429);
  });

  it("while a stream is still being answered, the account's next request over the cap is told to retry in a second", async () => {
    const account = await createAccountWithKey(app, ["chat"]);
    const fourServed = await Promise.all(Array.from({ length: 4 }, () => postChat(app, account.apiKey, hello)));
    expect(fourServed.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    upstream.next(stream(textChunks(["Once", " upon", " a", " time"]), { delayMs: 150 }));
    const streaming = await postChat(app, account.apiKey, { ...hello, stream: true });
    const meanwhile = await postChat(app, account.apiKey, hello);
    expect(meanwhile.status).toBe(429);
    expect(meanwhile.headers.get("x-should-retry")).toBe("true");
    expect(meanwhile.headers.get("retry-after")).toBe("1");
    expect(await streaming.text()).toContain("data: [DONE]");
    // Served in full, it counts: the day is over now.
    const after = await postChat(app, account.apiKey, hello);
    expect(after.status).toBe(429);
    expect(after.headers.get("x-should-retry")).toBe("false");
  });

  it("nor does one whose answer broke after the upstream accepted it: the account was served nothing", async () => {
    const account = await createAccountWithKey(app, ["chat"]);
    const htmlPage: Behavior = ({ res }) => void res.writeHead(200, { "content-type": "text/html" }).end("<html>maintenance</html>");
    upstream.next(htmlPage, stream(textChunks(["Once", " upon"]), { dropAfter: 1 }));
    expect((await postChat(app, account.apiKey, hello)).status).toBe(502);
    const broken = await postChat(app, account.apiKey, { ...hello, stream: true });
    expect(await broken.text()).toContain('"type":"upstream_error"');
    const served = await Promise.all(Array.from({ length: 5 }, () => postChat(app, account.apiKey, hello)));
    expect(served.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await postChat(app, account.apiKey, hello)).status).toBe(429);
  });
});
