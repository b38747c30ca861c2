import http2 from "node:http2";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { consoleClient, createAccountWithKey, sessionHeaders } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import {
  type Behavior,
  chunk,
  completion,
  fail,
  FakeUpstream,
  hang,
  reply,
  stream,
  textChunks,
  toolCallCompletion,
  UPSTREAM_MODEL,
  ownId,
} from "./support/fake-upstream.js";
import { DEAD_UPSTREAM, expectNoLeak, leaveBeforeTheAnswer, openAiClient, postChat, readSse, startGateway, UPSTREAM_KEY } from "./support/gateway.js";

let primary: FakeUpstream;
let secondary: FakeUpstream;
let app: TestApp;
let apiKey: string;
let client: OpenAI;

beforeAll(async () => {
  primary = await FakeUpstream.start();
  secondary = await FakeUpstream.start();
  // A dead first entry: every request also proves failover on a connect error.
  app = await startGateway([DEAD_UPSTREAM, primary, secondary]);
  ({ apiKey } = await createAccountWithKey(app, ["chat"]));
  client = openAiClient(app, apiKey);
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

const messages = [{ role: "user" as const, content: "Say hello" }];

describe("non-streaming, through the official openai SDK", () => {
  it("answers as project-zero with our id, and sends the upstream every OpenAI field but with its own model", async () => {
    primary.next(reply(completion("Hello there!")));
    const { data, response } = await client.chat.completions
      .create({
        model: "project-zero",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: [{ type: "text", text: "Say hello" }] },
        ],
        temperature: 0.3,
        top_p: 0.9,
        max_completion_tokens: 50,
        stop: ["\n\n"],
        seed: 7,
        n: 1,
        response_format: { type: "json_schema", json_schema: { name: "x", strict: true, schema: { type: "object" } } },
        metadata: { trace: "abc" },
        user: "end-user-1",
        // @ts-expect-error: ours, not in the SDK's types
        program: "project_zero",
        some_future_field: { nested: [1, 2.5, "x"] },
      })
      .withResponse();

    expect(data.choices[0]!.message.content).toBe("Hello there!");
    expect(data.model).toBe("project-zero");
    expect(data.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(data).not.toHaveProperty("system_fingerprint");
    expect(data).not.toHaveProperty("provider");
    expect(data.usage).toEqual({ prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 });
    expectNoLeak(response.headers, JSON.stringify(data));

    expect(primary.requests).toHaveLength(1);
    const sent = primary.requests[0]!;
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(sent.headers)).not.toContain(apiKey);
    expect(sent.body).toEqual({
      model: UPSTREAM_MODEL,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Say hello" }] },
      ],
      temperature: 0.3,
      top_p: 0.9,
      max_completion_tokens: 50,
      stop: ["\n\n"],
      seed: 7,
      n: 1,
      response_format: { type: "json_schema", json_schema: { name: "x", strict: true, schema: { type: "object" } } },
      metadata: { trace: "abc" },
      user: "end-user-1",
      // Not an OpenAI field: an aggregator upstream might read it as routing, so it stays here.
    });
  });

  it("passes tools and tool_choice through and returns the tool call intact", async () => {
    primary.next(reply(toolCallCompletion("get_weather", '{"city":"Oslo"}')));
    const tools = [
      {
        type: "function" as const,
        function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
      },
    ];
    const result = await client.chat.completions.create({ model: "project-zero", messages, tools, tool_choice: "required" });
    expect(result.choices[0]!.finish_reason).toBe("tool_calls");
    expect(result.choices[0]!.message.tool_calls).toEqual([
      { id: ownId("call_abc123"), type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
    ]);
    expect(primary.requests[0]!.body.tools).toEqual(tools);
    expect(primary.requests[0]!.body.tool_choice).toBe("required");
  });
});

