import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { chunk, completion, fail, FakeUpstream, reply, stream, type Behavior, type UpstreamRequest } from "./support/fake-upstream.js";
import { openAiClient, postChat, readSse, startGateway, WEATHER_TOOLS } from "./support/gateway.js";

/**
 * A thinking model with tools, as DeepSeek's (and Kimi's) thinking mode
 * serves it: each answer carries `reasoning_content` beside the message, and
 * a request whose history has an assistant turn with tool calls must carry
 * that turn's `reasoning_content` back, or it is a 400. No OpenAI client
 * keeps the field (it is not OpenAI's), and the gateway shows clients only
 * OpenAI's fields; so the gateway keeps it and puts it back.
 */
let toolCallsMade = 0;

function thinkingModel(reasoningPieces = ["The user wants ", "the weather in Paris."]): Behavior {
  return (exchange) => {
    const messages = exchange.body.messages as Record<string, unknown>[];
    const forgotten = messages.findIndex((m) => m.role === "assistant" && Array.isArray(m.tool_calls) && typeof m.reasoning_content !== "string");
    if (forgotten >= 0) {
      return reply(
        {
          error: {
            message: `The reasoning_content in the thinking mode must be passed back to the API. (messages[${forgotten}])`,
            type: "invalid_request_error",
            param: null,
            code: "invalid_request_error",
          },
        },
        400,
      )(exchange);
    }
    const reasoning = reasoningPieces.join("");
    const afterTool = messages.at(-1)?.role === "tool";
    const id = `call_00_${(++toolCallsMade).toString().padStart(6, "0")}`;
    if (exchange.body.stream === true) {
      const chunks = afterTool
        ? [
            chunk({ role: "assistant", content: null, reasoning_content: "" }),
            chunk({ reasoning_content: "Sunny, so say so." }),
            chunk({ content: "It is sunny in Paris." }),
            chunk({}, "stop"),
          ]
        : [
            chunk({ role: "assistant", content: null, reasoning_content: "" }),
            ...reasoningPieces.map((piece) => chunk({ reasoning_content: piece })),
            chunk({ tool_calls: [{ index: 0, id, type: "function", function: { name: "get_weather", arguments: "" } }] }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
            chunk({}, "tool_calls"),
          ];
      return stream(chunks)(exchange);
    }
    const message = afterTool
      ? { role: "assistant", content: "It is sunny in Paris.", reasoning_content: "Sunny, so say so." }
      : {
          role: "assistant",
          content: null,
          reasoning_content: reasoning,
          tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
        };
    return reply(completion(null, { choices: [{ index: 0, message, logprobs: null, finish_reason: afterTool ? "stop" : "tool_calls" }] }))(exchange);
  };
}

const CHAT_TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } },
];

/** The assistant turn an upstream's request carried back, by the id of its first tool call. */
function turnSent(request: UpstreamRequest, callId: string): Record<string, unknown> | undefined {
  return (request.body.messages as Record<string, unknown>[]).find(
    (m) => m.role === "assistant" && Array.isArray(m.tool_calls) && (m.tool_calls as { id: string }[])[0]?.id === callId,
  );
}

