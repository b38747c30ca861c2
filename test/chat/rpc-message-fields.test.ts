import { fromJson, type JsonObject, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { ChatCompletionChunkSchema, ChatCompletionParamsSchema, ChatCompletionSchema, ChatService } from "../../gen/zero/v1/chat_pb.js";
import { PROTOCOLS, rpcTransport } from "../support/transports.js";
import { chunk, completion, reply, stream, ownId } from "./support/fake-upstream.js";
import { useSdkGateway } from "./support/gateway.js";

// OpenAI's message fields with no typed field in ChatMessage or ToolCall travel in their `extra`, both ways, as REST passes them.
describe("ChatService message fields with no typed home", () => {
  const gateway = useSdkGateway();
  let headers: Record<string, string>;
  beforeAll(() => {
    headers = { authorization: `Bearer ${gateway.apiKey}` };
  });

  async function restChat(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const response = await fetch(`${gateway.app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  }

  // A conversation an agent sends back: an audio answer, a legacy function call, a custom tool call.
  const conversation: JsonObject[] = [
    { role: "user", content: "say hi" },
    { role: "assistant", content: null, audio: { id: "audio_abc123" } },
    { role: "user", content: "look it up" },
    { role: "assistant", content: null, function_call: { name: "lookup", arguments: "{}" } },
    { role: "function", name: "lookup", content: "42" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "custom", custom: { name: "grep", input: "needle" } }] },
    { role: "tool", tool_call_id: "call_1", content: "found" },
  ];
  const asTyped: JsonObject[] = [
    { role: "user", content: "say hi" },
    { role: "assistant", content: null, extra: { audio: { id: "audio_abc123" } } },
    { role: "user", content: "look it up" },
    { role: "assistant", content: null, extra: { function_call: { name: "lookup", arguments: "{}" } } },
    { role: "function", name: "lookup", content: "42" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "custom", extra: { custom: { name: "grep", input: "needle" } } }] },
    { role: "tool", tool_call_id: "call_1", content: "found" },
  ];

  it.each(PROTOCOLS)("passes a message's fields with no typed home to the upstream as REST does, over %s", async (name) => {
    gateway.upstream.next(reply(completion("ok")), reply(completion("ok")));
    await restChat({ model: "project-zero", messages: conversation });
    const client = createClient(ChatService, rpcTransport(gateway.app.url, name));
    await client.createChatCompletion({ params: fromJson(ChatCompletionParamsSchema, { model: "project-zero", messages: asTyped }) }, { headers });
    const [viaRest, viaRpc] = gateway.upstream.requests;
    expect(viaRest!.body.messages).toEqual(conversation);
    expect(viaRpc!.body.messages).toEqual(viaRest!.body.messages);
  });

  it("gives a binary client an answer's message fields with no typed home, as REST answers them", async () => {
    const message = {
      role: "assistant",
      content: "hi",
      refusal: null,
      annotations: [{ type: "url_citation", url_citation: { url: "https://example.com", title: "Example", start_index: 0, end_index: 2 } }],
      audio: { id: "audio_abc123", data: "UklGRg==", expires_at: 1_763_003_600, transcript: "hi" },
      function_call: { name: "lookup", arguments: "{}" },
      tool_calls: [{ id: "call_1", type: "custom", custom: { name: "grep", input: "needle" } }],
    };
    const answer = completion("hi", { choices: [{ index: 0, message, logprobs: null, finish_reason: "stop" }] });
    gateway.upstream.next(reply(answer), reply(answer));
    const restMessage = ((await restChat({ model: "project-zero", messages: conversation.slice(0, 1) })).choices as { message: Record<string, unknown> }[])[0]!
      .message;
    const client = createClient(ChatService, rpcTransport(gateway.app.url, "grpc"));
    const { completion: typed } = await client.createChatCompletion(
      { params: fromJson(ChatCompletionParamsSchema, { model: "project-zero", messages: asTyped.slice(0, 1) }) },
      { headers },
    );
    const { annotations, audio, function_call, tool_calls } = restMessage;
    expect(toJson(ChatCompletionSchema, typed!)).toMatchObject({
      choices: [
        {
          message: {
            content: "hi",
            extra: { annotations, audio, function_call },
            tool_calls: [{ id: ownId("call_1"), type: "custom", extra: { custom: (tool_calls as { custom: unknown }[])[0]!.custom } }],
          },
        },
      ],
    });
    expect(audio).toEqual(message.audio);
  });

  it("gives a binary client a chunk's delta fields with no typed home", async () => {
    gateway.upstream.next(stream([chunk({ role: "assistant", content: "" }), chunk({ audio: { id: "audio_abc123", transcript: "hi" } }), chunk({}, "stop")]));
    const client = createClient(ChatService, rpcTransport(gateway.app.url, "grpc"));
    const deltas: unknown[] = [];
    for await (const { chunk: typed } of client.streamChatCompletion(
      { params: fromJson(ChatCompletionParamsSchema, { model: "project-zero", messages: asTyped.slice(0, 1) }) },
      { headers },
    )) {
      deltas.push(...(toJson(ChatCompletionChunkSchema, typed!) as { choices: { delta: unknown }[] }).choices.map((choice) => choice.delta));
    }
    expect(deltas).toContainEqual({ extra: { audio: { id: "audio_abc123", transcript: "hi" } } });
  });
});