describe("ids", () => {
  it("tell a client when, and nothing of how many requests others made in between", async () => {
    primary.otherwise(reply(completion("hi")));
    const before = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await client.chat.completions.create({ model: "project-zero", messages })).id);
    const after = Date.now();
    for (const id of ids) {
      expect(id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
      const at = Number.parseInt(id.slice(9, 21), 16);
      expect(at).toBeGreaterThanOrEqual(before);
      expect(at).toBeLessThanOrEqual(after);
    }
    // The rest is random: no two alike, and no count to read off from one id to the next.
    const rest = ids.map((id) => BigInt(`0x${id.slice(21)}`));
    expect(new Set(rest).size).toBe(ids.length);
    const steps = rest.slice(1).map((value, i) => (value > rest[i]! ? value - rest[i]! : rest[i]! - value));
    expect(steps.filter((step) => step < 1_000_000n)).toHaveLength(0);
  });
});

describe("models", () => {
  it("lists the alias as the only model, and retrieves it, for a chat key", async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models).toEqual([{ id: "project-zero", object: "model", created: expect.any(Number), owned_by: "project-zero" }]);
    expect((await client.models.retrieve("project-zero")).id).toBe("project-zero");
    const error = await openAiClient(app, `zk_${"y".repeat(40)}`)
      .models.list()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe("refusals, as the SDK's error classes", () => {
  it("400 model_not_found for a provider-prefixed alias, never sent upstream", async () => {
    const error = await client.chat.completions.create({ model: "openai/project-zero", messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("model_not_found");
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).type).toBe("model_not_found");
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("model");
    expect(primary.requests).toHaveLength(0);
    expect(secondary.requests).toHaveLength(0);
  });

  it("404 model_not_found for any other model", async () => {
    const error = await client.chat.completions.create({ model: "gpt-4o", messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    expect(primary.requests).toHaveLength(0);
  });

  it("422 program_mismatch for a foreign program", async () => {
    const error = await client.chat.completions
      // @ts-expect-error: ours, not in the SDK's types
      .create({ model: "project-zero", messages, program: "other_program" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as InstanceType<typeof OpenAI.UnprocessableEntityError>).code).toBe("program_mismatch");
    expect(primary.requests).toHaveLength(0);
  });

  it("401 invalid_api_key without a valid key, and for a Console cookie alone", async () => {
    const bad = await openAiClient(app, `zk_${"x".repeat(40)}`)
      .chat.completions.create({ model: "project-zero", messages })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((bad as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key");

    const { cookie } = await createAccountWithKey(app, ["chat"]);
    const response = await postChat(app, undefined, { model: "project-zero", messages }, { cookie, origin: app.url });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { type: string } }).error).toMatchObject({ type: "invalid_api_key", code: "invalid_api_key" });
  });

  it("a revoked key is refused from the very next request, although it was just in use", async () => {
    const account = await createAccountWithKey(app, ["chat"]);
    const ownClient = openAiClient(app, account.apiKey);
    await ownClient.chat.completions.create({ model: "project-zero", messages });
    const console = consoleClient(app.url);
    const headers = sessionHeaders(app.url, account.cookie);
    const { apiKeys } = await console.listApiKeys({}, { headers });
    await console.revokeApiKey({ id: apiKeys[0]!.id }, { headers });
    const error = await ownClient.chat.completions.create({ model: "project-zero", messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("403 insufficient_scope for a key without `chat`", async () => {
    const { apiKey: readKey } = await createAccountWithKey(app, ["read", "build"]);
    const error = await openAiClient(app, readKey)
      .chat.completions.create({ model: "project-zero", messages })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((error as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe("insufficient_scope");
    expect(primary.requests).toHaveLength(0);
  });

  it("400 invalid_request for a body that is not JSON, in OpenAI's shape", async () => {
    const response = await postChat(app, apiKey, "{not json");
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: { type: "invalid_request", code: "invalid_request", message: expect.any(String), param: null } });
  });
});

describe("upstream failover and failure", () => {
  it("tries the next upstream on 500, 429 and a hang before the first byte", async () => {
    for (const first of [fail(500), fail(429), hang()]) {
      primary.reset().next(first);
      secondary.reset().next(reply(completion("from the second")));
      const result = await client.chat.completions.create({ model: "project-zero", messages });
      expect(result.choices[0]!.message.content).toBe("from the second");
      expect(primary.requests).toHaveLength(1);
      expect(secondary.requests).toHaveLength(1);
    }
  });

  it("logs each upstream failure with the request's id: failed attempts, streamed or not, a refusal and an answer that broke off", async () => {
    const linesOf = (requestId: string) => app.logs.filter((line) => line.includes(`"requestId":"${requestId}"`));
    for (const streamed of [false, true]) {
      const requestId = `attempts-${streamed}`;
      primary.next(fail(500));
      const response = await postChat(app, apiKey, { model: "project-zero", messages, stream: streamed }, { "x-request-id": requestId });
      expect(response.status).toBe(200);
      await response.text();
      // The dead first upstream, then the primary's 500.
      expect(
        linesOf(requestId).some((line) => line.includes("upstream attempt failed")),
        requestId,
      ).toBe(true);
      expect(
        linesOf(requestId).some((line) => line.includes("upstream attempt refused")),
        requestId,
      ).toBe(true);
    }
    primary.next(fail(400, "no such parameter at SecretCo"));
    expect((await postChat(app, apiKey, { model: "project-zero", messages }, { "x-request-id": "refused-1" })).status).toBe(400);
    expect(linesOf("refused-1").find((line) => line.includes("upstream refused the request"))).toContain("no such parameter at SecretCo");
    primary.next(stream(textChunks(["one", "two"]), { dropAfter: 1 }));
    await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }, { "x-request-id": "broke-1" }));
    expect(linesOf("broke-1").some((line) => line.includes("upstream answer failed after it began"))).toBe(true);
  });

  it("502 upstream_error when every upstream fails, without naming any", async () => {
    primary.otherwise(fail(503));
    secondary.otherwise(fail(500));
    const response = await postChat(app, apiKey, { model: "project-zero", messages });
    expect(response.status).toBe(502);
    const text = await response.text();
    expect(JSON.parse(text).error.type).toBe("upstream_error");
    expectNoLeak(response.headers, text);
  });

  it("tries the next upstream when one answers 200 with something that is not a completion, or breaks off its answer", async () => {
    const maintenancePage: Behavior = ({ res }) => void res.writeHead(200, { "content-type": "text/html" }).end("<html>down for maintenance</html>");
    const proxyJson: Behavior = reply({ status: "ok" });
    const cutShort: Behavior = ({ res }) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "500" });
      res.write('{"id":"x","choices":[');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    for (const first of [maintenancePage, proxyJson, cutShort]) {
      primary.reset().next(first);
      secondary.reset().next(reply(completion("from the second")));
      const result = await client.chat.completions.create({ model: "project-zero", messages });
      expect(result.choices[0]!.message.content).toBe("from the second");
      expect([primary.requests.length, secondary.requests.length]).toEqual([1, 1]);
    }
  });

  it("502 upstream_error for a 2xx that is not JSON (a proxy's maintenance page) from every upstream, said as such and not as a broken connection", async () => {
    for (const upstream of [primary, secondary]) {
      upstream.next(({ res }) => void res.writeHead(200, { "content-type": "text/html" }).end("<html>down for maintenance</html>"));
    }
    const response = await postChat(app, apiKey, { model: "project-zero", messages });
    expect(response.status).toBe(502);
    const text = await response.text();
    expect(JSON.parse(text).error).toMatchObject({ type: "upstream_error", message: "the model returned an answer that is not JSON" });
    expectNoLeak(response.headers, text);
  });

  it("502 with Retry-After when every upstream is rate limiting, so SDKs back off instead of asking again at once", async () => {
    primary.next(reply({ error: { message: "slow down at SecretCo" } }, 429, { "retry-after": "7" }));
    secondary.next(reply({ error: { message: "slow down" } }, 429, { "retry-after": "3" }));
    const response = await postChat(app, apiKey, { model: "project-zero", messages });
    expect(response.status).toBe(502);
    expect(response.headers.get("retry-after")).toBe("7");
    const text = await response.text();
    expect(JSON.parse(text).error).toMatchObject({ type: "upstream_error", message: "the model is busy right now; try again in 7 s" });
    expectNoLeak(response.headers, text);
    // Not when one of them failed otherwise: then nothing says waiting helps.
    primary.next(fail(500));
    secondary.next(reply({ error: { message: "slow down" } }, 429, { "retry-after": "3" }));
    const mixed = await postChat(app, apiKey, { model: "project-zero", messages });
    expect(mixed.status).toBe(502);
    expect(mixed.headers.get("retry-after")).toBeNull();
  });

  it("passes on at most a minute of an upstream's Retry-After, read as seconds or as a date", async () => {
    const advised = async (retryAfter: string) => {
      primary.next(reply({ error: { message: "slow down" } }, 429, { "retry-after": retryAfter }));
      secondary.next(reply({ error: { message: "slow down" } }, 429, { "retry-after": retryAfter }));
      const response = await postChat(app, apiKey, { model: "project-zero", messages });
      await response.text();
      return Number(response.headers.get("retry-after"));
    };
    expect(await advised("3600")).toBe(60);
    expect(await advised(new Date(Date.now() + 10_000).toUTCString())).toBeGreaterThanOrEqual(8);
    expect(await advised(new Date(Date.now() + 10_000).toUTCString())).toBeLessThanOrEqual(11);
    expect(await advised("soon")).toBe(1);
  });

  it("504 upstream_timeout when every upstream hangs", async () => {
    primary.otherwise(hang());
    secondary.otherwise(hang());
    const error = await client.chat.completions.create({ model: "project-zero", messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("upstream_timeout");
  });

  it("an upstream 400 is the request's fault: passed on in our words, the next upstream not tried", async () => {
    primary.next(fail(400, `Invalid value for 'messages' with ${UPSTREAM_MODEL}`));
    const error = await client.chat.completions.create({ model: "project-zero", messages }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("the model provider refused the request as invalid");
    expect((error as Error).message).not.toContain(UPSTREAM_MODEL);
    expect(secondary.requests).toHaveLength(0);
  });
});

describe("streaming", () => {
  it("relays chunks with our id and model, usage intact, ended by [DONE]", async () => {
    primary.next(stream(textChunks(["Hel", "lo", "!"])));
    const response = await postChat(app, apiKey, { model: "project-zero", messages, stream: true, stream_options: { include_usage: true } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = await readSse(response);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { id: string; model: string; choices: { delta: { content?: string } }[]; usage?: unknown });
    expect(chunks).toHaveLength(6);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.id).toMatch(/^chatcmpl-/);
    expect(chunks.every((c) => c.model === "project-zero")).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Hello!");
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 });
    expect(primary.requests[0]!.body).toMatchObject({ model: UPSTREAM_MODEL, stream: true, stream_options: { include_usage: true } });
    expectNoLeak(response.headers, events.join("\n"));
  });

  it("works with the SDK's streaming iterator, tool-call deltas intact", async () => {
    primary.next(
      stream([
        chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "lookup", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"zero"}' } }] }),
        chunk({}, "tool_calls"),
      ]),
    );
    const chunks = await client.chat.completions.create({
      model: "project-zero",
      messages,
      stream: true,
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }],
    });
    let args = "";
    let name = "";
    let finish: string | null = null;
    for await (const part of chunks) {
      expect(part.model).toBe("project-zero");
      const delta = part.choices[0]?.delta;
      name ||= delta?.tool_calls?.[0]?.function?.name ?? "";
      args += delta?.tool_calls?.[0]?.function?.arguments ?? "";
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe("lookup");
    expect(JSON.parse(args)).toEqual({ q: "zero" });
    expect(finish).toBe("tool_calls");
  });

  it("fails over before the first byte, then streams from the next upstream", async () => {
    primary.next(fail(500));
    secondary.next(stream(textChunks(["ok"])));
    const events = await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }));
    expect(events.at(-1)).toBe("[DONE]");
    expect(events.some((e) => e.includes('"content":"ok"'))).toBe(true);
  });

  it("a refusal after commit is one error event, then [DONE]", async () => {
    const response = await postChat(app, apiKey, { model: "gpt-4o", messages, stream: true });
    expect(response.status).toBe(200);
    const events = await readSse(response);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0]!)).toEqual({
      error: { type: "model_not_found", code: "model_not_found", message: expect.any(String), param: "model" },
    });
    expect(events[1]).toBe("[DONE]");
  });

  it("a mid-stream drop is an upstream_error event after the chunks already sent", async () => {
    primary.next(stream(textChunks(["one", "two", "three"]), { dropAfter: 2 }));
    const response = await postChat(app, apiKey, { model: "project-zero", messages, stream: true });
    expect(response.status).toBe(200);
    const events = await readSse(response);
    expect(events).toHaveLength(4);
    expect(JSON.parse(events[1]!).choices[0].delta.content).toBe("one");
    expect(JSON.parse(events[2]!).error.type).toBe("upstream_error");
    expect(events[3]).toBe("[DONE]");
    // Past the first byte nothing is retried: the client already has part of an answer.
    expect(secondary.requests).toHaveLength(0);
  });

  it("chunks that arrive in one read with an upstream's error event are sent before the error, and none after it", async () => {
    const [first, second, third] = textChunks(["one", "two", "three"]);
    // One write, so the gateway reads the chunks and the error together.
    primary.next(({ res }) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const events = [first, second, { error: { message: "overloaded at SecretCo" } }, third].map((event) => `data: ${JSON.stringify(event)}\n\n`);
      res.end(`${events.join("")}data: [DONE]\n\n`);
    });
    const response = await postChat(app, apiKey, { model: "project-zero", messages, stream: true });
    const events = await readSse(response);
    expect(events.map((event) => (event === "[DONE]" ? event : (JSON.parse(event).choices?.[0]?.delta?.content ?? JSON.parse(event).error?.type)))).toEqual([
      "",
      "one",
      "upstream_error",
      "[DONE]",
    ]);
    expect(events.join("")).not.toContain("SecretCo");
  });

  it("a silent upstream mid-stream is an upstream_timeout event", async () => {
    primary.next(stream(textChunks(["one", "two"]), { hangAfter: 2 }));
    const events = await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }));
    expect(JSON.parse(events.at(-2)!).error.type).toBe("upstream_timeout");
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("a stream that ends without [DONE] before it finished is reported, not passed off as complete", async () => {
    // Cut before its finish_reason: one that ends after it is whole (servers that never send [DONE]).
    primary.next(stream(textChunks(["cut"]).slice(0, -2), { done: false }));
    const events = await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }));
    expect(JSON.parse(events.at(-2)!).error.type).toBe("upstream_error");
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("a failure after the first byte is counted by kind in zero_upstream_errors_total and logged once, as earlier failures are", async () => {
    const errorsOfKind = async (kind: string) => {
      const text = await (await fetch(`${app.url}/metrics`)).text();
      const lines = text.split("\n").filter((line) => line.startsWith("zero_upstream_errors_total{") && line.includes(`kind="${kind}"`));
      return lines.reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
    };
    const brokeLines = () => app.logs.filter((line) => line.includes("upstream answer failed after it began")).length;
    const [streamBefore, timeoutBefore, logsBefore] = [await errorsOfKind("stream"), await errorsOfKind("timeout"), brokeLines()];
    primary.next(
      stream(textChunks(["one", "two", "three"]), { dropAfter: 2 }),
      stream(textChunks(["cut"]).slice(0, -2), { done: false }),
      reply({ not: "a completion" }),
      stream(textChunks(["one", "two"]), { hangAfter: 2 }),
    );
    // The non-streamed call fails over to the second upstream, which fails the same way.
    secondary.next(reply({ not: "a completion either" }));
    await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }));
    await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }));
    expect((await postChat(app, apiKey, { model: "project-zero", messages })).status).toBe(502);
    await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }));
    expect(await errorsOfKind("stream")).toBe(streamBefore + 4);
    expect(await errorsOfKind("timeout")).toBe(timeoutBefore + 1);
    expect(brokeLines()).toBe(logsBefore + 5);
  });

  it("the SDK raises the in-stream error event", async () => {
    primary.otherwise(fail(500));
    secondary.otherwise(fail(500));
    const chunks = await client.chat.completions.create({ model: "project-zero", messages, stream: true });
    const error = await (async () => {
      for await (const _ of chunks) {
        // drain
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/unavailable/);
  });
});

