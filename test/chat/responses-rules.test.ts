import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, fail, reply, stream, textChunks } from "./support/fake-upstream.js";
import { expectNoLeak, startGateway } from "./support/gateway.js";

// /v1/responses keeps every rule of chat completions: failover, the free pool, `program`, provider hiding.
describe("/v1/responses under the chat rules", () => {
  let first: FakeUpstream;
  let second: FakeUpstream;
  let app: TestApp;
  let apiKey: string;

  beforeAll(async () => {
    [first, second] = await Promise.all([FakeUpstream.start(), FakeUpstream.start()]);
    app = await startGateway([first, second], {});
    ({ apiKey } = await createAccountWithKey(app, ["chat"]));
  });
  afterAll(async () => {
    await app.close();
    await Promise.all([first.close(), second.close()]);
  });
  beforeEach(() => {
    first.reset();
    second.reset();
  });

  const post = (body: Record<string, unknown>, path = "/v1/responses", method = "POST") =>
    fetch(`${app.url}${path}`, { method, headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, body: JSON.stringify(body) });

  it("fails over to the next upstream, and answers without a trace of either", async () => {
    first.next(fail(503));
    second.next(reply(completion("served by the second")));
    const response = await post({ model: "project-zero", input: "hi" });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ object: "response", model: "project-zero", output: [{ content: [{ text: "served by the second" }] }] });
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
    expectNoLeak(response.headers, text);
  });

  it("replaces an upstream's 4xx message by ours", async () => {
    first.next(reply({ error: { message: "org-7Hq2 at SecretCo rejected it", type: "invalid_request_error", param: "messages", code: null } }, 400));
    const response = await post({ model: "project-zero", input: "hi" });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(JSON.parse(text)).toMatchObject({ error: { type: "invalid_request", message: expect.stringContaining("model provider") } });
    expect(text).not.toContain("org-7Hq2");
    expectNoLeak(response.headers, text);
  });

  it("names, in an upstream's refusal, the field of the client's Responses request the refused chat field came from", async () => {
    const cases: [string, Record<string, unknown>, string | undefined][] = [
      ["max_completion_tokens", { max_output_tokens: 50 }, "max_output_tokens"],
      ["messages[1].content", {}, "input"],
      ["response_format.json_schema.schema", { text: { format: { type: "json_schema", name: "x", schema: { type: "object" } } } }, "text.format"],
      ["tools[0].function.parameters", { tools: [{ type: "function", name: "f", parameters: { type: "object" } }] }, "tools[0].parameters"],
      ["reasoning_effort", { reasoning: { effort: "low" } }, "reasoning.effort"],
      ["temperature", { temperature: 0.5 }, "temperature"],
      ["stream_options", {}, undefined],
      ["top_p", {}, undefined],
      ["tools[3].function.parameters", { tools: [{ type: "function", name: "f", parameters: { type: "object" } }] }, undefined],
      ["tools[0]\nsecret_upstream_field", { tools: [{ type: "function", name: "f", parameters: { type: "object" } }] }, undefined],
    ];
    for (const [named, fields, expected] of cases) {
      first.next(reply({ error: { message: "no", type: "invalid_request_error", param: named, code: null } }, 400));
      const response = await post({ model: "project-zero", input: "hi", ...fields });
      const { error } = (await response.json()) as { error: { param?: string; message: string } };
      expect(response.status, named).toBe(400);
      expect(error.param ?? undefined, named).toBe(expected);
      expect(error.message, named).not.toContain("chat");
    }
  });

  it("takes `program` as chat does: ours is accepted and never sent upstream, a foreign one is 422", async () => {
    first.next(reply(completion("ok")));
    const ours = await post({ model: "project-zero", input: "hi", program: "project_zero" });
    expect(ours.status).toBe(200);
    expect(first.requests[0]!.body).not.toHaveProperty("program");
    const foreign = await post({ model: "project-zero", input: "hi", program: "other_program" });
    expect(foreign.status).toBe(422);
    expect(await foreign.json()).toMatchObject({ error: { code: "program_mismatch" } });
    expect(first.requests).toHaveLength(1);
  });

  it("answers unknown /v1 routes and methods in OpenAI's error shape", async () => {
    const route = await post({}, "/v1/assistants-that-do-not-exist");
    expect(route.status).toBe(404);
    expect(await route.json()).toEqual({ error: expect.objectContaining({ message: expect.any(String), type: expect.any(String) }) });
    const method = await post({}, "/v1/responses", "PUT");
    expect(method.status).toBe(405);
    expect(await method.json()).toEqual({ error: expect.objectContaining({ message: expect.any(String), type: expect.any(String) }) });
  });
});

describe("/v1/responses and the free pool", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let apiKey: string;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream], { ZERO_FREE_POOL_DAILY_REQUESTS: "2" });
    ({ apiKey } = await createAccountWithKey(app, ["chat"]));
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  it("spends one unit per response; when the pool is empty, 429 before any upstream, streamed or not", async () => {
    const post = (stream: boolean) =>
      fetch(`${app.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "project-zero", input: "hi", stream }),
      });
    upstream.next(reply(completion("first unit")), stream(textChunks(["second ", "unit"])));
    expect((await post(false)).status).toBe(200);
    const streamed = await post(true);
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain("event: response.completed");

    for (const streaming of [false, true]) {
      const refused = await post(streaming);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("content-type")).toContain("application/json");
      expect(await refused.json()).toMatchObject({ error: { code: "zero_capacity_unavailable", capacity_state: "exhausted", reset_at: expect.any(String) } });
    }
    expect(upstream.requests).toHaveLength(2);
  });
});