describe("a thinking model's reasoning across a tool call", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let apiKey: string;
  let client: OpenAI;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    apiKey = (await createAccountWithKey(app, ["chat"])).apiKey;
    client = openAiClient(app, apiKey);
  });
  afterAll(async () => {
    await app?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    upstream.reset().otherwise(thinkingModel());
  });

  it("chat completions: the second step of a tool loop carries the first step's reasoning back, which the client never saw", async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const first = await client.chat.completions.create({ model: "project-zero", messages, tools: CHAT_TOOLS });
    const call = first.choices[0]!.message.tool_calls![0]!;
    // Only OpenAI's fields reach the client, as before.
    expect(first.choices[0]!.message).not.toHaveProperty("reasoning_content");
    // As OpenAI clients rebuild the turn: its content and calls.
    messages.push({ role: "assistant", content: null, tool_calls: first.choices[0]!.message.tool_calls! });
    messages.push({ role: "tool", tool_call_id: call.id, content: "sunny" });
    const second = await client.chat.completions.create({ model: "project-zero", messages, tools: CHAT_TOOLS });
    expect(second.choices[0]!.message.content).toBe("It is sunny in Paris.");
    expect(turnSent(upstream.requests[1]!, call.id)?.reasoning_content).toBe("The user wants the weather in Paris.");
  });

  it("a streamed step's reasoning, sent in pieces, is carried back whole", async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const events = await readSse(await postChat(app, apiKey, { model: "project-zero", messages, tools: CHAT_TOOLS, stream: true }));
    expect(events.join("\n")).not.toContain("reasoning_content");
    const deltas = events.slice(0, -1).flatMap((e) => (JSON.parse(e) as { choices: { delta: { tool_calls?: { id?: string }[] } }[] }).choices);
    const callId = deltas.flatMap((c) => c.delta.tool_calls ?? []).find((t) => t.id)!.id!;
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id: callId, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
    });
    messages.push({ role: "tool", tool_call_id: callId, content: "sunny" });
    const second = await client.chat.completions.create({ model: "project-zero", messages, tools: CHAT_TOOLS, stream: true });
    let text = "";
    for await (const part of second) text += part.choices[0]?.delta.content ?? "";
    expect(text).toBe("It is sunny in Paris.");
    expect(turnSent(upstream.requests[1]!, callId)?.reasoning_content).toBe("The user wants the weather in Paris.");
  });

  it("Responses: a previous_response_id continuation and a full-history one both carry it back", async () => {
    const first = await client.responses.create({ model: "project-zero", input: "Weather in Paris?", tools: WEATHER_TOOLS });
    const call = first.output.find((item) => item.type === "function_call")!;
    const continued = await client.responses.create({
      model: "project-zero",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
      tools: WEATHER_TOOLS,
    });
    expect(continued.output_text).toBe("It is sunny in Paris.");
    expect(turnSent(upstream.requests[1]!, call.call_id)?.reasoning_content).toBe("The user wants the weather in Paris.");

    const unstored = await client.responses.create({ model: "project-zero", input: "Weather in Paris?", tools: WEATHER_TOOLS, store: false, stream: false });
    const unstoredCall = unstored.output.find((item) => item.type === "function_call")!;
    const fullHistory = await client.responses.create({
      model: "project-zero",
      input: [{ role: "user", content: "Weather in Paris?" }, unstoredCall, { type: "function_call_output", call_id: unstoredCall.call_id, output: "sunny" }],
      tools: WEATHER_TOOLS,
      store: false,
    });
    expect(fullHistory.output_text).toBe("It is sunny in Paris.");
    expect(turnSent(upstream.requests[3]!, unstoredCall.call_id)?.reasoning_content).toBe("The user wants the weather in Paris.");
  });

  it("the AI SDK's default tool loop (Responses, stored, earlier items sent back by reference), plain and streamed", async () => {
    const openai = createOpenAI({ baseURL: `${app.url}/v1`, apiKey });
    const weather = tool({ description: "Weather", inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, sky: "sunny" }) });
    const generated = await generateText({
      model: openai("project-zero"),
      prompt: "Weather in Paris?",
      tools: { weather },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    });
    expect(generated.text).toBe("It is sunny in Paris.");
    const streamed = streamText({ model: openai("project-zero"), prompt: "Weather in Paris?", tools: { weather }, stopWhen: stepCountIs(2), maxRetries: 0 });
    expect(await streamed.text).toBe("It is sunny in Paris.");
    // Each second step carried its first step's reasoning back (the model refuses it otherwise).
    const carried = upstream.requests.flatMap((request) => (request.body.messages as Record<string, unknown>[]).filter((m) => m.role === "assistant"));
    expect(carried.map((m) => m.reasoning_content)).toEqual(["The user wants the weather in Paris.", "The user wants the weather in Paris."]);
  });

  it("reasoning a client sends itself is sent as it is", async () => {
    const first = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: CHAT_TOOLS });
    const calls = first.choices[0]!.message.tool_calls!;
    const response = await postChat(app, apiKey, {
      model: "project-zero",
      tools: CHAT_TOOLS,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: null, tool_calls: calls, reasoning_content: "my own record of it" },
        { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" },
      ],
    });
    expect(response.status).toBe(200);
    expect(turnSent(upstream.requests[1]!, calls[0]!.id)?.reasoning_content).toBe("my own record of it");
  });

  it("another account naming the same tool call gets none of it", async () => {
    const first = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: CHAT_TOOLS });
    const calls = first.choices[0]!.message.tool_calls!;
    const other = (await createAccountWithKey(app, ["chat"])).apiKey;
    const response = await postChat(app, other, {
      model: "project-zero",
      tools: CHAT_TOOLS,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: null, tool_calls: calls },
        { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" },
      ],
    });
    // The model's own refusal, as without the gateway; nothing of the first account's reasoning was sent.
    expect(response.status).toBe(400);
    expect(turnSent(upstream.requests[1]!, calls[0]!.id)).not.toHaveProperty("reasoning_content");
  });
});

describe("reasoning and failover", () => {
  let first: FakeUpstream;
  let second: FakeUpstream;
  let app: TestApp;
  let apiKey: string;

  beforeAll(async () => {
    first = await FakeUpstream.start();
    second = await FakeUpstream.start();
    app = await startGateway([first, second]);
    apiKey = (await createAccountWithKey(app, ["chat"])).apiKey;
  });
  afterAll(async () => {
    await app?.close();
    await first?.close();
    await second?.close();
  });

  it("goes back only to the upstream that wrote it: another provider may refuse a field it does not know", async () => {
    first.reset().next(thinkingModel(), fail(503));
    second.reset().otherwise((exchange) => reply(completion("from the second"))(exchange));
    const client = openAiClient(app, apiKey);
    const answer = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: CHAT_TOOLS });
    const calls = answer.choices[0]!.message.tool_calls!;
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: null, tool_calls: calls },
      { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" },
    ];
    const next = await client.chat.completions.create({ model: "project-zero", messages, tools: CHAT_TOOLS });
    expect(next.choices[0]!.message.content).toBe("from the second");
    expect(turnSent(first.requests[1]!, calls[0]!.id)?.reasoning_content).toBe("The user wants the weather in Paris.");
    expect(turnSent(second.requests[0]!, calls[0]!.id)).not.toHaveProperty("reasoning_content");
  });
});
