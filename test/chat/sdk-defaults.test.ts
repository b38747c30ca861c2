import { createOpenAI } from "@ai-sdk/openai";
import { embed, embedMany, generateObject, generateText, stepCountIs, streamText, tool } from "ai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, stream, textChunks, toolCallCompletion, UPSTREAM_MODEL } from "./support/fake-upstream.js";
import { recordingFetch, startGateway, UPSTREAM_KEY } from "./support/gateway.js";

// The AI SDK's default OpenAI provider, `openai("project-zero")`, speaks the Responses API.
describe("the AI SDK with its defaults", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let openai: ReturnType<typeof createOpenAI>;
  /** The gateway paths the SDK called: its default model must speak the Responses API. */
  const called: string[] = [];

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    const entry = { name: "SecretCo-0", baseUrl: upstream.url, apiKey: UPSTREAM_KEY, model: UPSTREAM_MODEL, embeddingModel: "secret-embedder" };
    app = await startGateway([upstream], { ZERO_UPSTREAMS: JSON.stringify([entry]) });
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    openai = createOpenAI({
      baseURL: `${app.url}/v1`,
      apiKey,
      fetch: recordingFetch(called),
    });
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.reset();
    called.length = 0;
  });

  it("generateText", async () => {
    upstream.next(reply(completion("Hello from the gateway")));
    const result = await generateText({ model: openai("project-zero"), prompt: "Say hello", maxRetries: 0 });
    expect(result.text).toBe("Hello from the gateway");
    expect(result.usage).toMatchObject({ inputTokens: 9, outputTokens: 3 });
    expect(called).toEqual(["/v1/responses"]);
    expect(upstream.requests[0]!.path).toBe("/v1/chat/completions");
  });

  it("streamText", async () => {
    upstream.next(stream(textChunks(["Hel", "lo"])));
    const result = streamText({ model: openai("project-zero"), prompt: "Say hello", maxRetries: 0 });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe("Hello");
    expect(await result.usage).toMatchObject({ inputTokens: 5, outputTokens: 2 });
    expect(called).toEqual(["/v1/responses"]);
  });

  it("a two-step tool loop", async () => {
    upstream.next(reply(toolCallCompletion("weather", '{"city":"Paris"}')), reply(completion("Sunny in Paris.")));
    const result = await generateText({
      model: openai("project-zero"),
      prompt: "Weather in Paris?",
      tools: { weather: tool({ description: "Weather", inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, sky: "sunny" }) }) },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    });
    expect(result.text).toBe("Sunny in Paris.");
    expect(called).toEqual(["/v1/responses", "/v1/responses"]);
    const second = upstream.requests[1]!.body.messages as { role: string; content: unknown }[];
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_abc123" });
    expect(JSON.parse(String(second.at(-1)!.content))).toEqual({ city: "Paris", sky: "sunny" });
  });

  it("generateObject", async () => {
    upstream.next(reply(completion('{"name":"Ada","born":1815}')));
    const { object } = await generateObject({
      model: openai("project-zero"),
      schema: z.object({ name: z.string(), born: z.number() }),
      prompt: "A pioneer",
      maxRetries: 0,
    });
    expect(object).toEqual({ name: "Ada", born: 1815 });
    expect(upstream.requests[0]!.body.response_format).toMatchObject({ type: "json_schema" });
  });

  it("embed and embedMany", async () => {
    const vectors = (n: number) => ({
      object: "list",
      data: Array.from({ length: n }, (_, index) => ({ object: "embedding", index, embedding: [index, 0.5] })),
      usage: { prompt_tokens: 2, total_tokens: 2 },
    });
    upstream.next(reply(vectors(1)), reply(vectors(2)));
    const one = await embed({ model: openai.embedding("project-zero"), value: "a", maxRetries: 0 });
    expect(one.embedding).toEqual([0, 0.5]);
    const many = await embedMany({ model: openai.embedding("project-zero"), values: ["a", "b"], maxRetries: 0 });
    expect(called).toEqual(["/v1/embeddings", "/v1/embeddings"]);
    expect(many.embeddings).toEqual([
      [0, 0.5],
      [1, 0.5],
    ]);
  });
});
