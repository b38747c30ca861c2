import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ourCallIds, ownCallId, providerCallId } from "../../src/chat/tool-turns.js";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { chunk, completion, fail, FakeUpstream, reply, stream, type Behavior, type Exchange, type UpstreamRequest } from "./support/fake-upstream.js";
import { openAiClient, postChat, readSse, startGateway, WEATHER_TOOLS } from "./support/gateway.js";

/**
 * Tool turns as providers other than OpenAI write them, through real
 * clients: a thinking model (DeepSeek's, Kimi's thinking modes) writes
 * `reasoning_content` beside each message and refuses (400) a request whose
 * history has a tool turn without it; call ids repeat (Kimi numbers its
 * calls from 0 in every answer) or are missing (Gemini); Gemini 3 puts a
 * thought signature on each call that it needs back. No OpenAI client keeps
 * those fields, and the gateway shows clients only OpenAI's: it keeps them
 * and puts them back, and gives each call an id of its own.
 */
let toolCallsMade = 0;

function thinkingModel(reasoningPieces = ["The user wants ", "the weather in Paris."]): Behavior {
  return (exchange) => {
    const messages = exchange.body.messages as Record<string, unknown>[];
    const forgotten = messages.findIndex((m) => m.role === "assistant" && Array.isArray(m.tool_calls) && typeof m.reasoning_content !== "string");
    if (forgotten >= 0) {
      return refuse(exchange, `The reasoning_content in the thinking mode must be passed back to the API. (messages[${forgotten}])`);
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

/** The assistant turn an upstream's request carried back, by the id the client has of its first tool call (the upstream gets its own). */
function turnSent(request: UpstreamRequest, callId: string): Record<string, unknown> | undefined {
  return (request.body.messages as Record<string, unknown>[]).find(
    (m) => m.role === "assistant" && Array.isArray(m.tool_calls) && (m.tool_calls as { id: string }[])[0]?.id === providerCallId(callId),
  );
}

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } },
];

type Message = Record<string, unknown> & { role: string; tool_calls?: Record<string, unknown>[] };

/** A 400 as DeepSeek answers one. */
function refuse(exchange: Exchange, message: string): void {
  reply({ error: { message, type: "invalid_request_error", param: null, code: "invalid_request_error" } }, 400)(exchange);
}

/**
 * A Kimi-style thinking model: its call ids are `functions.<name>:<n>`,
 * counted from 0 in each answer; it writes reasoning that quotes the user's
 * last words, and refuses a tool turn sent back without reasoning. After a
 * tool result it answers with the reasoning each of the conversation's turns
 * carried, so a test can see which came back.
 */
