import { type AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { completion, reply, stream, textChunks, toolCallCompletion, ownId } from "./support/fake-upstream.js";
import { useSdkGateway } from "./support/gateway.js";

// LangChain's ChatOpenAI with `useResponsesApi: true` calls /v1/responses for invoke, stream and tools.
describe("LangChain ChatOpenAI over the Responses API", () => {
  const gateway = useSdkGateway();
  let model: ChatOpenAI;

  beforeAll(() => {
    model = new ChatOpenAI({
      model: "project-zero",
      apiKey: gateway.apiKey,
      useResponsesApi: true,
      maxRetries: 0,
      configuration: { baseURL: `${gateway.app.url}/v1`, fetch: gateway.fetch },
    });
  });

  it("invoke returns the upstream's text with usage, served through chat completions", async () => {
    gateway.upstream.next(reply(completion("Bonjour from the gateway")));
    const message = await model.invoke([new HumanMessage("Say hello in French")]);
    expect(message.text).toBe("Bonjour from the gateway");
    expect(message.usage_metadata).toMatchObject({ input_tokens: 9, output_tokens: 3, total_tokens: 12 });
    expect(gateway.called).toEqual(["/v1/responses"]);
    expect(gateway.upstream.requests[0]!.path).toBe("/v1/chat/completions");
    expect(gateway.upstream.requests[0]!.body.messages).toEqual([{ role: "user", content: "Say hello in French" }]);
  });

  it("stream yields the deltas in order", async () => {
    gateway.upstream.next(stream(textChunks(["Hel", "lo", " there"])));
    const pieces: string[] = [];
    for await (const chunk of await model.stream("Say hello")) {
      if (chunk.text) pieces.push(chunk.text);
    }
    expect(pieces.join("")).toBe("Hello there");
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(gateway.called).toEqual(["/v1/responses"]);
    expect(gateway.upstream.requests[0]!.body.stream).toBe(true);
  });

  it("bindTools: a tool call comes back, and its result continues the conversation", async () => {
    const weather = tool(async ({ city }) => JSON.stringify({ city, sky: "sunny" }), {
      name: "weather",
      description: "Today's weather in a city",
      schema: z.object({ city: z.string() }),
    });
    const withTools = model.bindTools([weather]);
    gateway.upstream.next(reply(toolCallCompletion("weather", '{"city":"Paris"}')), reply(completion("Sunny in Paris.")));

    const question = new HumanMessage("Weather in Paris?");
    const first = await withTools.invoke([question]);
    expect(first.tool_calls).toEqual([expect.objectContaining({ name: "weather", args: { city: "Paris" }, id: ownId("call_abc123") })]);
    const sentTools = gateway.upstream.requests[0]!.body.tools as { type: string; function: { name: string; parameters: unknown } }[];
    expect(sentTools).toEqual([expect.objectContaining({ type: "function", function: expect.objectContaining({ name: "weather" }) })]);

    const result = await weather.invoke(first.tool_calls![0]!);
    expect(result).toBeInstanceOf(ToolMessage);
    const second = await withTools.invoke([question, first as AIMessage, result]);
    expect(second.text).toBe("Sunny in Paris.");
    expect(gateway.called).toEqual(["/v1/responses", "/v1/responses"]);
    const sent = gateway.upstream.requests[1]!.body.messages as { role: string; content: unknown; tool_call_id?: string }[];
    expect(sent.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_abc123" });
    expect(JSON.parse(String(sent.at(-1)!.content))).toEqual({ city: "Paris", sky: "sunny" });
  });
});