describe("client disconnect", () => {
  it("aborts the upstream stream at once, long before its four seconds are over", async () => {
    primary.next(stream(textChunks(Array.from({ length: 200 }, (_, i) => `w${i} `)), { delayMs: 20 }));
    const abort = new AbortController();
    const response = await postChat(app, apiKey, { model: "project-zero", messages, stream: true }, {}, abort.signal);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("data: ");
    const hungUpAt = performance.now();
    abort.abort();
    const upstreamClosedAt = await primary.requests[0]!.aborted;
    // A bound far from a scheduler's hiccup under load, and far below the stream's natural end.
    expect(upstreamClosedAt - hungUpAt).toBeLessThan(1000);
  });

  it("aborts the upstream stream when an HTTP/2 client resets its stream (the connection stays open)", async () => {
    primary.next(stream(textChunks(Array.from({ length: 200 }, (_, i) => `w${i} `)), { delayMs: 20 }));
    const session = http2.connect(app.url);
    try {
      const req = session.request({
        ":method": "POST",
        ":path": "/v1/chat/completions",
        "content-type": "application/json",
        authorization: `Bearer ${apiKey}`,
      });
      req.end(JSON.stringify({ model: "project-zero", messages, stream: true }));
      await new Promise<void>((resolve) => req.once("data", () => resolve()));
      req.close(http2.constants.NGHTTP2_CANCEL);
      const outcome = await Promise.race([primary.requests[0]!.aborted.then(() => "aborted"), new Promise((r) => setTimeout(() => r("still running"), 2000))]);
      expect(outcome).toBe("aborted");
    } finally {
      session.close();
    }
  });

  it("counts a stream whose client left before its first event as aborted, not as the 200 it never got", async () => {
    primary.next(hang());
    const counted = await leaveBeforeTheAnswer(app, apiKey, "/v1/chat/completions", { model: "project-zero", messages, stream: true }, primary);
    expect(counted).toEqual({ aborted: 1, ok: 0 });
  });

  it("aborts a non-streaming upstream request at once", async () => {
    primary.next(hang());
    const abort = new AbortController();
    const pending = postChat(app, apiKey, { model: "project-zero", messages }, {}, abort.signal).catch(() => undefined);
    while (primary.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    const hungUpAt = performance.now();
    abort.abort();
    const upstreamClosedAt = await primary.requests[0]!.aborted;
    // A bound far from a scheduler's hiccup under load, and far below the stream's natural end.
    expect(upstreamClosedAt - hungUpAt).toBeLessThan(1000);
    await pending;
    expect(secondary.requests).toHaveLength(0);
  });
});