function kimi(): Behavior {
  return (exchange) => {
    const messages = exchange.body.messages as Message[];
    if (messages.some((m) => m.role === "assistant" && m.tool_calls && typeof m.reasoning_content !== "string")) {
      return refuse(exchange, "The reasoning_content in the thinking mode must be passed back to the API.");
    }
    if (messages.at(-1)?.role === "tool") {
      const carried = messages.filter((m) => m.role === "assistant").map((m) => m.reasoning_content);
      return reply(completion(`carried: ${JSON.stringify(carried)}`))(exchange);
    }
    const user = messages.findLast((m) => m.role === "user")!.content as string;
    const calls = [{ id: "functions.get_weather:0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }];
    const message = { role: "assistant", content: null, reasoning_content: `Thinking about: ${user}`, tool_calls: calls };
    return reply(completion(null, { choices: [{ index: 0, message, logprobs: null, finish_reason: "tool_calls" }] }))(exchange);
  };
}

describe("tool turns through the gateway", () => {
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
    const first = await client.chat.completions.create({ model: "project-zero", messages, tools: TOOLS });
    const call = first.choices[0]!.message.tool_calls![0]!;
    // Only OpenAI's fields reach the client, as before.
    expect(first.choices[0]!.message).not.toHaveProperty("reasoning_content");
    // As OpenAI clients rebuild the turn: its content and calls.
    messages.push({ role: "assistant", content: null, tool_calls: first.choices[0]!.message.tool_calls! });
    messages.push({ role: "tool", tool_call_id: call.id, content: "sunny" });
    const second = await client.chat.completions.create({ model: "project-zero", messages, tools: TOOLS });
    expect(second.choices[0]!.message.content).toBe("It is sunny in Paris.");
    expect(turnSent(upstream.requests[1]!, call.id)?.reasoning_content).toBe("The user wants the weather in Paris.");
  });

  it("a streamed step's reasoning, sent in pieces, is carried back whole", async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const events = await readSse(await postChat(app, apiKey, { model: "project-zero", messages, tools: TOOLS, stream: true }));
    expect(events.join("\n")).not.toContain("reasoning_content");
    const deltas = events.slice(0, -1).flatMap((e) => (JSON.parse(e) as { choices: { delta: { tool_calls?: { id?: string }[] } }[] }).choices);
    const callId = deltas.flatMap((c) => c.delta.tool_calls ?? []).find((t) => t.id)!.id!;
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id: callId, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
    });
    messages.push({ role: "tool", tool_call_id: callId, content: "sunny" });
    const second = await client.chat.completions.create({ model: "project-zero", messages, tools: TOOLS, stream: true });
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
    const first = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: TOOLS });
    const calls = first.choices[0]!.message.tool_calls!;
    const response = await postChat(app, apiKey, {
      model: "project-zero",
      tools: TOOLS,
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
    const first = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: TOOLS });
    const calls = first.choices[0]!.message.tool_calls!;
    const other = (await createAccountWithKey(app, ["chat"])).apiKey;
    const response = await postChat(app, other, {
      model: "project-zero",
      tools: TOOLS,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: null, tool_calls: calls },
        { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" },
      ],
    });
    // Nothing of the first account's reasoning was sent: the turn goes with an empty one, as this upstream is known to want one.
    expect(response.status).toBe(200);
    expect(turnSent(upstream.requests[1]!, calls[0]!.id)?.reasoning_content).toBe("");
  });

  it("two conversations whose provider numbers its calls the same way each get their own reasoning back, never the other's", async () => {
    upstream.otherwise(kimi());
    const ask = (words: string) => client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: words }], tools: TOOLS });
    const alice = await ask("Alice asks about Paris");
    const bob = await ask("Bob here, my account PIN is 4921");
    const aliceCall = alice.choices[0]!.message.tool_calls![0]!;
    const bobCall = bob.choices[0]!.message.tool_calls![0]!;
    // Each call a client sees has an id of its own; the provider's is inside it.
    expect(aliceCall.id).not.toBe(bobCall.id);
    expect(providerCallId(aliceCall.id)).toBe("functions.get_weather:0");

    const next = await client.chat.completions.create({
      model: "project-zero",
      tools: TOOLS,
      messages: [
        { role: "user", content: "Alice asks about Paris" },
        { role: "assistant", content: null, tool_calls: [aliceCall] },
        { role: "tool", tool_call_id: aliceCall.id, content: "sunny" },
      ],
    });
    expect(next.choices[0]!.message.content).toBe('carried: ["Thinking about: Alice asks about Paris"]');
    // The provider got its own ids back, in the call and in the result that answers it.
    const sent = upstream.requests[2]!.body.messages as Message[];
    expect(sent[1]!.tool_calls![0]!.id).toBe("functions.get_weather:0");
    expect(sent[2]!.tool_call_id).toBe("functions.get_weather:0");
  });

  it("a turn's parallel calls sent back in another order, or as one message per call, still carry its reasoning", async () => {
    const calls = [
      { id: "call_00_first", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      { id: "call_01_second", type: "function", function: { name: "get_weather", arguments: '{"city":"Tokyo"}' } },
    ];
    const thinking = { role: "assistant", content: null, reasoning_content: "Two cities, two calls.", tool_calls: calls };
    upstream.next(reply(completion(null, { choices: [{ index: 0, message: thinking, logprobs: null, finish_reason: "tool_calls" }] })));
    upstream.otherwise((exchange) => {
      const assistants = (exchange.body.messages as Message[]).filter((m) => m.role === "assistant");
      if (assistants.some((m) => typeof m.reasoning_content !== "string"))
        return refuse(exchange, "The reasoning_content in the thinking mode must be passed back to the API.");
      return reply(completion(`carried: ${JSON.stringify(assistants.map((m) => m.reasoning_content))}`))(exchange);
    });
    const first = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Paris and Tokyo?" }], tools: TOOLS });
    const [paris, tokyo] = first.choices[0]!.message.tool_calls!;
    const results: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "tool", tool_call_id: paris!.id, content: "sunny" },
      { role: "tool", tool_call_id: tokyo!.id, content: "rain" },
    ];
    const reordered = await client.chat.completions.create({
      model: "project-zero",
      tools: TOOLS,
      messages: [{ role: "user", content: "Paris and Tokyo?" }, { role: "assistant", content: null, tool_calls: [tokyo!, paris!] }, ...results],
    });
    expect(reordered.choices[0]!.message.content).toBe('carried: ["Two cities, two calls."]');
    // As OpenAI's function-calling guide builds a Responses input: each call just before its output, so one chat turn per call.
    const split = await client.responses.create({
      model: "project-zero",
      tools: WEATHER_TOOLS,
      input: [
        { role: "user", content: "Paris and Tokyo?" },
        { type: "function_call", call_id: paris!.id, name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call_output", call_id: paris!.id, output: "sunny" },
        { type: "function_call", call_id: tokyo!.id, name: "get_weather", arguments: '{"city":"Tokyo"}' },
        { type: "function_call_output", call_id: tokyo!.id, output: "rain" },
      ],
    });
    expect(split.output_text).toBe('carried: ["Two cities, two calls.",""]');
    // The turn's reasoning is kept once, not once per call.
    const rows = await app.store.db
      .selectFrom("chat_tool_turns")
      .select(["tool_call_id", "message_fields"])
      .where("tool_call_id", "in", [paris!.id, tokyo!.id])
      .execute();
    expect(rows.map((row) => JSON.parse(row.message_fields) as unknown).sort((a, b) => JSON.stringify(a).length - JSON.stringify(b).length)).toEqual([
      {},
      { reasoning_content: "Two cities, two calls." },
    ]);
  });

  it("Gemini: calls without ids or indexes get ids and stay apart, a thought signature goes back with its call, and a turn of calls ends in tool_calls", async () => {
    const signature = (city: string) => ({ google: { thought_signature: `sig-${city}` } });
    const geminiCall = (city: string) => ({
      type: "function",
      function: { name: "get_weather", arguments: `{"city":"${city}"}` },
      extra_content: signature(city),
    });
    upstream.next(stream([chunk({ role: "assistant", tool_calls: [geminiCall("Paris")] }), chunk({ tool_calls: [geminiCall("Tokyo")] }), chunk({}, "stop")]));
    upstream.otherwise((exchange) => {
      const calls = (exchange.body.messages as Message[]).flatMap((m) => m.tool_calls ?? []);
      const missing = calls.find(
        (call) => (call.extra_content as typeof signature extends (c: string) => infer R ? R : never)?.google?.thought_signature === undefined,
      );
      if (missing) return refuse(exchange, "Function call is missing a thought_signature in functionCall parts.");
      return reply(
        completion(`signatures: ${calls.map((call) => (call.extra_content as { google: { thought_signature: string } }).google.thought_signature).join(",")}`),
      )(exchange);
    });
    const events = await readSse(
      await postChat(app, apiKey, { model: "project-zero", messages: [{ role: "user", content: "Paris and Tokyo?" }], tools: TOOLS, stream: true }),
    );
    expect(events.join("\n")).not.toContain("thought_signature");
    const choices = events.slice(0, -1).flatMap((e) => (JSON.parse(e) as OpenAI.Chat.ChatCompletionChunk).choices);
    const deltas = choices.flatMap((c) => c.delta.tool_calls ?? []);
    expect(deltas.filter((d) => d.function?.arguments).map((d) => [d.index, d.function?.arguments])).toEqual([
      [0, '{"city":"Paris"}'],
      [1, '{"city":"Tokyo"}'],
    ]);
    // Ids of ours, one per call, given where the provider gave none: on the chunk that finishes the choice, with
    // `function` as every call delta of OpenAI's has it.
    const ids = [0, 1].map((index) => deltas.find((d) => d.index === index && d.id)!.id!);
    expect(new Set(ids).size).toBe(2);
    expect(deltas.every((d) => d.function !== undefined)).toBe(true);
    expect(choices.at(-1)!.finish_reason).toBe("tool_calls");

    const next = await client.chat.completions.create({
      model: "project-zero",
      tools: TOOLS,
      messages: [
        { role: "user", content: "Paris and Tokyo?" },
        {
          role: "assistant",
          content: null,
          tool_calls: ["Paris", "Tokyo"].map((city, i) => ({
            id: ids[i]!,
            type: "function" as const,
            function: { name: "get_weather", arguments: `{"city":"${city}"}` },
          })),
        },
        { role: "tool", tool_call_id: ids[0]!, content: "sunny" },
        { role: "tool", tool_call_id: ids[1]!, content: "rain" },
      ],
    });
    expect(next.choices[0]!.message.content).toBe("signatures: sig-Paris,sig-Tokyo");
  });

  it("the AI SDK's chat model reads Gemini's parallel streamed calls, their ids given at the end", async () => {
    const geminiCall = (city: string) => ({ type: "function", function: { name: "get_weather", arguments: `{"city":"${city}"}` } });
    upstream.next(stream([chunk({ role: "assistant", tool_calls: [geminiCall("Paris")] }), chunk({ tool_calls: [geminiCall("Tokyo")] }), chunk({}, "stop")]));
    const openai = createOpenAI({ baseURL: `${app.url}/v1`, apiKey });
    const weather = tool({ description: "Weather", inputSchema: z.object({ city: z.string() }) });
    const result = streamText({ model: openai.chat("project-zero"), prompt: "Paris and Tokyo?", tools: { weather }, maxRetries: 0 });
    const parts: string[] = [];
    for await (const part of result.fullStream) parts.push(part.type === "error" ? `error: ${String(part.error)}` : part.type);
    expect(parts.filter((part) => part.startsWith("error"))).toEqual([]);
    expect((await result.toolCalls).map((call) => call.input)).toEqual([{ city: "Paris" }, { city: "Tokyo" }]);
    expect(await result.finishReason).toBe("tool-calls");
  });

  it("a stream of several choices keeps each choice's turn, the one that finishes last too", async () => {
    upstream.next(
      stream([
        {
          ...chunk({ role: "assistant", reasoning_content: "Choice zero." }),
          choices: [{ index: 0, delta: { role: "assistant", reasoning_content: "Choice zero." }, finish_reason: null }],
        },
        {
          ...chunk({}),
          choices: [
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, id: "call_c0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
              finish_reason: "tool_calls",
            },
          ],
        },
        { ...chunk({}), choices: [{ index: 1, delta: { role: "assistant", reasoning_content: "Choice one, " }, finish_reason: null }] },
        { ...chunk({}), choices: [{ index: 1, delta: { reasoning_content: "at length." }, finish_reason: null }] },
        {
          ...chunk({}),
          choices: [
            {
              index: 1,
              delta: { tool_calls: [{ index: 0, id: "call_c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }] },
              finish_reason: "tool_calls",
            },
          ],
        },
      ]),
    );
    upstream.otherwise((exchange) => {
      const turn = (exchange.body.messages as Message[]).find((m) => m.role === "assistant");
      return reply(completion(`carried: ${String(turn?.reasoning_content)}`))(exchange);
    });
    const events = await readSse(
      await postChat(app, apiKey, { model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: TOOLS, stream: true, n: 2 }),
    );
    const choices = events.slice(0, -1).flatMap((e) => (JSON.parse(e) as OpenAI.Chat.ChatCompletionChunk).choices);
    const callOf = (index: number) =>
      choices
        .filter((c) => c.index === index)
        .flatMap((c) => c.delta.tool_calls ?? [])
        .find((t) => t.id)!.id!;
    for (const [index, reasoning] of [
      [1, "Choice one, at length."],
      [0, "Choice zero."],
    ] as const) {
      const id = callOf(index);
      const next = await client.chat.completions.create({
        model: "project-zero",
        tools: TOOLS,
        messages: [
          { role: "user", content: "Weather?" },
          { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: "{}" } }] },
          { role: "tool", tool_call_id: id, content: "sunny" },
        ],
      });
      expect(next.choices[0]!.message.content, `choice ${index}`).toBe(`carried: ${reasoning}`);
    }
  });

  it("a stored stream cut short after its call keeps the call's reasoning: the call can still be answered", async () => {
    upstream.next(
      stream(
        [
          chunk({ role: "assistant", content: null, reasoning_content: "Look it up." }),
          chunk({ tool_calls: [{ index: 0, id: "call_00_cut", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] }),
          chunk({}, "tool_calls"),
        ],
        { dropAfter: 2 },
      ),
    );
    upstream.otherwise((exchange) => {
      const turn = (exchange.body.messages as Message[]).find((m) => m.role === "assistant");
      if (typeof turn?.reasoning_content !== "string") return refuse(exchange, "The reasoning_content in the thinking mode must be passed back to the API.");
      return reply(completion(`carried: ${turn.reasoning_content}`))(exchange);
    });
    const events = client.responses.stream({ model: "project-zero", input: "Weather in Paris?", tools: WEATHER_TOOLS });
    let id = "";
    let callId = "";
    await expect(
      (async () => {
        for await (const event of events) {
          if (event.type === "response.created") id = event.response.id;
          if (event.type === "response.output_item.added" && event.item.type === "function_call") callId = event.item.call_id;
        }
      })(),
    ).rejects.toThrow();
    expect(callId).not.toBe("");
    const continued = await client.responses.create({
      model: "project-zero",
      previous_response_id: id,
      tools: WEATHER_TOOLS,
      input: [{ type: "function_call_output", call_id: callId, output: "sunny" }],
    });
    expect(continued.output_text).toBe("carried: Look it up.");
  });
});

