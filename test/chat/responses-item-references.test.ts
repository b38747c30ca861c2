import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, stream, textChunks, toolCallCompletion } from "./support/fake-upstream.js";
import { openAiClient, startGateway } from "./support/gateway.js";
import { OPENAI_BODY_MAX_BYTES } from "../../src/api/limits.js";
import { MAX_ITEM_REFERENCES } from "../../src/chat/responses/responses-gateway.js";

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

  it("are at most MAX_ITEM_REFERENCES in one request, and stand for at most a body's bytes: a small request makes no large one", async () => {
    upstream.next(reply(completion("a")), reply(completion("b")), reply(completion("c")));
    const hundredKiB = await client.responses.create({ model: "project-zero", input: [{ role: "user", content: "x".repeat(100 << 10) }] });
    const [asked] = (await client.responses.inputItems.list(hundredKiB.id)).data;
    const tooMany = Array.from({ length: MAX_ITEM_REFERENCES + 1 }, () => reference(hundredKiB.output[0]!.id!));
    await expect(client.responses.create({ model: "project-zero", input: tooMany })).rejects.toMatchObject({ status: 400, error: { param: "input" } });
    // One item named again and again: a 20 KiB request standing for 20 MiB.
    const repeated = Array.from({ length: Math.ceil(OPENAI_BODY_MAX_BYTES / (100 << 10)) + 1 }, () => reference(asked!.id));
    await expect(client.responses.create({ model: "project-zero", input: repeated })).rejects.toMatchObject({ status: 413, error: { param: "input" } });
    // Stored responses whose rows come to more than a body are not read at all.
    const half = "y".repeat(OPENAI_BODY_MAX_BYTES / 2);
    const big = [
      await client.responses.create({ model: "project-zero", input: [{ role: "user", content: half }] }),
      await client.responses.create({ model: "project-zero", input: [{ role: "user", content: half }] }),
    ];
    await expect(client.responses.create({ model: "project-zero", input: big.map((response) => reference(response.output[0]!.id!)) })).rejects.toMatchObject({
      status: 413,
    });
    expect(upstream.requests).toHaveLength(3);
  });

  it("to an unknown id quote at most the start of it", async () => {
    const id = `msg_${"f".repeat(100_000)}`;
    const refused = await fetch(`${app.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", input: [reference(id)] }),
    });
    expect(refused.status).toBe(404);
    expect((await refused.text()).length).toBeLessThan(1000);
  });
});
