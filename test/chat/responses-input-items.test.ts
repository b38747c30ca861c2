import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { completion, reply, stream, textChunks, toolCallCompletion } from "./support/fake-upstream.js";
import { expectOpenAiError, openAiClient, useSdkGateway } from "./support/gateway.js";

// GET /v1/responses/{id}/input_items, as the official SDK's responses.inputItems.list calls it.
describe("GET /v1/responses/{id}/input_items", () => {
  const gateway = useSdkGateway();
  let other: TestAccount;
  let client: OpenAI;
  beforeAll(async () => {
    other = await createAccountWithKey(gateway.app, ["chat"]);
    client = openAiClient(gateway.app, gateway.apiKey);
  });

  /** Every item of a response's input, through the SDK's auto-paging. */
  async function allItems(id: string, query: OpenAI.Responses.InputItemListParams = {}): Promise<OpenAI.Responses.ResponseItem[]> {
    const items: OpenAI.Responses.ResponseItem[] = [];
    for await (const item of client.responses.inputItems.list(id, query)) items.push(item);
    return items;
  }

  const get = (path: string, apiKey = gateway.apiKey, method = "GET") =>
    fetch(`${gateway.app.url}${path}`, { method, headers: { authorization: `Bearer ${apiKey}` } });

  it("lists a string input as one user message with input_text content, in OpenAI's list shape", async () => {
    gateway.upstream.next(reply(completion("Bonjour!")));
    const response = await client.responses.create({ model: "project-zero", instructions: "Answer in French.", input: "Say hello" });
    const page = await client.responses.inputItems.list(response.id);
    expect(page.data).toEqual([
      {
        id: expect.stringMatching(/^msg_[0-9a-f]+$/),
        type: "message",
        status: "completed",
        role: "user",
        content: [{ type: "input_text", text: "Say hello" }],
      },
    ]);
    const raw = await (await get(`/v1/responses/${response.id}/input_items`)).json();
    expect(raw).toEqual({ object: "list", data: page.data, first_id: page.data[0]!.id, last_id: page.data[0]!.id, has_more: false });
    // The instructions and the answer are not input items.
    expect(JSON.stringify(raw)).not.toMatch(/French|Bonjour/);
  });

  it("lists message items as sent, string content as content parts, the client's ids kept and the others made", async () => {
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { role: "developer", content: "Be brief." },
      { type: "message", role: "user", content: [{ type: "input_text", text: "First question" }] },
      {
        type: "message",
        id: "msg_client_given",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "First answer", annotations: [] }],
      },
      { role: "assistant", content: "Second answer" },
      { role: "user", content: "Second question" },
    ];
    const response = await client.responses.create({ model: "project-zero", input });
    const items = await allItems(response.id, { order: "asc" });
    expect(items).toEqual([
      { id: expect.stringMatching(/^msg_/), type: "message", status: "completed", role: "developer", content: [{ type: "input_text", text: "Be brief." }] },
      { id: expect.stringMatching(/^msg_/), type: "message", status: "completed", role: "user", content: [{ type: "input_text", text: "First question" }] },
      {
        id: "msg_client_given",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "First answer", annotations: [] }],
      },
      {
        id: expect.stringMatching(/^msg_/),
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Second answer", annotations: [] }],
      },
      { id: expect.stringMatching(/^msg_/), type: "message", status: "completed", role: "user", content: [{ type: "input_text", text: "Second question" }] },
    ]);
    expect(new Set(items.map((item) => item.id)).size).toBe(items.length);
  });

  it("lists a function_call_output round trip: the call and its output, each with an id, and only this request's input", async () => {
    gateway.upstream.next(reply(toolCallCompletion("get_weather", '{"city":"Paris"}')), reply(completion("It is sunny in Paris.")));
    const tools: OpenAI.Responses.Tool[] = [
      { type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false },
    ];
    const first = await client.responses.create({ model: "project-zero", input: "Weather in Paris?", tools });
    const call = first.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === "function_call")!;
    const second = await client.responses.create({
      model: "project-zero",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: '{"sky":"sunny"}' }],
      tools,
    });
    expect(second.output_text).toBe("It is sunny in Paris.");
    // previous_response_id: only the second request's own input, as OpenAI lists it.
    expect(await allItems(second.id)).toEqual([
      { id: expect.stringMatching(/^fco_/), type: "function_call_output", status: "completed", call_id: call.call_id, output: '{"sky":"sunny"}' },
    ]);

    // Sent without previous_response_id, the whole round is this request's input.
    const third = await client.responses.create({
      model: "project-zero",
      input: [
        { role: "user", content: "Weather in Paris?" },
        { type: "function_call", id: call.id, call_id: call.call_id, name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call", call_id: "call_two", name: "get_weather", arguments: '{"city":"Lyon"}' },
        { type: "function_call_output", call_id: call.call_id, output: '{"sky":"sunny"}' },
        { type: "function_call_output", call_id: "call_two", output: [{ type: "input_text", text: "rain" }] },
      ],
      tools,
    });
    const items = await allItems(third.id, { order: "asc" });
    expect(items.map((item) => item.type)).toEqual(["message", "function_call", "function_call", "function_call_output", "function_call_output"]);
    expect(items[1]).toEqual({
      id: call.id,
      type: "function_call",
      status: "completed",
      call_id: call.call_id,
      name: "get_weather",
      arguments: '{"city":"Paris"}',
    });
    expect(items[2]).toMatchObject({ id: expect.stringMatching(/^fc_/), call_id: "call_two", arguments: '{"city":"Lyon"}' });
    expect(items[4]).toMatchObject({ id: expect.stringMatching(/^fco_/), call_id: "call_two", output: [{ type: "input_text", text: "rain" }] });
  });

  it("lists the items of a streamed response too", async () => {
    gateway.upstream.next(stream(textChunks(["Hel", "lo"])));
    const responseStream = client.responses.stream({ model: "project-zero", input: [{ role: "user", content: "Say hello" }] });
    for await (const _event of responseStream) {
      // drained
    }
    const final = await responseStream.finalResponse();
    expect(await allItems(final.id)).toMatchObject([{ type: "message", role: "user", content: [{ type: "input_text", text: "Say hello" }] }]);
  });

  it("orders desc by default and asc when asked, with the same ids on every read", async () => {
    const input = ["one", "two", "three"].map((text) => ({ role: "user" as const, content: text }));
    const response = await client.responses.create({ model: "project-zero", input });
    const texts = (items: OpenAI.Responses.ResponseItem[]) =>
      items.map((item) => (item.type === "message" && item.content[0]?.type === "input_text" ? item.content[0].text : "?"));
    const byDefault = await allItems(response.id);
    const desc = await allItems(response.id, { order: "desc" });
    const asc = await allItems(response.id, { order: "asc" });
    expect(texts(byDefault)).toEqual(["three", "two", "one"]);
    expect(desc).toEqual(byDefault);
    expect(texts(asc)).toEqual(["one", "two", "three"]);
    expect(asc.map((item) => item.id)).toEqual(
      desc
        .map((item) => item.id)
        .slice()
        .reverse(),
    );
    expect(await allItems(response.id, { order: "asc" })).toEqual(asc);
  });

  it("pages with limit and after: has_more, first_id and last_id, and the SDK's auto-paging walks every page", async () => {
    const input = Array.from({ length: 5 }, (_, i) => ({ role: "user" as const, content: `item ${i}` }));
    const response = await client.responses.create({ model: "project-zero", input });
    const all = await allItems(response.id, { order: "asc" });
    const ids = all.map((item) => item.id);
    expect(ids).toHaveLength(5);

    const first = await client.responses.inputItems.list(response.id, { order: "asc", limit: 2 });
    expect(first.data.map((item) => item.id)).toEqual(ids.slice(0, 2));
    expect(first.has_more).toBe(true);
    const second = await first.getNextPage();
    expect(second.data.map((item) => item.id)).toEqual(ids.slice(2, 4));
    const third = await second.getNextPage();
    expect(third.data.map((item) => item.id)).toEqual(ids.slice(4));
    expect(third.has_more).toBe(false);
    expect(third.hasNextPage()).toBe(false);

    const raw = await (await get(`/v1/responses/${response.id}/input_items?order=asc&limit=2&after=${ids[1]}`)).json();
    expect(raw).toMatchObject({ object: "list", first_id: ids[2], last_id: ids[3], has_more: true });
    const descPage = await (await get(`/v1/responses/${response.id}/input_items?limit=3&after=${ids[3]}`)).json();
    expect(descPage).toMatchObject({ first_id: ids[2], last_id: ids[0], has_more: false });
    const last = await (await get(`/v1/responses/${response.id}/input_items?order=asc&after=${ids[4]}`)).json();
    expect(last).toEqual({ object: "list", data: [], first_id: null, last_id: null, has_more: false });

    // Auto-paging with a small limit reads the same items as one page.
    expect(await allItems(response.id, { order: "asc", limit: 2 })).toEqual(all);
    // `include` is accepted (the items are always whole).
    const included = await client.responses.inputItems.list(response.id, { include: ["message.input_image.image_url"], limit: 100 });
    expect(included.data).toHaveLength(5);
  });

  it("is the same 404 for another account's response, an unknown id and a store: false response; a key without chat is 403", async () => {
    const response = await client.responses.create({ model: "project-zero", input: "mine" });
    const stranger = openAiClient(gateway.app, other.apiKey);
    await expect(stranger.responses.inputItems.list(response.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.inputItems.list("resp_does_not_exist")).rejects.toMatchObject({ status: 404 });
    await expectOpenAiError(await get(`/v1/responses/${response.id}/input_items`, other.apiKey), 404, { type: "not_found" });
    await expectOpenAiError(await get("/v1/responses/resp_does_not_exist/input_items"), 404, { type: "not_found" });
    const strangerBody = await (await get(`/v1/responses/${response.id}/input_items`, other.apiKey)).text();
    const unknownBody = await (await get("/v1/responses/resp_does_not_exist/input_items")).text();
    expect(strangerBody.replace(response.id, "ID")).toBe(unknownBody.replace("resp_does_not_exist", "ID"));

    const ephemeral = await client.responses.create({ model: "project-zero", input: "forget me", store: false });
    await expect(client.responses.inputItems.list(ephemeral.id)).rejects.toMatchObject({ status: 404 });

    await client.responses.delete(response.id);
    await expect(client.responses.inputItems.list(response.id)).rejects.toMatchObject({ status: 404 });

    const readOnly = await createAccountWithKey(gateway.app, ["read"]);
    await expectOpenAiError(await get(`/v1/responses/${response.id}/input_items`, readOnly.apiKey), 403, { code: "insufficient_scope" });
    const noKey = await fetch(`${gateway.app.url}/v1/responses/${response.id}/input_items`);
    expect(noKey.status).toBe(401);
  });

  it("refuses a bad limit, order or after with an OpenAI-shaped 400 naming the param, never a 500", async () => {
    const response = await client.responses.create({ model: "project-zero", input: "hi" });
    const path = `/v1/responses/${response.id}/input_items`;
    const cases: [string, string][] = [
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=-1", "limit"],
      ["limit=1.5", "limit"],
      ["limit=abc", "limit"],
      ["limit=", "limit"],
      ["order=up", "order"],
      ["order=ASC", "order"],
      ["after=msg_not_in_this_response", "after"],
      ["before=msg_not_in_this_response", "before"],
    ];
    for (const [query, param] of cases) {
      await expectOpenAiError(await get(`${path}?${query}`), 400, { type: "invalid_request", param });
    }
    await expect(client.responses.inputItems.list(response.id, { limit: 500 })).rejects.toMatchObject({ status: 400, error: { param: "limit" } });
    // Another method, and a path that is not a response's, are OpenAI-shaped too.
    const post = await get(path, gateway.apiKey, "POST");
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
    await expectOpenAiError(await get("/v1/responses//input_items"), 404, { type: "not_found" });
    await expectOpenAiError(await get("/v1/responses/a/b/input_items"), 404, { type: "not_found" });
    await expectOpenAiError(await get("/v1/responses/%ZZ/input_items"), 404, { type: "not_found" });
  });

  it("lists no items for a response stored before input items were kept", async () => {
    const response = await client.responses.create({ model: "project-zero", input: "from before" });
    await gateway.app.store.db.updateTable("chat_responses").set({ input_items: null }).where("id", "=", response.id).execute();
    expect(await (await get(`/v1/responses/${response.id}/input_items`)).json()).toEqual({
      object: "list",
      data: [],
      first_id: null,
      last_id: null,
      has_more: false,
    });
    // It can still be retrieved and continued.
    expect((await client.responses.retrieve(response.id)).id).toBe(response.id);
  });
});