describe("tool turns across a failover", () => {
  let first: FakeUpstream;
  let second: FakeUpstream;
  let app: TestApp;
  let apiKey: string;
  let client: OpenAI;

  beforeAll(async () => {
    first = await FakeUpstream.start();
    second = await FakeUpstream.start();
    app = await startGateway([first, second]);
    apiKey = (await createAccountWithKey(app, ["chat"])).apiKey;
    client = openAiClient(app, apiKey);
  });
  afterAll(async () => {
    await app?.close();
    await first?.close();
    await second?.close();
  });

  it("goes back only to the upstream that wrote it: another provider may refuse a field it does not know", async () => {
    first.reset().next(thinkingModel(), fail(503));
    second.reset().otherwise((exchange) => reply(completion("from the second"))(exchange));
    const answer = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: TOOLS });
    const calls = answer.choices[0]!.message.tool_calls!;
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: null, tool_calls: calls },
      { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" },
    ];
    const next = await client.chat.completions.create({ model: "project-zero", messages, tools: TOOLS });
    expect(next.choices[0]!.message.content).toBe("from the second");
    expect(turnSent(first.requests[1]!, calls[0]!.id)?.reasoning_content).toBe("The user wants the weather in Paris.");
    expect(turnSent(second.requests[0]!, calls[0]!.id)).not.toHaveProperty("reasoning_content");
  });

  it("goes on when it comes back: a turn the other upstream wrote goes with an empty reasoning, not a refusal", async () => {
    const call = (id: string) => [{ id, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }];
    const deepseek: Behavior = (exchange) => {
      const turns = (exchange.body.messages as Message[]).filter((m) => m.role === "assistant" && m.tool_calls);
      if (turns.some((m) => typeof m.reasoning_content !== "string"))
        return refuse(exchange, "The reasoning_content in the thinking mode must be passed back to the API.");
      if (turns.length === 0) {
        const message = { role: "assistant", content: null, reasoning_content: "First, Paris.", tool_calls: call("call_00_ds") };
        return reply(completion(null, { choices: [{ index: 0, message, logprobs: null, finish_reason: "tool_calls" }] }))(exchange);
      }
      return reply(completion(`carried: ${JSON.stringify(turns.map((m) => m.reasoning_content))}`))(exchange);
    };
    first.reset().next(deepseek, fail(500)).otherwise(deepseek);
    // The other provider refuses fields it does not know, as OpenAI does.
    second.reset().otherwise((exchange) => {
      if ((exchange.body.messages as Message[]).some((m) => m.reasoning_content !== undefined))
        return refuse(exchange, "Unrecognized request argument: reasoning_content");
      const message = { role: "assistant", content: null, tool_calls: call("call_oa") };
      return reply(completion(null, { choices: [{ index: 0, message, logprobs: null, finish_reason: "tool_calls" }] }))(exchange);
    });
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Paris, twice?" }];
    for (let step = 0; step < 2; step++) {
      const answer = await client.chat.completions.create({ model: "project-zero", messages, tools: TOOLS });
      const calls = answer.choices[0]!.message.tool_calls!;
      messages.push({ role: "assistant", content: null, tool_calls: calls }, { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" });
    }
    const last = await client.chat.completions.create({ model: "project-zero", messages, tools: TOOLS });
    expect(last.choices[0]!.message.content).toBe('carried: ["First, Paris.",""]');
  });
});

