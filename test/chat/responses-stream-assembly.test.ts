import { createOpenAI } from "@ai-sdk/openai";
import { streamText, tool } from "ai";
import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { chunk, completion, reply, stream, toolCallCompletion, ownId } from "./support/fake-upstream.js";
import { openAiClient, useSdkGateway, WEATHER_TOOLS } from "./support/gateway.js";

// How a Responses answer is put together from the upstream's chat chunks: function calls whose
// name or id come late, and the usage OpenAI's types require, as the official SDK sees them.
describe("/v1/responses stream assembly and usage", () => {
  const gateway = useSdkGateway();
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });

  const tools = WEATHER_TOOLS;

  /** Streams a request through the SDK: every event, and the response the SDK assembled. */
  async function streamed(input: string): Promise<{ events: OpenAI.Responses.ResponseStreamEvent[]; final: OpenAI.Responses.Response }> {
    const responseStream = client.responses.stream({ model: "project-zero", input, tools });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of responseStream) events.push(event);
    return { events, final: await responseStream.finalResponse() };
  }

  /** The function-call events of one output index, in the order they came. */
  function callEvents(events: OpenAI.Responses.ResponseStreamEvent[], outputIndex: number): OpenAI.Responses.ResponseStreamEvent[] {
    return events.filter((event) => "output_index" in event && event.output_index === outputIndex);
  }

  describe("a function call whose name or id arrives after its first delta", () => {
    it("announces the call with the name that came late, and loses none of the arguments sent before it", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_L", type: "function", function: { arguments: "" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { name: "get_weather", arguments: 'ty":' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Paris?");
      const expected = { type: "function_call", call_id: ownId("call_L"), name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" };

      const ofCall = callEvents(events, 0);
      expect(ofCall[0]).toMatchObject({ type: "response.output_item.added", item: { type: "function_call", call_id: ownId("call_L"), name: "get_weather" } });
      const deltas = ofCall.filter((event) => event.type === "response.function_call_arguments.delta");
      expect(deltas.map((event) => event.delta).join("")).toBe('{"city":"Paris"}');
      expect(ofCall.find((event) => event.type === "response.function_call_arguments.done")).toMatchObject({
        name: "get_weather",
        arguments: '{"city":"Paris"}',
      });
      expect(ofCall.find((event) => event.type === "response.output_item.done")).toMatchObject({ item: expected });
      expect(events.at(-1)).toMatchObject({ type: "response.completed", response: { output: [expected] } });
      expect(final.output).toEqual([expect.objectContaining(expected)]);
      const stored = await client.responses.retrieve(final.id);
      expect(stored.output).toEqual([expect.objectContaining(expected)]);
    });

    it("keeps the upstream's call id when it comes after the name, from output_item.added to what is stored and continued", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, type: "function", function: { name: "get_weather", arguments: "" } }] }),
          chunk({ tool_calls: [{ index: 0, id: "call_late", function: { arguments: '{"city":"Oslo"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
        reply(completion("Cold.")),
      );
      const { events, final } = await streamed("Weather in Oslo?");
      const expected = { type: "function_call", call_id: ownId("call_late"), name: "get_weather", arguments: '{"city":"Oslo"}' };
      expect(events.find((event) => event.type === "response.output_item.added")).toMatchObject({ item: { call_id: ownId("call_late") } });
      expect(events.find((event) => event.type === "response.output_item.done")).toMatchObject({ item: expected });
      expect(final.output).toEqual([expect.objectContaining(expected)]);

      await client.responses.create({
        model: "project-zero",
        previous_response_id: final.id,
        input: [{ type: "function_call_output", call_id: "call_late", output: '{"sky":"grey"}' }],
        tools,
      });
      expect(gateway.upstream.requests[1]!.body.messages).toEqual([
        { role: "user", content: "Weather in Oslo?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_late", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }],
        },
        { role: "tool", tool_call_id: "call_late", content: '{"sky":"grey"}' },
      ]);
    });

    it("streams a complete call beside one still waiting for its name, each whole under its own output index", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_A", type: "function", function: { arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 1, id: "call_B", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { name: "get_weather", arguments: '"Lima"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Rome and Lima?");
      const added = events.filter((event) => event.type === "response.output_item.added");
      expect(added.map((event) => [event.output_index, event.item.type === "function_call" && event.item.call_id])).toEqual([
        [0, ownId("call_B")],
        [1, ownId("call_A")],
      ]);
      for (const [outputIndex, args] of [
        [0, '{"city":"Rome"}'],
        [1, '{"city":"Lima"}'],
      ] as const) {
        const deltas = callEvents(events, outputIndex).filter((event) => event.type === "response.function_call_arguments.delta");
        expect(deltas.map((event) => event.delta).join("")).toBe(args);
      }
      expect(final.output).toEqual([
        expect.objectContaining({ call_id: ownId("call_B"), name: "get_weather", arguments: '{"city":"Rome"}' }),
        expect.objectContaining({ call_id: ownId("call_A"), name: "get_weather", arguments: '{"city":"Lima"}' }),
      ]);
    });

    it("still gives a call that never got an id one of its own, with all its arguments", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, type: "function", function: { name: "get_weather", arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Nice"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Nice?");
      const item = final.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      expect(item).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Nice"}' });
      expect(item.call_id).toMatch(/^call_\w+$/);
      expect(events.find((event) => event.type === "response.output_item.added")).toMatchObject({ item: { call_id: item.call_id } });
    });

    it("answers a plain (non-streamed) tool call with its name and call id, and stores them", async () => {
      gateway.upstream.next(reply(toolCallCompletion("get_weather", '{"city":"Paris"}')));
      const response = await client.responses.create({ model: "project-zero", input: "Weather in Paris?", tools });
      const expected = { type: "function_call", call_id: ownId("call_abc123"), name: "get_weather", arguments: '{"city":"Paris"}' };
      expect(response.output).toEqual([expect.objectContaining(expected)]);
      expect((await client.responses.retrieve(response.id)).output).toEqual([expect.objectContaining(expected)]);
    });
  });

  describe("each output item finished before the next begins", () => {
    const call = (index: number, id: string, city: string) => [
      chunk({ tool_calls: [{ index, id, type: "function", function: { name: "get_weather", arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index, function: { arguments: `"${city}"}` } }] }),
    ];
    const text = [chunk({ role: "assistant", content: "Let me " }), chunk({ content: "check." })];
    const answers = {
      "text, then a call": { chunks: [...text, ...call(0, "call_P", "Paris")], words: "Let me check.", calls: [["call_P", "Paris"]] },
      "text, then two calls": {
        chunks: [...text, ...call(0, "call_P", "Paris"), ...call(1, "call_R", "Rome")],
        words: "Let me check.",
        calls: [
          ["call_P", "Paris"],
          ["call_R", "Rome"],
        ],
      },
      "two calls": {
        chunks: [chunk({ role: "assistant", content: null }), ...call(0, "call_P", "Paris"), ...call(1, "call_R", "Rome")],
        words: "",
        calls: [
          ["call_P", "Paris"],
          ["call_R", "Rome"],
        ],
      },
    };

    /** The events of each output item, in the order they came: `type@output_index`, a run of deltas as one. */
    function outline(events: OpenAI.Responses.ResponseStreamEvent[]): string[] {
      const steps = events.flatMap((event) => ("output_index" in event ? [`${event.type}@${event.output_index}`] : []));
      return steps.filter((step, i) => !(step.endsWith(".delta", step.indexOf("@")) && steps[i - 1] === step));
    }
    const messageOutline = (i: number) =>
      ["output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done"].map(
        (type) => `response.${type}@${i}`,
      );
    const callOutline = (i: number) =>
      ["output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done"].map((type) => `response.${type}@${i}`);

    for (const [name, { chunks, words, calls }] of Object.entries(answers)) {
      it(`sends all of an item's done events before the next item's output_item.added (${name}), and the SDK assembles the answer`, async () => {
        gateway.upstream.next(stream([...chunks, chunk({}, "tool_calls")]));
        const { events, final } = await streamed("Weather in Paris and Rome?");
        const first = words === "" ? 0 : 1;
        expect(outline(events)).toEqual([...(words === "" ? [] : messageOutline(0)), ...calls.flatMap((_, i) => callOutline(first + i))]);
        expect(events.at(-1)).toMatchObject({ type: "response.completed" });
        expect(final.output).toEqual([
          ...(words === "" ? [] : [expect.objectContaining({ type: "message", content: [expect.objectContaining({ type: "output_text", text: words })] })]),
          ...calls.map(([callId, city]) => expect.objectContaining({ type: "function_call", call_id: ownId(callId!), arguments: `{"city":"${city}"}` })),
        ]);
      });

      it(`gives the AI SDK's streamText the same answer (${name})`, async () => {
        gateway.upstream.next(stream([...chunks, chunk({}, "tool_calls")]));
        const openai = createOpenAI({ baseURL: `${gateway.app.url}/v1`, apiKey: gateway.apiKey });
        const result = streamText({
          model: openai("project-zero"),
          prompt: "Weather in Paris and Rome?",
          tools: { get_weather: tool({ inputSchema: z.object({ city: z.string() }) }) },
          maxRetries: 0,
        });
        const parts: string[] = [];
        for await (const part of result.fullStream) parts.push(part.type === "error" ? `error: ${String(part.error)}` : part.type);
        expect(parts.filter((part) => part.startsWith("error"))).toEqual([]);
        expect(await result.text).toBe(words);
        expect((await result.toolCalls).map((toolCall) => [toolCall.toolCallId, toolCall.input])).toEqual(
          calls.map(([callId, city]) => [ownId(callId!), { city }]),
        );
      });
    }

    /** The output indexes that had an event after their own output_item.done. */
    function eventsAfterDone(events: OpenAI.Responses.ResponseStreamEvent[]): number[] {
      const done = new Set<number>();
      const late = new Set<number>();
      for (const event of events) {
        if (!("output_index" in event)) continue;
        if (done.has(event.output_index)) late.add(event.output_index);
        if (event.type === "response.output_item.done") done.add(event.output_index);
      }
      return [...late];
    }

    it("keeps a call whose deltas an upstream interleaves with the next call's open until the end, its done events carrying all its arguments", async () => {
      gateway.upstream.next(
        stream([
          chunk({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: "call_L", type: "function", function: { name: "get_weather", arguments: '{"city":' } }],
          }),
          chunk({ tool_calls: [{ index: 1, id: "call_R", type: "function", function: { name: "get_weather", arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Lima"}' } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: '"Rome"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Lima and Rome?");
      expect(eventsAfterDone(events)).toEqual([]);
      for (const [outputIndex, args] of [
        [0, '{"city":"Lima"}'],
        [1, '{"city":"Rome"}'],
      ] as const) {
        const ofCall = callEvents(events, outputIndex);
        const deltas = ofCall.filter((event) => event.type === "response.function_call_arguments.delta");
        expect(deltas.map((event) => event.delta).join("")).toBe(args);
        expect(ofCall.find((event) => event.type === "response.function_call_arguments.done")).toMatchObject({ arguments: args });
        expect(ofCall.find((event) => event.type === "response.output_item.done")).toMatchObject({ item: { arguments: args, status: "completed" } });
      }
      expect(final.output).toEqual([
        expect.objectContaining({ call_id: ownId("call_L"), arguments: '{"city":"Lima"}' }),
        expect.objectContaining({ call_id: ownId("call_R"), arguments: '{"city":"Rome"}' }),
      ]);
    });

    it("keeps text that comes after a call began in the answer, without streaming it into the message already done", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: "Checking. " }),
          chunk({ tool_calls: [{ index: 0, id: "call_P", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] }),
          chunk({ content: "One moment." }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Paris?");
      expect(eventsAfterDone(events)).toEqual([]);
      expect(events.find((event) => event.type === "response.output_item.done")).toMatchObject({
        output_index: 0,
        item: { type: "message", content: [{ type: "output_text", text: "Checking. " }] },
      });
      const expected = [
        expect.objectContaining({ type: "message", content: [expect.objectContaining({ type: "output_text", text: "Checking. One moment." })] }),
        expect.objectContaining({ type: "function_call", call_id: ownId("call_P"), arguments: '{"city":"Paris"}' }),
      ];
      expect(final.output).toEqual(expected);
      expect((await client.responses.retrieve(final.id)).output).toEqual(expected);
    });
  });

  describe("tool calls the upstream numbered with gaps, or gave no id", () => {
    it("makes each call of a stream whose indexes skip a number one function_call item, in the order they began", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: "Checking." }),
          chunk({ tool_calls: [{ index: 2, id: "call_X", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] }),
          chunk({ tool_calls: [{ index: 5, id: "call_Y", type: "function", function: { name: "get_weather", arguments: '{"city":' } }] }),
          chunk({ tool_calls: [{ index: 5, function: { arguments: '"Bern"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Oslo and Bern?");
      expect(events.some((event) => event.type === "error")).toBe(false);
      const calls = [
        { type: "function_call", call_id: ownId("call_X"), name: "get_weather", arguments: '{"city":"Oslo"}', status: "completed" },
        { type: "function_call", call_id: ownId("call_Y"), name: "get_weather", arguments: '{"city":"Bern"}', status: "completed" },
      ];
      const expected = [expect.objectContaining({ type: "message" }), ...calls.map((call) => expect.objectContaining(call))];
      expect(events.at(-1)).toMatchObject({ type: "response.completed" });
      expect(final.output).toEqual(expected);
      const done = events.filter((event) => event.type === "response.output_item.done");
      expect(done.map((event) => event.output_index)).toEqual([0, 1, 2]);
      expect((await client.responses.retrieve(final.id)).output).toEqual(expected);
    });

    it("makes a lone call numbered 1 (no call 0) one function_call item", async () => {
      gateway.upstream.next(
        stream([
          chunk({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 1, id: "call_one", type: "function", function: { name: "get_weather", arguments: "" } }],
          }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: '{"city":"Rome"}' } }] }),
          chunk({}, "tool_calls"),
        ]),
      );
      const { events, final } = await streamed("Weather in Rome?");
      expect(events.some((event) => event.type === "error")).toBe(false);
      expect(final.output).toEqual([
        expect.objectContaining({ type: "function_call", call_id: ownId("call_one"), name: "get_weather", arguments: '{"city":"Rome"}' }),
      ]);
    });

    it("gives a plain (non-streamed) call without an id one of its own, the same in the answer, what is stored and what is continued", async () => {
      const withoutId = toolCallCompletion("get_weather", '{"city":"Lyon"}');
      const [choice] = withoutId.choices as { message: { tool_calls: Record<string, unknown>[] } }[];
      delete choice!.message.tool_calls[0]!.id;
      gateway.upstream.next(reply(withoutId), reply(completion("Mild.")));
      const response = await client.responses.create({ model: "project-zero", input: "Weather in Lyon?", tools });
      const item = response.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      expect(item).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Lyon"}' });
      expect(item.call_id).toMatch(/^call_\w+$/);
      expect((await client.responses.retrieve(response.id)).output).toEqual([expect.objectContaining({ call_id: item.call_id })]);

      await client.responses.create({
        model: "project-zero",
        previous_response_id: response.id,
        input: [{ type: "function_call_output", call_id: item.call_id, output: '{"sky":"blue"}' }],
        tools,
      });
      expect(gateway.upstream.requests[1]!.body.messages).toEqual([
        { role: "user", content: "Weather in Lyon?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: item.call_id, type: "function", function: { name: "get_weather", arguments: '{"city":"Lyon"}' } }],
        },
        { role: "tool", tool_call_id: item.call_id, content: '{"sky":"blue"}' },
      ]);
    });
  });

  describe("usage", () => {
    const cachedUsage = {
      prompt_tokens: 20,
      completion_tokens: 4,
      total_tokens: 24,
      prompt_tokens_details: { cached_tokens: 8, cache_write_tokens: 6 },
      completion_tokens_details: { reasoning_tokens: 2 },
    };
    const expectedUsage = {
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 8, cache_write_tokens: 6 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 24,
    };

    it("carries the upstream's cache writes and reads in a plain answer and what is stored", async () => {
      gateway.upstream.next(reply(completion("Hi.", { usage: cachedUsage })));
      const response = await client.responses.create({ model: "project-zero", input: "hi" });
      expect(response.usage).toEqual(expectedUsage);
      expect((await client.responses.retrieve(response.id)).usage).toEqual(expectedUsage);
    });

    it("carries them in a streamed answer's response.completed", async () => {
      gateway.upstream.next(stream([chunk({ role: "assistant", content: "Hi." }), chunk({}, "stop"), { ...chunk({}), choices: [], usage: cachedUsage }]));
      const { events, final } = await streamed("hi");
      expect(events.at(-1)).toMatchObject({ type: "response.completed", response: { usage: expectedUsage } });
      expect(final.usage).toEqual(expectedUsage);
    });

    it("gives every count OpenAI's ResponseUsage requires, zero when the upstream gave no details", async () => {
      gateway.upstream.next(reply(completion("Hi.")));
      const response = await client.responses.create({ model: "project-zero", input: "hi" });
      expect(response.usage).toEqual({
        input_tokens: 9,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: 3,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 12,
      } satisfies OpenAI.Responses.ResponseUsage);
    });
  });
});
