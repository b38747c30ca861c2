import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { completion, reply, stream, textChunks, toolCallCompletion } from "./support/fake-upstream.js";
import { useSdkGateway } from "./support/gateway.js";

// The OpenAI Agents SDK with its default model class, which speaks the Responses API.
describe("the OpenAI Agents SDK with its default (Responses) model", () => {
  const gateway = useSdkGateway();

  beforeAll(() => {
    setTracingDisabled(true);
    setDefaultOpenAIClient(new OpenAI({ baseURL: `${gateway.app.url}/v1`, apiKey: gateway.apiKey, maxRetries: 0, fetch: gateway.fetch }));
  });

  it("runs an agent that calls a function tool, then answers", async () => {
    gateway.upstream.next(reply(toolCallCompletion("lookup_hours", '{"day":"monday"}')), reply(completion("We open at nine on Monday.")));
    const lookupHours = tool({
      name: "lookup_hours",
      description: "Opening hours for a day",
      parameters: z.object({ day: z.string() }),
      execute: async ({ day }) => `${day}: 9:00-17:00`,
    });
    const agent = new Agent({ name: "Front desk", instructions: "Answer briefly.", model: "project-zero", tools: [lookupHours] });
    const result = await run(agent, "When do you open on Monday?");
    expect(result.finalOutput).toBe("We open at nine on Monday.");
    expect(gateway.called).toEqual(["/v1/responses", "/v1/responses"]);
    const second = gateway.upstream.requests[1]!.body.messages as { role: string; content: unknown }[];
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_abc123", content: "monday: 9:00-17:00" });
  });

  it("streams a run", async () => {
    gateway.upstream.next(stream(textChunks(["Hello", " there"])));
    const agent = new Agent({ name: "Greeter", instructions: "Greet.", model: "project-zero" });
    const result = await run(agent, "Hi", { stream: true });
    let text = "";
    for await (const chunk of result.toTextStream()) text += chunk;
    await result.completed;
    expect(text).toBe("Hello there");
    expect(result.finalOutput).toBe("Hello there");
    expect(gateway.called).toEqual(["/v1/responses"]);
  });
});