describe("the calls a request looks up", () => {
  it("are the ids this gateway gave, the latest 10,000 of a history longer than any provider takes", () => {
    const ids = Array.from({ length: 10_001 }, (_, i) => ownCallId(`call_${i}`));
    const messages = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_client_made", type: "function", function: { name: "f", arguments: "{}" } }] },
      ...ids.map((id) => ({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "f", arguments: "{}" } }] })),
    ];
    const looked = ourCallIds(messages)!;
    expect(looked).toHaveLength(10_000);
    expect(looked[0]).toBe(ids[1]);
    expect(looked.at(-1)).toBe(ids.at(-1));
    expect(ourCallIds([{ role: "assistant", tool_calls: [{ id: "call_client_made" }] }])).toBeUndefined();
  });
});

describe("a thinking model not yet seen writing reasoning, after a failover", () => {
  it("is sent the other upstream's turn again with an empty reasoning when it refuses it without one", async () => {
    const thinking = await FakeUpstream.start();
    const plain = await FakeUpstream.start();
    const app = await startGateway([thinking, plain]);
    try {
      const client = openAiClient(app, (await createAccountWithKey(app, ["chat"])).apiKey);
      // Down at first; then refusing, as DeepSeek does, any tool turn without reasoning.
      thinking.next(fail(500)).otherwise((exchange) => {
        const turns = (exchange.body.messages as Message[]).filter((m) => m.role === "assistant" && m.tool_calls);
        if (turns.some((m) => typeof m.reasoning_content !== "string"))
          return refuse(exchange, "The reasoning_content in the thinking mode must be passed back to the API.");
        return reply(completion(`carried: ${JSON.stringify(turns.map((m) => m.reasoning_content))}`))(exchange);
      });
      plain.otherwise((exchange) => {
        const message = {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_oa", type: "function", function: { name: "get_weather", arguments: "{}" } }],
        };
        return reply(completion(null, { choices: [{ index: 0, message, logprobs: null, finish_reason: "tool_calls" }] }))(exchange);
      });
      const first = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }], tools: TOOLS });
      const call = first.choices[0]!.message.tool_calls![0]!;
      const ask = () =>
        client.chat.completions.create({
          model: "project-zero",
          tools: TOOLS,
          messages: [
            { role: "user", content: "Weather?" },
            { role: "assistant", content: null, tool_calls: [call] },
            { role: "tool", tool_call_id: call.id, content: "sunny" },
          ],
        });
      expect((await ask()).choices[0]!.message.content).toBe('carried: [""]');
      // Learnt: the next request goes with it at once.
      const before = thinking.requests.length;
      expect((await ask()).choices[0]!.message.content).toBe('carried: [""]');
      expect(thinking.requests.length - before).toBe(1);
    } finally {
      await app.close();
      await thinking.close();
      await plain.close();
    }
  });
});
