import { createClient } from "@connectrpc/connect";
import { sql } from "kysely";
import type OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { rpcTransport } from "../support/transports.js";
import { chunk, completion, FakeUpstream, hang, reply, stream, textChunks, toolCallCompletion, UPSTREAM_MODEL, ownId } from "./support/fake-upstream.js";
import { leaveBeforeTheAnswer, openAiClient, startGateway } from "./support/gateway.js";

// The Responses API, as the official SDK calls it, served over a chat-completions upstream.
describe("POST /v1/responses", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let account: TestAccount;
  let other: TestAccount;
  let client: OpenAI;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    account = await createAccountWithKey(app, ["chat"]);
    other = await createAccountWithKey(app, ["chat"]);
    client = openAiClient(app, account.apiKey);
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  it("answers a string input with a response object, translating instructions and options to chat", async () => {
    upstream.next(reply(completion("Bonjour!")));
    const response = await client.responses.create({
      model: "project-zero",
      instructions: "Answer in French.",
      input: "Say hello",
      max_output_tokens: 50,
      temperature: 0.2,
    });
    expect(response).toMatchObject({ object: "response", status: "completed", model: "project-zero" });
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toBe("Bonjour!");
    expect(response.usage).toMatchObject({ input_tokens: 9, output_tokens: 3, total_tokens: 12 });
    const sent = upstream.requests[0]!.body;
    expect(sent).toMatchObject({
      model: UPSTREAM_MODEL,
      messages: [
        { role: "system", content: "Answer in French." },
        { role: "user", content: "Say hello" },
      ],
      max_completion_tokens: 50,
      temperature: 0.2,
    });
    expect(JSON.stringify(response)).not.toMatch(/secret|SecretCo|upstream-cmpl/i);
  });

  it("runs a function tool round: function_call out, function_call_output back in", async () => {
    upstream.next(reply(toolCallCompletion("get_weather", '{"city":"Paris"}')), reply(completion("It is sunny in Paris.")));
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: "function",
        name: "get_weather",
        description: "Weather",
        parameters: { type: "object", properties: { city: { type: "string" } } },
        strict: false,
      },
    ];
    const first = await client.responses.create({ model: "project-zero", input: "Weather in Paris?", tools });
    const call = first.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}', call_id: ownId("call_abc123") });
    expect(upstream.requests[0]!.body.tools).toEqual([
      {
        type: "function",
        function: { name: "get_weather", description: "Weather", parameters: tools[0]!.type === "function" ? tools[0]!.parameters : {}, strict: false },
      },
    ]);

    const second = await client.responses.create({
      model: "project-zero",
      input: [
        { role: "user", content: "Weather in Paris?" },
        { type: "function_call", call_id: "call_abc123", name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call_output", call_id: "call_abc123", output: '{"sky":"sunny"}' },
      ],
      tools,
    });
    expect(second.output_text).toBe("It is sunny in Paris.");
    expect(upstream.requests[1]!.body.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_abc123", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
      },
      { role: "tool", tool_call_id: "call_abc123", content: '{"sky":"sunny"}' },
    ]);
  });

  it("translates text.format json_schema to response_format", async () => {
    upstream.next(reply(completion('{"name":"Ada"}')));
    const schema = { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false };
    const response = await client.responses.create({
      model: "project-zero",
      input: "Name a pioneer",
      text: { format: { type: "json_schema", name: "person", schema, strict: true } },
    });
    expect(JSON.parse(response.output_text)).toEqual({ name: "Ada" });
    expect(upstream.requests[0]!.body.response_format).toEqual({ type: "json_schema", json_schema: { name: "person", schema, strict: true } });
  });

  it("parses structured output with responses.parse and a zod schema", async () => {
    upstream.next(reply(completion('{"name":"Grace","born":1906}')));
    const parsed = await client.responses.parse({
      model: "project-zero",
      input: "Name a pioneer",
      text: { format: zodTextFormat(z.object({ name: z.string(), born: z.number() }), "person") },
    });
    expect(parsed.output_parsed).toEqual({ name: "Grace", born: 1906 });
    expect(upstream.requests[0]!.body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "person", strict: true } });
  });

  it("stores responses per account: retrieve, continue with previous_response_id, delete", async () => {
    upstream.next(reply(completion("My name is Zero.")), reply(completion("I said: Zero.")));
    const first = await client.responses.create({ model: "project-zero", input: "What is your name?" });
    const again = await client.responses.retrieve(first.id);
    expect(again.id).toBe(first.id);
    expect(again.output_text).toBe("My name is Zero.");

    const next = await client.responses.create({ model: "project-zero", input: "What did you say?", previous_response_id: first.id });
    expect(next.previous_response_id).toBe(first.id);
    expect(upstream.requests[1]!.body.messages).toEqual([
      { role: "user", content: "What is your name?" },
      { role: "assistant", content: "My name is Zero." },
      { role: "user", content: "What did you say?" },
    ]);

    // Another account's id reads exactly like a missing one.
    const stranger = openAiClient(app, other.apiKey);
    await expect(stranger.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.create({ model: "project-zero", input: "hi", previous_response_id: first.id })).rejects.toMatchObject({
      status: 404,
      error: { param: "previous_response_id" },
    });
    await expect(stranger.responses.inputItems.list(first.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.responses.delete(first.id)).rejects.toMatchObject({ status: 404 });
    expect((await client.responses.retrieve(first.id)).output_text).toBe("My name is Zero.");

    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    expect(upstream.requests).toHaveLength(2);
  });

  it("keeps nothing with store: false", async () => {
    upstream.next(reply(completion("ephemeral")));
    const response = await client.responses.create({ model: "project-zero", input: "hi", store: false });
    await expect(client.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 });
  });

  it("streams typed events in OpenAI's order, numbered, and the SDK assembles the text", async () => {
    upstream.next(stream(textChunks(["Hel", "lo"])));
    const events: string[] = [];
    const sequence: number[] = [];
    const responseStream = client.responses.stream({ model: "project-zero", input: "Say hello" });
    for await (const event of responseStream) {
      events.push(event.type);
      sequence.push(event.sequence_number);
    }
    const final = await responseStream.finalResponse();
    expect(final.output_text).toBe("Hello");
    expect(final.usage).toMatchObject({ input_tokens: 5, output_tokens: 2 });
    expect(events).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(sequence).toEqual(events.map((_, i) => i));
    expect(upstream.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("stores a streamed response before response.completed reaches the client, so it can be continued at once", async () => {
    upstream.next(stream(textChunks(["Hel", "lo"])));
    const responseStream = client.responses.stream({ model: "project-zero", input: "Say hello" });
    let retrieved: { id: string; output_text: string } | undefined;
    for await (const event of responseStream) {
      if (event.type === "response.completed") retrieved = await client.responses.retrieve(event.response.id);
    }
    const final = await responseStream.finalResponse();
    expect(retrieved).toMatchObject({ id: final.id, output_text: "Hello" });
  });

  it("streams a function call as output_item and arguments events", async () => {
    upstream.next(
      stream([
        chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "lookup", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] }),
        chunk({}, "tool_calls"),
      ]),
    );
    const types: string[] = [];
    const responseStream = client.responses.stream({
      model: "project-zero",
      input: "look it up",
      tools: [{ type: "function", name: "lookup", parameters: { type: "object", properties: {} }, strict: false }],
    });
    for await (const event of responseStream) types.push(event.type);
    const final = await responseStream.finalResponse();
    expect(final.output).toEqual([
      expect.objectContaining({ type: "function_call", call_id: ownId("call_1"), name: "lookup", arguments: '{"q":"x"}', status: "completed" }),
    ]);
    expect(types).toContain("response.function_call_arguments.delta");
    expect(types.slice(-3)).toEqual(["response.function_call_arguments.done", "response.output_item.done", "response.completed"]);
  });

  it("sends a failure after the stream committed as an error event, which the SDK raises", async () => {
    upstream.next(stream(textChunks(["partial", "more"]), { dropAfter: 2 }));
    const responseStream = client.responses.stream({ model: "project-zero", input: "hi" });
    await expect(
      (async () => {
        for await (const _event of responseStream) {
          // drained until the error event
        }
      })(),
    ).rejects.toThrow(/incomplete/);
  });

  // Found operating the service: a stream whose response could not be stored while the database was away logged
  // "unexpected error" at error level with a stack trace over REST, and nothing at all over RPC.
  it("logs a database outage met while storing a streamed response as the server's one outage warning, over REST and RPC", async () => {
    await sql`create function refuse_response_saves() returns trigger language plpgsql as $$
      begin raise exception 'terminating connection due to administrator command' using errcode = '57P01'; end $$`.execute(app.store.db);
    await sql`create trigger refuse_response_saves before insert on chat_responses for each row execute function refuse_response_saves()`.execute(app.store.db);
    const seen = app.logs.length;
    const rpc = createClient(ChatService, rpcTransport(app.url, "connect"));
    try {
      upstream.next(stream(textChunks(["Hello"])));
      const response = await fetch(`${app.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "project-zero", input: "hi", stream: true }),
      });
      const restEvents = (await response.text())
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => JSON.parse(line.slice(6)) as { type: string; code?: string });
      expect(restEvents.at(-1)).toMatchObject({ type: "error", code: "unavailable" });
      // A readiness check that reaches the database ends the outage the server logged.
      expect((await fetch(`${app.url}/readyz`)).status).toBe(200);

      upstream.next(stream(textChunks(["Hello"])));
      const rpcEvents: { type: string; code?: unknown }[] = [];
      for await (const { type, event } of rpc.streamResponse(
        { params: { model: "project-zero", input: "hi" } },
        { headers: { authorization: `Bearer ${account.apiKey}` } },
      )) {
        rpcEvents.push({ type, code: event?.code });
      }
      expect(rpcEvents.at(-1)).toEqual({ type: "error", code: "unavailable" });
      expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    } finally {
      await sql`drop trigger refuse_response_saves on chat_responses`.execute(app.store.db);
      await sql`drop function refuse_response_saves()`.execute(app.store.db);
    }

    const lines = app.logs.slice(seen).map((line) => JSON.parse(line) as { level: number; msg: string; failures?: number });
    expect(lines.filter((line) => line.msg === "unexpected error")).toEqual([]);
    expect(lines.filter((line) => line.msg.startsWith("reaching the database"))).toEqual([
      expect.objectContaining({ level: 40, msg: "reaching the database failed" }),
      expect.objectContaining({ level: 30, msg: "reaching the database works again", failures: 1 }),
      expect.objectContaining({ level: 40, msg: "reaching the database failed" }),
      expect.objectContaining({ level: 30, msg: "reaching the database works again", failures: 1 }),
    ]);
  });

  it("counts a stream whose client left before its first event as aborted, not as the 200 it never got", async () => {
    upstream.next(hang());
    const counted = await leaveBeforeTheAnswer(app, account.apiKey, "/v1/responses", { model: "project-zero", input: "Hello", stream: true }, upstream);
    expect(counted).toEqual({ aborted: 1, ok: 0 });
  });

  it("refuses hosted tools, malformed input items and other models with OpenAI-shaped 4xx, never a 500", async () => {
    const post = (body: unknown) =>
      fetch(`${app.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const hosted = await post({ model: "project-zero", input: "hi", tools: [{ type: "web_search" }] });
    expect(hosted.status).toBe(400);
    expect(await hosted.json()).toMatchObject({ error: { type: "invalid_request", param: "tools" } });
    const badItem = await post({ model: "project-zero", input: [{ type: "function_call_output" }] });
    expect(badItem.status).toBe(400);
    expect(await badItem.json()).toMatchObject({ error: { param: "input" } });
    const badFormat = await post({ model: "project-zero", input: "hi", text: { format: { type: "json_schema" } } });
    expect(badFormat.status).toBe(400);
    expect(await badFormat.json()).toMatchObject({ error: { param: "text.format" } });
    const otherModel = await post({ model: "gpt-4o", input: "hi" });
    expect(otherModel.status).toBe(404);
    expect(await otherModel.json()).toMatchObject({ error: { code: "model_not_found" } });
    const noKey = await fetch(`${app.url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ error: { code: "invalid_api_key" } });
    expect(upstream.requests).toHaveLength(0);
  });

  it("replays a non-streaming answer for the same Idempotency-Key without a second upstream call", async () => {
    upstream.next(reply(completion("once")));
    const options = { headers: { "Idempotency-Key": "resp-key-1" } };
    const first = await client.responses.create({ model: "project-zero", input: "once?" }, options);
    const second = await client.responses.create({ model: "project-zero", input: "once?" }, options).withResponse();
    expect(second.data.id).toBe(first.id);
    expect(second.response.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.requests).toHaveLength(1);
  });

  it("replays a continuation for its Idempotency-Key after the response it continued (or referred to) was deleted", async () => {
    upstream.next(reply(completion("first")), reply(completion("by id")), reply(completion("by reference")));
    const first = await client.responses.create({ model: "project-zero", input: "begin" });
    const byId = { model: "project-zero", input: "go on", previous_response_id: first.id };
    const byReference = {
      model: "project-zero",
      store: false,
      input: [
        { type: "item_reference" as const, id: first.output[0]!.id! },
        { role: "user" as const, content: "go on" },
      ],
    };
    const continued = await client.responses.create(byId, { headers: { "Idempotency-Key": "continues-deleted" } });
    const referring = await client.responses.create(byReference, { headers: { "Idempotency-Key": "refers-to-deleted" } });
    await client.responses.delete(first.id);
    const replays = [
      await client.responses.create(byId, { headers: { "Idempotency-Key": "continues-deleted" } }).withResponse(),
      await client.responses.create(byReference, { headers: { "Idempotency-Key": "refers-to-deleted" } }).withResponse(),
    ];
    expect(replays.map((replay) => replay.data.id)).toEqual([continued.id, referring.id]);
    for (const replay of replays) expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.requests).toHaveLength(3);
  });

  // Found integrating: a deleted response came back, whole, to a retry with the key that made it.
  it("refuses a retry whose Idempotency-Key made a response since deleted with 409, as a deleted plan's key is; an unstored one still replays", async () => {
    upstream.next(reply(completion("to be forgotten")));
    const options = { headers: { "Idempotency-Key": "resp-key-deleted" } };
    const first = await client.responses.create({ model: "project-zero", input: "forget me" }, options);
    await client.responses.delete(first.id);
    const retried = await fetch(`${app.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json", "idempotency-key": "resp-key-deleted" },
      body: JSON.stringify({ model: "project-zero", input: "forget me" }),
    });
    expect(retried.status).toBe(409);
    const refused = await retried.text();
    expect(JSON.parse(refused)).toMatchObject({ error: { type: "conflict", message: expect.stringContaining(first.id) } });
    expect(refused).not.toContain("to be forgotten");
    // Nor is the answer kept for the key any more: deleting a response deletes every copy the service held.
    const kept = await sql<{ response: string | null }>`SELECT response FROM chat_idempotency_keys WHERE key = 'resp-key-deleted'`.execute(app.store.db);
    expect(kept.rows).toHaveLength(1);
    expect(kept.rows[0]!.response).not.toContain("to be forgotten");

    upstream.next(reply(completion("never kept")));
    const unstored = { headers: { "Idempotency-Key": "resp-key-unstored" } };
    const once = await client.responses.create({ model: "project-zero", input: "keep nothing", store: false }, unstored);
    const again = await client.responses.create({ model: "project-zero", input: "keep nothing", store: false }, unstored).withResponse();
    expect(again.data.id).toBe(once.id);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.requests).toHaveLength(2);
  });

  it("keeps replaying another response's Idempotency-Key when a deleted response's id appears in that response (its metadata)", async () => {
    upstream.next(reply(completion("the first")), reply(completion("the second")));
    const retry = (key: string, body: unknown) =>
      fetch(`${app.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify(body),
      });
    const firstBody = { model: "project-zero", input: "first" };
    const first = await client.responses.create(firstBody, { headers: { "Idempotency-Key": "resp-key-named-first" } });
    const secondBody = { model: "project-zero", input: "second", metadata: { id: first.id } };
    const second = await client.responses.create(secondBody, { headers: { "Idempotency-Key": "resp-key-naming-first" } });
    await client.responses.delete(first.id);

    const replayed = await retry("resp-key-naming-first", secondBody);
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(await replayed.json()).toMatchObject({ id: second.id, output: [{ content: [{ text: "the second" }] }] });
    expect((await retry("resp-key-named-first", firstBody)).status).toBe(409);
    expect(upstream.requests).toHaveLength(2);
  });

  it("answers a method a stored response's routes do not take with 405 and what they take, and a path with no id with 404", async () => {
    const call = (method: string, path: string) => fetch(`${app.url}${path}`, { method, headers: { authorization: `Bearer ${account.apiKey}` } });
    for (const [method, path, allow, message] of [
      ["PUT", "/v1/responses/resp_x", "GET, DELETE", "use GET or DELETE on /v1/responses/{id}"],
      ["GET", "/v1/responses/resp_x/cancel", "POST", "use POST on /v1/responses/{id}/cancel"],
      ["POST", "/v1/responses/resp_x/input_items", "GET", "use GET on /v1/responses/{id}/input_items"],
    ] as const) {
      const refused = await call(method, path);
      expect(refused.status, `${method} ${path}`).toBe(405);
      expect(refused.headers.get("allow")).toBe(allow);
      expect(await refused.json()).toMatchObject({ error: { message } });
    }
    for (const path of ["/v1/responses//cancel", "/v1/responses/a/b", "/v1/responses//input_items"]) {
      const missing = await call("GET", path);
      expect(missing.status, path).toBe(404);
      expect(await missing.json()).toMatchObject({ error: { type: "not_found" } });
    }
  });
});
