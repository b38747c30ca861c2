import { fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatCompletionParamsSchema, ChatService, CreateChatCompletionResponseSchema } from "../../gen/zero/v1/chat_pb.js";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { rpcTransport } from "../support/transports.js";
import { chunk, completion, FakeUpstream, held, reply, stream, textChunks } from "./support/fake-upstream.js";
import { readSse, startGateway } from "./support/gateway.js";

// The JSON form of ChatService's answers is the OpenAI wire form: for the same upstream answer,
// the `completion` / `chunk` object holds what `POST /v1/chat/completions` answers, key for key,
// empty arrays and nulls included. The binary form stays the typed messages.
//
// protobuf-es's toJson (which Connect-ES writes the JSON form with) writes no empty list and no null,
// and drops fields the messages do not model; so the service gives the REST JSON of each message for
// JSON clients (jsonAnswersKey), and the Connect adapter sends it in the message's place.
describe("ChatService JSON form is the REST route's", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let authorization: string;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    // Upstream timeouts past the heartbeats' test: a model slow to its first chunk for seconds.
    app = await startGateway([upstream], { ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "10000", ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "10000" });
    authorization = `Bearer ${(await createAccountWithKey(app, ["chat"])).apiKey}`;
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  const body = { model: "project-zero", messages: [{ role: "user", content: "hi" }] };

  /** An answer with OpenAI's nulls, empty arrays and fields the messages do not model. */
  const richCompletion = () =>
    completion("ok", {
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "ok", refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: {
        prompt_tokens: 9,
        completion_tokens: 3,
        total_tokens: 12,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    });

  async function restCompletion(): Promise<Record<string, unknown>> {
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  }

  async function restChunks(): Promise<Record<string, unknown>[]> {
    const res = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    });
    expect(res.status).toBe(200);
    const data = await readSse(res);
    expect(data.at(-1)).toBe("[DONE]");
    return data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>);
  }

  /** Connect unary, JSON: the raw body a browser or curl sees. */
  async function connectCompletion(headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
    const res = await fetch(`${app.url}/zero.v1.ChatService/CreateChatCompletion`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json", "connect-protocol-version": "1", ...headers },
      body: JSON.stringify({ params: body }),
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { completion: Record<string, unknown> };
    expect(Object.keys(json)).toEqual(["completion"]);
    return json.completion;
  }

  /** Connect server streaming, JSON: each envelope's message, raw; the end-of-stream envelope must carry no error. */
  async function connectChunks(headers: Record<string, string> = {}): Promise<Record<string, unknown>[]> {
    const payload = Buffer.from(JSON.stringify({ params: { ...body, stream_options: { include_usage: true } } }));
    const envelope = Buffer.alloc(5 + payload.length);
    envelope.writeUInt32BE(payload.length, 1);
    payload.copy(envelope, 5);
    const res = await fetch(`${app.url}/zero.v1.ChatService/StreamChatCompletion`, {
      method: "POST",
      headers: { authorization, "content-type": "application/connect+json", "connect-protocol-version": "1", ...headers },
      body: envelope,
    });
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    const messages: Record<string, unknown>[] = [];
    let end: unknown;
    for (let at = 0; at < bytes.length; ) {
      const flags = bytes[at]!;
      const length = bytes.readUInt32BE(at + 1);
      const json = JSON.parse(bytes.subarray(at + 5, at + 5 + length).toString("utf8")) as Record<string, unknown>;
      if (flags & 0b10) end = json;
      else messages.push(json);
      at += 5 + length;
    }
    expect(end).toEqual({});
    return messages.map((message) => {
      expect(Object.keys(message)).toEqual(["chunk"]);
      return message.chunk as Record<string, unknown>;
    });
  }

  /** Generated ids differ per request, and `created` is the gateway's clock: compared by shape, not value. */
  function comparable(answer: Record<string, unknown>): Record<string, unknown> {
    // Each answer gives its tool calls ids of its own; the provider's is the same inside each.
    return {
      ...(JSON.parse(JSON.stringify(answer).replace(/__pz[0-9a-f]{12}/g, "")) as Record<string, unknown>),
      id: typeof answer.id,
      created: typeof answer.created,
    };
  }

  it("answers a completion over Connect JSON with every field the REST route sends", async () => {
    upstream.next(reply(richCompletion()), reply(richCompletion()));
    const rest = await restCompletion();
    const rpc = await connectCompletion();
    // What the tester found missing, stated on its own: OpenAI's nulls and empty arrays.
    expect(rest).toMatchObject({ choices: [{ message: { refusal: null, annotations: [] }, logprobs: null }] });
    expect(comparable(rpc)).toEqual(comparable(rest));
  });

  it("answers a tool call over Connect JSON as the REST route does (content null, no refusal key invented)", async () => {
    const toolCall = () =>
      completion(null, {
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }],
            },
            logprobs: null,
            finish_reason: "tool_calls",
          },
        ],
      });
    upstream.next(reply(toolCall()), reply(toolCall()));
    const rest = await restCompletion();
    const rpc = await connectCompletion();
    expect(comparable(rpc)).toEqual(comparable(rest));
  });

  it("streams over Connect JSON the chunks the REST route sends: `finish_reason: null`, and `choices: []` beside the usage", async () => {
    const chunks = () => [
      chunk({ role: "assistant", content: "", refusal: null }),
      chunk({ content: "Hi" }),
      chunk({ content: " there" }),
      chunk({}, "stop"),
      { ...chunk({}), choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
    ];
    upstream.next(stream(chunks()), stream(chunks()));
    const rest = await restChunks();
    const rpc = await connectChunks();
    expect(rest.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: 7 } });
    expect(rest[1]).toMatchObject({ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] });
    expect(rpc.map(comparable)).toEqual(rest.map(comparable));
    // Client code written for OpenAI reads `choices[0]?.delta` of every chunk: the usage chunk's empty list must be there.
    expect(rpc.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: 7 } });
  });

  it("with heartbeat_seconds, sends `{}` while the model is slow, then the chunks in the REST form; past 300 it is refused", async () => {
    const chunks = () => [chunk({ role: "assistant", content: "" }), chunk({ content: "Hi" }), chunk({}, "stop")];
    const slow = held(stream(chunks()));
    upstream.next(stream(chunks()), slow.behavior);
    const rest = await restChunks();
    const call = (heartbeatSeconds: number) => {
      const payload = Buffer.from(JSON.stringify({ params: body, heartbeat_seconds: heartbeatSeconds }));
      const envelope = Buffer.alloc(5 + payload.length);
      envelope.writeUInt32BE(payload.length, 1);
      payload.copy(envelope, 5);
      return fetch(`${app.url}/zero.v1.ChatService/StreamChatCompletion`, {
        method: "POST",
        headers: { authorization, "content-type": "application/connect+json", "connect-protocol-version": "1" },
        body: envelope,
      });
    };
    const answered = call(1).then(async (res) => Buffer.from(await res.arrayBuffer()));
    setTimeout(slow.release, 2500);
    const bytes = await answered;
    const envelopes: { flags: number; json: Record<string, unknown> }[] = [];
    for (let at = 0; at < bytes.length; at += 5 + bytes.readUInt32BE(at + 1)) {
      envelopes.push({ flags: bytes[at]!, json: JSON.parse(bytes.subarray(at + 5, at + 5 + bytes.readUInt32BE(at + 1)).toString("utf8")) });
    }
    expect(envelopes.at(-1)).toEqual({ flags: 0b10, json: {} });
    const messages = envelopes.slice(0, -1).map((e) => e.json);
    // One heartbeat after each quiet second, then every chunk as REST sent it.
    expect(messages.slice(0, 2)).toEqual([{}, {}]);
    const streamed = messages.filter((m) => "chunk" in m);
    expect(messages.slice(messages.length - streamed.length)).toEqual(streamed);
    expect(streamed.map((m) => comparable(m.chunk as Record<string, unknown>))).toEqual(rest.map(comparable));

    const refused = await call(301);
    const end = Buffer.from(await refused.arrayBuffer());
    expect(JSON.parse(end.subarray(5).toString("utf8"))).toMatchObject({
      error: { code: "invalid_argument", message: "heartbeat_seconds must be at most 300" },
    });
    expect(upstream.requests).toHaveLength(2);
  });

  it("keeps the REST form for a client that accepts compression, as every browser does, on answers long enough to be compressed", async () => {
    const long = "x".repeat(4000);
    const longCompletion = () => {
      const answer = richCompletion() as { choices: { message: { content: string } }[] };
      answer.choices[0]!.message.content = long;
      return answer;
    };
    upstream.next(reply(longCompletion()), reply(longCompletion()));
    const rest = await restCompletion();
    const rpc = await connectCompletion({ "accept-encoding": "gzip, br" });
    expect(rest).toMatchObject({ choices: [{ message: { content: long, refusal: null, annotations: [] }, logprobs: null }] });
    expect(comparable(rpc)).toEqual(comparable(rest));
    const longChunks = () => [chunk({ role: "assistant", content: "" }), chunk({ content: long }), chunk({ content: long }), chunk({}, "stop")];
    upstream.next(stream(longChunks()));
    const streamed = await connectChunks({ "connect-accept-encoding": "gzip" });
    expect(streamed.map((c) => (c.choices as { finish_reason: unknown }[])[0]!.finish_reason)).toEqual([null, null, null, "stop"]);
  });

  it("reads a compressed request, as gRPC and Connect clients may send one, and still answers in the REST form", async () => {
    upstream.next(reply(richCompletion()), reply(richCompletion()));
    const rest = await restCompletion();
    const res = await fetch(`${app.url}/zero.v1.ChatService/CreateChatCompletion`, {
      method: "POST",
      headers: { authorization, "content-type": "application/json", "connect-protocol-version": "1", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify({ params: body })),
    });
    expect(res.status).toBe(200);
    expect(comparable(((await res.json()) as { completion: Record<string, unknown> }).completion)).toEqual(comparable(rest));
  });

  it("keeps the binary form typed: a gRPC client reads the same text, finish reason and usage", async () => {
    upstream.next(reply(richCompletion()), stream(textChunks(["Hi", " there"])));
    const client = createClient(ChatService, rpcTransport(app.url, "grpc"));
    const { completion: answer } = await client.createChatCompletion(
      { params: fromJson(ChatCompletionParamsSchema, body) },
      {
        headers: { authorization },
      },
    );
    expect(answer?.choices[0]?.index).toBe(0);
    expect(answer?.choices[0]?.message?.content).toEqual({ kind: { case: "stringValue", value: "ok" }, $typeName: "google.protobuf.Value" });
    expect(answer?.choices[0]?.finishReason).toBe("stop");
    expect(answer?.usage?.totalTokens).toBe(12);
    // The binary form survives a round trip through the schema (nothing JSON-only rides in it).
    const bytes = toBinary(CreateChatCompletionResponseSchema, { $typeName: "zero.v1.CreateChatCompletionResponse", completion: answer });
    expect(fromBinary(CreateChatCompletionResponseSchema, bytes).completion?.choices[0]?.finishReason).toBe("stop");

    let text = "";
    let finish: string | undefined;
    let usage: number | undefined;
    for await (const { chunk: c } of client.streamChatCompletion(
      { params: fromJson(ChatCompletionParamsSchema, { ...body, stream_options: { include_usage: true } }) },
      { headers: { authorization } },
    )) {
      const content = c?.choices[0]?.delta?.content?.kind;
      if (content?.case === "stringValue") text += content.value;
      finish ??= c?.choices[0]?.finishReason;
      if (c?.usage) usage = c.usage.totalTokens;
    }
    expect(text).toBe("Hi there");
    expect(finish).toBe("stop");
    expect(usage).toBe(7);
  });
});
