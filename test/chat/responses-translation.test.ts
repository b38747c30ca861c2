import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { chunk, completion, reply, stream } from "./support/fake-upstream.js";
import { openAiClient, useSdkGateway } from "./support/gateway.js";

// How the Responses API's finer points cross to chat completions and back: refusals, truncation,
// reasoning effort and function outputs given as content items, each as OpenAI's SDK sees it.
describe("/v1/responses translation details", () => {
  const gateway = useSdkGateway();
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });

  const post = (body: unknown) =>
    fetch(`${gateway.app.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${gateway.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const usageChunk = (completionTokens: number) => ({
    ...chunk({}),
    choices: [],
    usage: { prompt_tokens: 5, completion_tokens: completionTokens, total_tokens: 5 + completionTokens },
  });

  describe("refusals", () => {
    it("streams an upstream refusal as a refusal part with response.refusal.delta and .done, which the SDK reports", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: null, refusal: "" }),
          chunk({ refusal: "I can't " }),
          chunk({ refusal: "help with that." }),
          chunk({}, "stop"),
          usageChunk(2),
        ]),
      );
      const responseStream = client.responses.stream({ model: "project-zero", input: "something forbidden" });
      const deltas: { delta: string; content_index: number; output_index: number; item_id: string }[] = [];
      let done: OpenAI.Responses.ResponseRefusalDoneEvent | undefined;
      responseStream.on("response.refusal.delta", (event) => deltas.push(event));
      responseStream.on("response.refusal.done", (event) => {
        done = event;
      });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of responseStream) events.push(event);
      const final = await responseStream.finalResponse();

      expect(events.map((event) => event.type)).toEqual([
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.refusal.delta",
        "response.refusal.delta",
        "response.refusal.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
      ]);
      const added = events.find((event) => event.type === "response.content_part.added");
      expect(added).toMatchObject({ content_index: 0, output_index: 0, part: { type: "refusal", refusal: "" } });
      const message = final.output[0]!;
      expect(deltas.map((event) => event.delta)).toEqual(["I can't ", "help with that."]);
      expect(deltas[0]).toMatchObject({ content_index: 0, output_index: 0, item_id: message.id });
      expect(done).toMatchObject({ refusal: "I can't help with that.", content_index: 0, output_index: 0, item_id: message.id });
      expect(events.find((event) => event.type === "response.content_part.done")).toMatchObject({
        part: { type: "refusal", refusal: "I can't help with that." },
      });
      expect(final.status).toBe("completed");
      // (The SDK's final response adds `parsed: null` to each part.)
      expect(final.output).toEqual([
        expect.objectContaining({
          type: "message",
          status: "completed",
          content: [expect.objectContaining({ type: "refusal", refusal: "I can't help with that." })],
        }),
      ]);
      expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    });

    it("gives streamed text and a refusal after it a content part each, in the order they came", async () => {
      gateway.upstream.next(
        stream([
          chunk({ role: "assistant", content: "" }),
          chunk({ content: "Sure. " }),
          chunk({ refusal: "But not " }),
          chunk({ refusal: "that." }),
          chunk({}, "stop"),
          usageChunk(3),
        ]),
      );
      const responseStream = client.responses.stream({ model: "project-zero", input: "two things" });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of responseStream) events.push(event);
      const final = await responseStream.finalResponse();
      const summary = events.filter((event) => "content_index" in event).map((event) => `${event.type}@${(event as { content_index: number }).content_index}`);
      expect(summary).toEqual([
        "response.content_part.added@0",
        "response.output_text.delta@0",
        "response.output_text.done@0",
        "response.content_part.done@0",
        "response.content_part.added@1",
        "response.refusal.delta@1",
        "response.refusal.delta@1",
        "response.refusal.done@1",
        "response.content_part.done@1",
      ]);
      expect(final.output).toEqual([
        expect.objectContaining({
          type: "message",
          content: [
            expect.objectContaining({ type: "output_text", text: "Sure. ", annotations: [], logprobs: [] }),
            expect.objectContaining({ type: "refusal", refusal: "But not that." }),
          ],
        }),
      ]);
      expect(final.output_text).toBe("Sure. ");
    });

    it("answers a plain (non-streamed) refusal as a refusal part, and keeps text beside a refusal", async () => {
      gateway.upstream.next(
        reply(
          completion(null, { choices: [{ index: 0, message: { role: "assistant", content: null, refusal: "No." }, logprobs: null, finish_reason: "stop" }] }),
        ),
        reply(
          completion(null, {
            choices: [{ index: 0, message: { role: "assistant", content: "Partly. ", refusal: "No more." }, logprobs: null, finish_reason: "stop" }],
          }),
        ),
      );
      const refused = await client.responses.create({ model: "project-zero", input: "forbidden" });
      expect(refused.output).toEqual([expect.objectContaining({ type: "message", content: [{ type: "refusal", refusal: "No." }] })]);
      const mixed = await client.responses.create({ model: "project-zero", input: "half forbidden" });
      expect(mixed.output).toEqual([
        expect.objectContaining({
          content: [
            { type: "output_text", text: "Partly. ", annotations: [], logprobs: [] },
            { type: "refusal", refusal: "No more." },
          ],
        }),
      ]);
    });
  });

  describe("a truncated answer", () => {
    it("marks the message item incomplete in a plain answer and in what is stored", async () => {
      gateway.upstream.next(
        reply(
          completion("Once upon a", {
            choices: [{ index: 0, message: { role: "assistant", content: "Once upon a", refusal: null }, logprobs: null, finish_reason: "length" }],
          }),
        ),
      );
      const response = await client.responses.create({ model: "project-zero", input: "Tell a story", max_output_tokens: 3 });
      expect(response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
      expect(response.output).toEqual([expect.objectContaining({ type: "message", status: "incomplete" })]);
      const stored = await client.responses.retrieve(response.id);
      expect(stored).toMatchObject({ status: "incomplete", output: [{ type: "message", status: "incomplete" }] });
    });

    it("marks it incomplete in a stream's output_item.done, its response.incomplete and what is stored", async () => {
      gateway.upstream.next(stream([chunk({ role: "assistant", content: "" }), chunk({ content: "Once upon" }), chunk({}, "length"), usageChunk(2)]));
      const responseStream = client.responses.stream({ model: "project-zero", input: "Tell a story", max_output_tokens: 2 });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of responseStream) events.push(event);
      const final = await responseStream.finalResponse();
      const itemDone = events.find((event) => event.type === "response.output_item.done");
      expect(itemDone).toMatchObject({ item: { type: "message", status: "incomplete" } });
      expect(events.at(-1)).toMatchObject({
        type: "response.incomplete",
        response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [{ type: "message", status: "incomplete" }] },
      });
      expect(final.output).toEqual([expect.objectContaining({ type: "message", status: "incomplete" })]);
      const stored = await client.responses.retrieve(final.id);
      expect(stored.output).toEqual([expect.objectContaining({ type: "message", status: "incomplete" })]);
    });

    it("says the content filter cut it, plain and streamed", async () => {
      gateway.upstream.next(
        reply(
          completion("I cannot", {
            choices: [{ index: 0, message: { role: "assistant", content: "I cannot", refusal: null }, logprobs: null, finish_reason: "content_filter" }],
          }),
        ),
      );
      const plain = await client.responses.create({ model: "project-zero", input: "Tell a story" });
      expect(plain).toMatchObject({
        status: "incomplete",
        incomplete_details: { reason: "content_filter" },
        output: [{ type: "message", status: "incomplete" }],
      });
      gateway.upstream.next(stream([chunk({ role: "assistant", content: "" }), chunk({ content: "I cannot" }), chunk({}, "content_filter"), usageChunk(2)]));
      const final = await client.responses.stream({ model: "project-zero", input: "Tell a story" }).finalResponse();
      expect(final).toMatchObject({ status: "incomplete", incomplete_details: { reason: "content_filter" } });
    });

    it("still marks a finished message completed", async () => {
      gateway.upstream.next(reply(completion("Done.")));
      const response = await client.responses.create({ model: "project-zero", input: "hi" });
      expect(response.output).toEqual([expect.objectContaining({ type: "message", status: "completed" })]);
    });
  });

  describe("reasoning", () => {
    it("sends reasoning.effort upstream as reasoning_effort and echoes it", async () => {
      gateway.upstream.next(reply(completion("thought about it")));
      const response = await client.responses.create({ model: "project-zero", input: "Think", reasoning: { effort: "low" } });
      expect(gateway.upstream.requests[0]!.body.reasoning_effort).toBe("low");
      expect(gateway.upstream.requests[0]!.body).not.toHaveProperty("reasoning");
      expect(response.reasoning).toMatchObject({ effort: "low" });
    });

    it("accepts every effort OpenAI documents", async () => {
      gateway.upstream.otherwise(reply(completion("ok")));
      for (const effort of ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const) {
        await client.responses.create({ model: "project-zero", input: "Think", reasoning: { effort } });
      }
      expect(gateway.upstream.requests.map((request) => request.body.reasoning_effort)).toEqual(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);
    });

    it("refuses an effort OpenAI does not document, and a reasoning that is not an object, with a 400 naming the field", async () => {
      await expect(
        client.responses.create({ model: "project-zero", input: "Think", reasoning: { effort: "extreme" as OpenAI.ReasoningEffort } }),
      ).rejects.toMatchObject({ status: 400, error: { type: "invalid_request", param: "reasoning.effort" } });
      const notObject = await post({ model: "project-zero", input: "Think", reasoning: "high" });
      expect(notObject.status).toBe(400);
      expect(await notObject.json()).toMatchObject({ error: { type: "invalid_request", param: "reasoning" } });
      expect(gateway.upstream.requests).toHaveLength(0);
    });

    it("keeps taking a reasoning without effort (a summary chat cannot ask for) and sends no reasoning_effort", async () => {
      gateway.upstream.next(reply(completion("ok")), reply(completion("ok")));
      const summary = await client.responses.create({ model: "project-zero", input: "Think", reasoning: { summary: "auto" } });
      expect(summary.status).toBe("completed");
      const nullEffort = await client.responses.create({ model: "project-zero", input: "Think", reasoning: { effort: null } });
      expect(nullEffort.status).toBe("completed");
      expect(gateway.upstream.requests).toHaveLength(2);
      for (const request of gateway.upstream.requests) expect(request.body).not.toHaveProperty("reasoning_effort");
    });
  });

  describe("function_call_output given as content items", () => {
    const call = { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" } as const;

    it("sends one input_text item as the tool message's text", async () => {
      gateway.upstream.next(reply(completion("Sunny it is.")));
      await client.responses.create({
        model: "project-zero",
        input: [
          { role: "user", content: "Weather?" },
          call,
          { type: "function_call_output", call_id: "call_1", output: [{ type: "input_text", text: '{"sky":"sunny"}' }] },
        ],
      });
      expect(gateway.upstream.requests[0]!.body.messages).toContainEqual({ role: "tool", tool_call_id: "call_1", content: '{"sky":"sunny"}' });
    });

    it("sends several input_text items as the tool message's text parts", async () => {
      gateway.upstream.next(reply(completion("ok")));
      await client.responses.create({
        model: "project-zero",
        input: [
          { role: "user", content: "Weather?" },
          call,
          {
            type: "function_call_output",
            call_id: "call_1",
            output: [
              { type: "input_text", text: "Sky: sunny." },
              { type: "input_text", text: "Wind: none." },
            ],
          },
        ],
      });
      expect(gateway.upstream.requests[0]!.body.messages).toContainEqual({
        role: "tool",
        tool_call_id: "call_1",
        content: [
          { type: "text", text: "Sky: sunny." },
          { type: "text", text: "Wind: none." },
        ],
      });
    });

    it("refuses images and files in a function output, which chat tool messages cannot carry, with a 400 naming input", async () => {
      const outputs = [
        [{ type: "input_image", image_url: "https://example.com/a.png", detail: "auto" }],
        [
          { type: "input_text", text: "see file" },
          { type: "input_file", file_data: "data:application/pdf;base64,AAAA", filename: "a.pdf" },
        ],
        [{ type: "something_else" }],
        ["plain string item"],
      ];
      for (const output of outputs) {
        const response = await post({
          model: "project-zero",
          input: [{ role: "user", content: "Weather?" }, call, { type: "function_call_output", call_id: "call_1", output }],
        });
        expect(response.status).toBe(400);
        const body = (await response.json()) as { error: { type: string; param: string; message: string } };
        expect(body.error).toMatchObject({ type: "invalid_request", param: "input" });
        expect(body.error.message).toContain("input[2].output[");
      }
      expect(gateway.upstream.requests).toHaveLength(0);
    });
  });

  it("takes an input of 200,000 items, as chat completions takes as many messages", async () => {
    gateway.upstream.next(reply(completion("long")));
    const input = Array.from({ length: 200_000 }, () => ({ role: "user" as const, content: "a" }));
    const response = await post({ model: "project-zero", input, store: false });
    expect(response.status).toBe(200);
    expect((gateway.upstream.requests[0]!.body.messages as unknown[]).length).toBe(200_000);
  });

  describe("an answer whose words came after its call began", () => {
    it("is sent back, as its output lists it (the call, then the message), as one assistant turn before the call's result", async () => {
      gateway.upstream.next(
        stream([
          chunk({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: "call_late", type: "function", function: { name: "weather", arguments: '{"city":"Quito"}' } }],
          }),
          chunk({ content: "\n" }),
          chunk({}, "tool_calls"),
        ]),
        reply(completion("Sunny in Quito.")),
      );
      const tools = [{ type: "function" as const, name: "weather", parameters: { type: "object" }, strict: false }];
      const first = await client.responses.stream({ model: "project-zero", input: "Weather in Quito?", tools }).finalResponse();
      expect(first.output.map((item) => item.type)).toEqual(["function_call", "message"]);
      await client.responses.create({
        model: "project-zero",
        tools,
        input: [
          { role: "user", content: "Weather in Quito?" },
          ...(first.output as OpenAI.Responses.ResponseInputItem[]),
          { type: "function_call_output", call_id: "call_late", output: "sunny" },
        ],
      });
      expect(gateway.upstream.requests[1]!.body.messages).toEqual([
        { role: "user", content: "Weather in Quito?" },
        { role: "assistant", content: "\n", tool_calls: [{ id: "call_late", type: "function", function: { name: "weather", arguments: '{"city":"Quito"}' } }] },
        { role: "tool", tool_call_id: "call_late", content: "sunny" },
      ]);
    });
  });

  describe("files in a message", () => {
    const pdf = "data:application/pdf;base64,JVBERi0xLjQK";

    it("sends an input_file with its data (the AI SDK's PDF part) as chat's file part, and lists it among the input items", async () => {
      gateway.upstream.next(reply(completion("A one-page PDF.")));
      const response = await client.responses.create({
        model: "project-zero",
        input: [
          {
            role: "user",
            content: [
              { type: "input_text", text: "What is in it?" },
              { type: "input_file", filename: "report.pdf", file_data: pdf },
            ],
          },
        ],
      });
      expect(response.output_text).toBe("A one-page PDF.");
      expect(gateway.upstream.requests[0]!.body.messages).toEqual([
        {
          role: "user",
          content: [
            { type: "text", text: "What is in it?" },
            { type: "file", file: { filename: "report.pdf", file_data: pdf } },
          ],
        },
      ]);
      const items = await client.responses.inputItems.list(response.id);
      expect(items.data[0]).toMatchObject({ content: [{ type: "input_text" }, { type: "input_file", filename: "report.pdf", file_data: pdf }] });
    });

    it("refuses a file by id or by URL, which needs a file store this service does not have, with a 400 naming input", async () => {
      for (const [file, reason] of [
        [{ type: "input_file", file_id: "file-abc" }, "file_id"],
        [{ type: "input_file", file_url: "https://example.com/a.pdf" }, "file_url"],
        [{ type: "input_file", filename: "empty.pdf" }, "file_data"],
      ] as const) {
        const response = await post({ model: "project-zero", input: [{ role: "user", content: [{ type: "input_text", text: "Read it" }, file] }] });
        expect(response.status).toBe(400);
        const body = (await response.json()) as { error: { type: string; param: string; message: string } };
        expect(body.error).toMatchObject({ type: "invalid_request", param: "input" });
        expect(body.error.message).toContain("input[0].content[1]");
        expect(body.error.message).toContain(reason);
      }
      expect(gateway.upstream.requests).toHaveLength(0);
    });
  });

  describe("tool options with no tools", () => {
    // OpenAI's chat completions refuses tool_choice and parallel_tool_calls without tools ("only allowed
    // when 'tools' are specified"), while its Responses API takes them and echoes them whatever the tools.
    it("sends neither tool_choice nor parallel_tool_calls upstream when no tool is sent, and still echoes them", async () => {
      gateway.upstream.otherwise(reply(completion("ok")));
      const bodies: OpenAI.Responses.ResponseCreateParamsNonStreaming[] = [
        { model: "project-zero", input: "hi", parallel_tool_calls: false },
        { model: "project-zero", input: "hi", tool_choice: "none" },
        { model: "project-zero", input: "hi", tool_choice: "auto", tools: [] },
      ];
      const answers = [];
      for (const body of bodies) answers.push(await client.responses.create(body));
      for (const request of gateway.upstream.requests) {
        expect(request.body).not.toHaveProperty("tool_choice");
        expect(request.body).not.toHaveProperty("parallel_tool_calls");
        expect(request.body).not.toHaveProperty("tools");
      }
      expect(answers[0]!.parallel_tool_calls).toBe(false);
      expect(answers[1]!.tool_choice).toBe("none");
    });

    it("still sends them beside tools", async () => {
      gateway.upstream.next(reply(completion("ok")));
      await client.responses.create({
        model: "project-zero",
        input: "hi",
        tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} }, strict: false }],
        tool_choice: "required",
        parallel_tool_calls: false,
      });
      expect(gateway.upstream.requests[0]!.body).toMatchObject({ tool_choice: "required", parallel_tool_calls: false });
    });
  });

  describe("function tools echoed", () => {
    it("echoes each function tool with the fields the SDK types require, strict null when not given", async () => {
      gateway.upstream.next(reply(completion("ok")));
      const response = await post({
        model: "project-zero",
        input: "hi",
        tools: [
          { type: "function", name: "f" },
          { type: "function", name: "g", description: "G", parameters: { type: "object", properties: {} }, strict: true },
        ],
      });
      const body = (await response.json()) as { tools: unknown[] };
      expect(body.tools).toEqual([
        { type: "function", name: "f", description: null, parameters: null, strict: null },
        { type: "function", name: "g", description: "G", parameters: { type: "object", properties: {} }, strict: true },
      ]);
      expect(gateway.upstream.requests[0]!.body.tools).toEqual([
        { type: "function", function: { name: "f" } },
        { type: "function", function: { name: "g", description: "G", parameters: { type: "object", properties: {} }, strict: true } },
      ]);
    });
  });

  describe("an answer replayed as input items", () => {
    it("sends a message and the function calls after it as one assistant turn, as a previous_response_id chain does", async () => {
      gateway.upstream.next(reply(completion("ok")));
      await client.responses.create({
        model: "project-zero",
        input: [
          { role: "user", content: "weather?" },
          // An earlier response's output, as a stateless client sends it back.
          { type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Let me check.", annotations: [] }] },
          { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" },
          { type: "function_call", call_id: "call_2", name: "get_time", arguments: "{}" },
          { type: "function_call_output", call_id: "call_1", output: "sunny" },
          { type: "function_call_output", call_id: "call_2", output: "noon" },
        ],
        tools: [{ type: "function", name: "get_weather", parameters: null, strict: false }],
      });
      expect(gateway.upstream.requests[0]!.body.messages).toEqual([
        { role: "user", content: "weather?" },
        {
          role: "assistant",
          content: "Let me check.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } },
            { id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
        { role: "tool", tool_call_id: "call_2", content: "noon" },
      ]);
    });

    it("keeps an assistant turn that already ended in tool results apart from the calls of the next", async () => {
      gateway.upstream.next(reply(completion("ok")));
      await client.responses.create({
        model: "project-zero",
        input: [
          { role: "user", content: "weather?" },
          { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" },
          { type: "function_call_output", call_id: "call_1", output: "sunny" },
          { type: "function_call", call_id: "call_2", name: "get_weather", arguments: "{}" },
          { type: "function_call_output", call_id: "call_2", output: "still sunny" },
        ],
      });
      const messages = gateway.upstream.requests[0]!.body.messages as { role: string }[];
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    });
  });
});
