import { createOpenAI } from "@ai-sdk/openai";
import { embed, embedMany, generateText, Output, stepCountIs, streamText, tool } from "ai";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { completion, reply, stream, textChunks, toolCallCompletion } from "./support/fake-upstream.js";
import { useSdkGateway } from "./support/gateway.js";

// The AI SDK's default OpenAI provider, `openai("project-zero")`, speaks the Responses API.
describe("the AI SDK with its defaults", () => {
  const gateway = useSdkGateway({ embeddingModel: "secret-embedder" });
  let openai: ReturnType<typeof createOpenAI>;

  beforeAll(() => {
    openai = createOpenAI({ baseURL: `${gateway.app.url}/v1`, apiKey: gateway.apiKey, fetch: gateway.fetch });
  });

  /** "Weather in Paris?" with a weather tool the loop runs, for two steps. */
  const askWeatherInTwoSteps = () =>
    generateText({
      model: openai("project-zero"),
      prompt: "Weather in Paris?",
      tools: { weather: tool({ description: "Weather", inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, sky: "sunny" }) }) },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    });

  it("generateText", async () => {
    gateway.upstream.next(reply(completion("Hello from the gateway")));
    const result = await generateText({ model: openai("project-zero"), prompt: "Say hello", maxRetries: 0 });
    expect(result.text).toBe("Hello from the gateway");
    expect(result.usage).toMatchObject({ inputTokens: 9, outputTokens: 3 });
    expect(gateway.called).toEqual(["/v1/responses"]);
    expect(gateway.upstream.requests[0]!.path).toBe("/v1/chat/completions");
  });

  it("streamText", async () => {
    gateway.upstream.next(stream(textChunks(["Hel", "lo"])));
    const result = streamText({ model: openai("project-zero"), prompt: "Say hello", maxRetries: 0 });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe("Hello");
    expect(await result.usage).toMatchObject({ inputTokens: 5, outputTokens: 2 });
    expect(gateway.called).toEqual(["/v1/responses"]);
  });

  it("a two-step tool loop", async () => {
    gateway.upstream.next(reply(toolCallCompletion("weather", '{"city":"Paris"}')), reply(completion("Sunny in Paris.")));
    const result = await askWeatherInTwoSteps();
    expect(result.text).toBe("Sunny in Paris.");
    expect(gateway.called).toEqual(["/v1/responses", "/v1/responses"]);
    const second = gateway.upstream.requests[1]!.body.messages as { role: string; content: unknown }[];
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_abc123" });
    expect(JSON.parse(String(second.at(-1)!.content))).toEqual({ city: "Paris", sky: "sunny" });
  });

  it("a second turn of a conversation, its first answer sent back as a reference to the stored item", async () => {
    gateway.upstream.next(reply(completion("Paris is the capital.")), reply(completion("About two million people.")));
    const first = await generateText({ model: openai("project-zero"), prompt: "Capital of France?", maxRetries: 0 });
    const second = await generateText({
      model: openai("project-zero"),
      messages: [{ role: "user", content: "Capital of France?" }, ...first.response.messages, { role: "user", content: "How many live there?" }],
      maxRetries: 0,
    });
    expect(second.text).toBe("About two million people.");
    // The AI SDK sent `{type: "item_reference", id}` for the first answer; the upstream got its words.
    expect(gateway.upstream.requests[1]!.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Capital of France?" }] },
      { role: "assistant", content: "Paris is the capital." },
      { role: "user", content: [{ type: "text", text: "How many live there?" }] },
    ]);
  });

  it("a tool loop whose model says something before it calls (the words and the call sent back as references)", async () => {
    const saysThenCalls = toolCallCompletion("weather", '{"city":"Paris"}');
    (saysThenCalls.choices as { message: { content: string | null } }[])[0]!.message.content = "Let me look that up.";
    gateway.upstream.next(reply(saysThenCalls), reply(completion("Sunny in Paris.")));
    const result = await askWeatherInTwoSteps();
    expect(result.text).toBe("Sunny in Paris.");
    const second = gateway.upstream.requests[1]!.body.messages as Record<string, unknown>[];
    expect(second.slice(1)).toEqual([
      {
        role: "assistant",
        content: "Let me look that up.",
        tool_calls: [{ id: "call_abc123", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }],
      },
      { role: "tool", tool_call_id: "call_abc123", content: JSON.stringify({ city: "Paris", sky: "sunny" }) },
    ]);
  });

  it("structured output (Output.object, which replaces generateObject)", async () => {
    gateway.upstream.next(reply(completion('{"name":"Ada","born":1815}')));
    const { output } = await generateText({
      model: openai("project-zero"),
      output: Output.object({ schema: z.object({ name: z.string(), born: z.number() }) }),
      prompt: "A pioneer",
      maxRetries: 0,
    });
    expect(output).toEqual({ name: "Ada", born: 1815 });
    expect(gateway.upstream.requests[0]!.body.response_format).toMatchObject({ type: "json_schema" });
  });

  it("embed and embedMany", async () => {
    const vectors = (n: number) => ({
      object: "list",
      data: Array.from({ length: n }, (_, index) => ({ object: "embedding", index, embedding: [index, 0.5] })),
      usage: { prompt_tokens: 2, total_tokens: 2 },
    });
    gateway.upstream.next(reply(vectors(1)), reply(vectors(2)));
    const one = await embed({ model: openai.embedding("project-zero"), value: "a", maxRetries: 0 });
    expect(one.embedding).toEqual([0, 0.5]);
    const many = await embedMany({ model: openai.embedding("project-zero"), values: ["a", "b"], maxRetries: 0 });
    expect(gateway.called).toEqual(["/v1/embeddings", "/v1/embeddings"]);
    expect(many.embeddings).toEqual([
      [0, 0.5],
      [1, 0.5],
    ]);
  });
});
