import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, stream, textChunks, toolCallCompletion } from "./support/fake-upstream.js";
import { openAiClient, startGateway } from "./support/gateway.js";
import { MAX_REFERENCED_RESPONSES } from "../../src/chat/responses/responses-gateway.js";

// `{type: "item_reference", id}` in `input` stands for an item of a stored
// response, as the AI SDK sends an earlier answer back when `store` is on.
describe("item references in a Responses input", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let account: TestAccount;
  let client: OpenAI;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    account = await createAccountWithKey(app, ["chat"]);
    client = openAiClient(app, account.apiKey);
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  const reference = (id: string) => ({ type: "item_reference" as const, id });

  it("stand for the output and input items they name, of plain and streamed responses", async () => {
    upstream.next(reply(completion("Paris.")), stream(textChunks(["Lyon", "."])), reply(completion("Both in France.")));
    const plain = await client.responses.create({ model: "project-zero", input: "Capital?" });
    const streamed = await client.responses.stream({ model: "project-zero", input: "Second city?" }).finalResponse();
    const listed = await client.responses.inputItems.list(plain.id);
    const asked = listed.data[0]!;

    await client.responses.create({
      model: "project-zero",
      input: [reference(asked.id), reference(plain.output[0]!.id!), reference(streamed.output[0]!.id!), { role: "user", content: "Where are they?" }],
    });
    expect(upstream.requests[2]!.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Capital?" }] },
      { role: "assistant", content: "Paris." },
      { role: "assistant", content: "Lyon." },
      { role: "user", content: "Where are they?" },
    ]);
  });

  it("stand for a function call, whose output follows as sent", async () => {
    upstream.next(reply(toolCallCompletion("weather", '{"city":"Paris"}')), reply(completion("Sunny.")));
    const calling = await client.responses.create({
      model: "project-zero",
      input: "Weather in Paris?",
      tools: [{ type: "function", name: "weather", parameters: {}, strict: false }],
    });
    const call = calling.output.find((item) => item.type === "function_call")!;
    await client.responses.create({
      model: "project-zero",
      input: [{ role: "user", content: "Weather in Paris?" }, reference(call.id!), { type: "function_call_output", call_id: "call_abc123", output: "sunny" }],
    });
    expect(upstream.requests[1]!.body.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_abc123", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_abc123", content: "sunny" },
    ]);
  });

  it("to an item not stored here, another account's, or one of a response made with store: false, are missing like an unknown response", async () => {
    upstream.next(reply(completion("Mine.")), reply(completion("Not kept.")));
    const mine = await client.responses.create({ model: "project-zero", input: "hi" });
    const unstored = await client.responses.create({ model: "project-zero", input: "hi", store: false });
    const stranger = openAiClient(app, (await createAccountWithKey(app, ["chat"])).apiKey);
    const refusals = [
      () => stranger.responses.create({ model: "project-zero", input: [reference(mine.output[0]!.id!)] }),
      () => client.responses.create({ model: "project-zero", input: [reference(unstored.output[0]!.id!)] }),
      () => client.responses.create({ model: "project-zero", input: [reference("msg_abc")] }),
      () => client.responses.create({ model: "project-zero", input: [reference(`msg_${"0".repeat(32)}`)] }),
    ];
    for (const refusal of refusals) await expect(refusal()).rejects.toMatchObject({ status: 404, error: { param: "input", type: "not_found" } });
    await expect(client.responses.create({ model: "project-zero", input: [{ type: "item_reference" } as never] })).rejects.toMatchObject({
      status: 400,
      error: { param: "input" },
    });
    expect(upstream.requests).toHaveLength(2);
  });

  it("may name items of at most MAX_REFERENCED_RESPONSES responses in one request, each looked up", async () => {
    const references = Array.from({ length: MAX_REFERENCED_RESPONSES + 1 }, (_, i) => reference(`msg_${i.toString(16).padStart(32, "0")}`));
    await expect(client.responses.create({ model: "project-zero", input: references })).rejects.toMatchObject({
      status: 400,
      error: { param: "input", message: expect.stringContaining("previous_response_id") },
    });
    expect(upstream.requests).toHaveLength(0);
  });
});
