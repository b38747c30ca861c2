import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, stream, textChunks, toolCallCompletion } from "./support/fake-upstream.js";
import { recordingFetch, startGateway } from "./support/gateway.js";

// The OpenAI Agents SDK with its default model class, which speaks the Responses API.
describe("the OpenAI Agents SDK with its default (Responses) model", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  const called: string[] = [];

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    setTracingDisabled(true);
    setDefaultOpenAIClient(
      new OpenAI({
        baseURL: `${app.url}/v1`,
        apiKey,
        maxRetries: 0,
        fetch: recordingFetch(called),
      }),
    );
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.reset();
    called.length = 0;
  });

  it("runs an agent that calls a function tool, then answers", async () => {
    upstream.next(reply(toolCallCompletion("lookup_hours", '{"day":"monday"}')), reply(completion("We open at nine on Monday.")));
    const lookupHours = tool({
      name: "lookup_hours",
      description: "Opening hours for a day",
      parameters: z.object({ day: z.string() }),
      execute: async ({ day }) => `${day}: 9:00-17:00`,
    });
    const agent = new Agent({ name: "Front desk", instructions: "Answer briefly.", model: "project-zero", tools: [lookupHours] });
    const result = await run(agent, "When do you open on Monday?");
    expect(result.finalOutput).toBe("We open at nine on Monday.");
    expect(called).toEqual(["/v1/responses", "/v1/responses"]);
    const second = upstream.requests[1]!.body.messages as { role: string; content: unknown }[];
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_abc123", content: "monday: 9:00-17:00" });
  });

  it("streams a run", async () => {
    upstream.next(stream(textChunks(["Hello", " there"])));
    const agent = new Agent({ name: "Greeter", instructions: "Greet.", model: "project-zero" });
    const result = await run(agent, "Hi", { stream: true });
    let text = "";
    for await (const chunk of result.toTextStream()) text += chunk;
    await result.completed;
    expect(text).toBe("Hello there");
    expect(result.finalOutput).toBe("Hello there");
    expect(called).toEqual(["/v1/responses"]);
  });
});
