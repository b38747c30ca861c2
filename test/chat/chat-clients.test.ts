import * as grpc from "@grpc/grpc-js";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText } from "ai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatCompletionChunkSchema, ChatCompletionSchema, ChatService, type StreamChatCompletionResponse } from "../../gen/zero/v1/chat_pb.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { grpcJsClient, grpcJsServerStream } from "../support/grpc-js.js";
import { completion, FakeUpstream, reply, stream, textChunks, UPSTREAM_MODEL } from "./support/fake-upstream.js";
import { postChat, startGateway } from "./support/gateway.js";

let upstream: FakeUpstream;
let app: TestApp;
let apiKey: string;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  app = await startGateway([upstream]);
  ({ apiKey } = await createAccountWithKey(app, ["chat"]));
});

afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

beforeEach(() => {
  upstream.reset();
});

describe("the Vercel AI SDK (ai + @ai-sdk/openai-compatible)", () => {
  it("streams text with streamText, usage included", async () => {
    upstream.next(stream(textChunks(["Stream", "ing ", "works"])));
    const provider = createOpenAICompatible({ name: "zero", baseURL: `${app.url}/v1`, apiKey, includeUsage: true });
    const result = streamText({ model: provider.chatModel("project-zero"), prompt: "Say it", maxRetries: 0 });
    expect(await result.text).toBe("Streaming works");
    const usage = await result.usage;
    expect(usage.inputTokens).toBe(5);
    expect(usage.outputTokens).toBe(3);
    expect(upstream.requests[0]!.body).toMatchObject({ model: UPSTREAM_MODEL, stream: true, stream_options: { include_usage: true } });
  });
});

describe("ChatService over gRPC", () => {
  const params = { model: "project-zero", messages: [{ role: "user", content: { kind: { case: "stringValue" as const, value: "Hi" } } }] };

  it("streams chunks to a stock grpc-js client", async () => {
    upstream.next(stream(textChunks(["g", "R", "PC"])));
    const client = grpcJsClient(app.url);
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${apiKey}`);
    const call = grpcJsServerStream(client, ChatService.method.streamChatCompletion, { params }, metadata);
    const received: StreamChatCompletionResponse[] = [];
    for await (const message of call as AsyncIterable<StreamChatCompletionResponse>) received.push(message);
    client.close();
    const chunks = received.map(
      (m) =>
        toJson(ChatCompletionChunkSchema, m.chunk!, { alwaysEmitImplicit: true }) as { model: string; id: string; choices: { delta: { content?: string } }[] },
    );
    expect(chunks.every((c) => c.model === "project-zero" && c.id.startsWith("chatcmpl-"))).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("gRPC");
    expect(upstream.requests[0]!.body).toMatchObject({ model: UPSTREAM_MODEL, stream: true, messages: [{ role: "user", content: "Hi" }] });
  });

  it("ends a stream that breaks mid-way with an error status, after the chunks already sent", async () => {
    upstream.next(stream(textChunks(["a", "b", "c"]), { dropAfter: 2 }));
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: app.url }));
    const received: string[] = [];
    const error = await (async () => {
      for await (const message of client.streamChatCompletion({ params }, { headers: { authorization: `Bearer ${apiKey}` } })) {
        received.push(JSON.stringify(toJson(ChatCompletionChunkSchema, message.chunk!)));
      }
    })().catch((e: unknown) => e);
    expect(received.length).toBe(2);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unavailable);
  });

  it("a cancelled stream aborts the upstream request at once, long before its four seconds are over", async () => {
    upstream.next(stream(textChunks(Array.from({ length: 200 }, (_, i) => `w${i} `)), { delayMs: 20 }));
    const abort = new AbortController();
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: app.url }));
    const messages = client.streamChatCompletion({ params }, { headers: { authorization: `Bearer ${apiKey}` }, signal: abort.signal });
    const iterator = messages[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    const cancelledAt = performance.now();
    abort.abort();
    await iterator.next().catch(() => undefined);
    const upstreamClosedAt = await upstream.requests[0]!.aborted;
    expect(upstreamClosedAt - cancelledAt).toBeLessThan(1000);
  });

  it("answers unary completions whose JSON form is OpenAI's, and refuses other models with NotFound", async () => {
    upstream.next(reply(completion("unary answer")));
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: app.url }));
    const headers = { authorization: `Bearer ${apiKey}` };
    const { completion: result } = await client.createChatCompletion({ params }, { headers });
    expect(toJson(ChatCompletionSchema, result!, { alwaysEmitImplicit: true })).toMatchObject({
      object: "chat.completion",
      model: "project-zero",
      choices: [{ index: 0, message: { role: "assistant", content: "unary answer" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
    });

    const refused = await client.createChatCompletion({ params: { ...params, model: "gpt-4o" } }, { headers }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.NotFound);

    const noKey = await client.createChatCompletion({ params }).catch((e: unknown) => e);
    expect((noKey as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("replays a unary request with the same idempotency key, and says so in a header", async () => {
    upstream.next(reply(completion("once")));
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: app.url }));
    const headers = { authorization: `Bearer ${apiKey}` };
    const first = await client.createChatCompletion({ params, idempotencyKey: "grpc-key" }, { headers });
    let replayed: string | null = null;
    const second = await client.createChatCompletion(
      { params, idempotencyKey: "grpc-key" },
      { headers, onHeader: (h) => (replayed = h.get("idempotent-replayed")) },
    );
    expect(second.completion!.id).toBe(first.completion!.id);
    expect(replayed).toBe("true");
    expect(upstream.requests).toHaveLength(1);
  });
});

describe("capabilities", () => {
  it("report the alias and that chat is available when an upstream is configured", async () => {
    const response = await fetch(`${app.url}/api/capabilities`);
    const body = (await response.json()) as { chat: { model: string; available: boolean } };
    expect(body.chat).toMatchObject({ model: "project-zero", available: true });
  });

  it("report chat unavailable without an upstream, and the route says so (503)", async () => {
    const bare = await startTestApp();
    try {
      const body = (await (await fetch(`${bare.url}/api/capabilities`)).json()) as { chat: { available: boolean } };
      expect(body.chat.available).toBe(false);
      const { apiKey: key } = await createAccountWithKey(bare, ["chat"]);
      const response = await postChat(bare, key, { model: "project-zero", messages: [{ role: "user", content: "hi" }] });
      expect(response.status).toBe(503);
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe("unavailable");
    } finally {
      await bare.close();
    }
  });
});
