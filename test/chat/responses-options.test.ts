import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { chunk, completion, reply, stream } from "./support/fake-upstream.js";
import { expectOpenAiError, openAiClient, useSdkGateway } from "./support/gateway.js";

// The Responses options beyond the core ones: what cannot be served is refused by name, what chat
// completions can do is translated, the rest is checked and echoed; and the background-only routes.
describe("/v1/responses options", () => {
  const gateway = useSdkGateway();
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });

  const post = (body: Record<string, unknown>) =>
    fetch(`${gateway.app.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${gateway.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", input: "hi", ...body }),
    });
  const call = (path: string, method = "GET", apiKey = gateway.apiKey) =>
    fetch(`${gateway.app.url}${path}`, { method, headers: { authorization: `Bearer ${apiKey}` } });
  const tools: OpenAI.Responses.FunctionTool[] = [{ type: "function", name: "get_weather", parameters: null, strict: null }];

  describe("what this gateway cannot serve", () => {
    it("refuses background mode, a conversation and a stored prompt with a 400 naming the field, streamed or not, before any upstream", async () => {
      const refused: [Record<string, unknown>, string][] = [
        [{ background: true }, "background"],
        [{ background: true, stream: true }, "background"],
        [{ conversation: "conv_abc123" }, "conversation"],
        [{ conversation: { id: "conv_abc123" } }, "conversation"],
        [{ prompt: { id: "pmpt_abc" } }, "prompt"],
        [{ prompt: { id: "pmpt_abc" }, stream: true }, "prompt"],
      ];
      for (const [fields, param] of refused) {
        await expectOpenAiError(await post(fields), 400, { type: "invalid_request", param });
      }
      await expect(client.responses.create({ model: "project-zero", input: "hi", background: true })).rejects.toMatchObject({
        status: 400,
        error: { param: "background" },
      });
      expect(gateway.upstream.requests).toHaveLength(0);
    });

    it("serves background: false (and null) as any other response, echoing background false", async () => {
      gateway.upstream.otherwise(reply(completion("ok")));
      const response = await client.responses.create({ model: "project-zero", input: "hi", background: false });
      expect(response).toMatchObject({ status: "completed", background: false });
      expect((await post({ background: null, conversation: null, prompt: null })).status).toBe(200);
    });
  });

  describe("options with a chat completions form", () => {
    it("sends text.verbosity, safety_identifier, prompt_cache_key, service_tier and top_logprobs upstream under their chat names", async () => {
      gateway.upstream.next(reply(completion("ok")));
      await client.responses.create({
        model: "project-zero",
        input: "hi",
        text: { verbosity: "low" },
        safety_identifier: "user-7",
        prompt_cache_key: "cache-1",
        service_tier: "flex",
        top_logprobs: 3,
        include: ["message.output_text.logprobs"],
        max_tool_calls: 2,
        truncation: "auto",
      });
      const sent = gateway.upstream.requests[0]!.body;
      expect(sent).toMatchObject({
        verbosity: "low",
        safety_identifier: "user-7",
        prompt_cache_key: "cache-1",
        service_tier: "flex",
        logprobs: true,
        top_logprobs: 3,
      });
      // No chat form: accepted and echoed, never sent on.
      for (const name of ["text", "max_tool_calls", "include", "truncation", "background"]) expect(sent).not.toHaveProperty(name);
    });

    it("sends none of them when none is asked for", async () => {
      gateway.upstream.next(reply(completion("ok")));
      await client.responses.create({ model: "project-zero", input: "hi" });
      const sent = gateway.upstream.requests[0]!.body;
      for (const name of ["verbosity", "safety_identifier", "prompt_cache_key", "service_tier", "logprobs", "top_logprobs"])
        expect(sent).not.toHaveProperty(name);
    });

    it("translates an allowed_tools tool_choice to chat's allowed_tools form", async () => {
      gateway.upstream.next(reply(completion("ok")));
      const toolChoice: OpenAI.Responses.ToolChoiceAllowed = { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "get_weather" }] };
      const response = await client.responses.create({ model: "project-zero", input: "hi", tools, tool_choice: toolChoice });
      expect(gateway.upstream.requests[0]!.body.tool_choice).toEqual({
        type: "allowed_tools",
        allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "get_weather" } }] },
      });
      expect(response.tool_choice).toEqual(toolChoice);
    });

    it("refuses a tool_choice OpenAI does not document, or one naming a tool that cannot run here, with a 400 naming tool_choice", async () => {
      const choices = [
        "bogus",
        { type: "allowed_tools", mode: "sometimes", tools: [{ type: "function", name: "get_weather" }] },
        { type: "allowed_tools", mode: "auto", tools: "get_weather" },
        { type: "allowed_tools", mode: "auto", tools: [{ type: "web_search" }] },
        { type: "allowed_tools", mode: "auto", tools: [{ type: "function" }] },
        { type: "file_search" },
      ];
      for (const tool_choice of choices) {
        await expectOpenAiError(await post({ tools, tool_choice }), 400, { type: "invalid_request", param: "tool_choice" });
      }
      expect(gateway.upstream.requests).toHaveLength(0);
    });
  });

  describe("options checked against OpenAI's types", () => {
    it("refuses a wrong type or value with a 400 naming the field, and sends nothing upstream", async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ truncation: 5 }, "truncation"],
        [{ truncation: "middle" }, "truncation"],
        [{ background: "yes" }, "background"],
        [{ include: "message.output_text.logprobs" }, "include"],
        [{ include: ["everything"] }, "include"],
        [{ include: [5] }, "include"],
        [{ tools: [{ type: "function", name: "f", strict: "yes" }] }, "tools"],
        [{ tools: [{ type: "function", name: "f", parameters: "notobject" }] }, "tools"],
        [{ tools: [{ type: "function", name: "f", description: 5 }] }, "tools"],
        [{ text: { format: { type: "json_schema", name: "x", schema: { type: "object" }, strict: "yes" } } }, "text.format"],
        [{ text: { verbosity: "loud" } }, "text.verbosity"],
        [{ reasoning: { summary: "long" } }, "reasoning.summary"],
        [{ safety_identifier: 5 }, "safety_identifier"],
        [{ prompt_cache_key: ["x"] }, "prompt_cache_key"],
        [{ service_tier: "gold" }, "service_tier"],
        [{ top_logprobs: 21 }, "top_logprobs"],
        [{ top_logprobs: -1 }, "top_logprobs"],
        [{ top_logprobs: 1.5 }, "top_logprobs"],
        [{ max_tool_calls: 0 }, "max_tool_calls"],
        [{ max_tool_calls: "2" }, "max_tool_calls"],
      ];
      for (const [fields, param] of cases) {
        const response = await post(fields);
        expect(response.status, JSON.stringify(fields)).toBe(400);
        const { error } = (await response.json()) as { error: { type: string; param: string } };
        expect(error, JSON.stringify(fields)).toMatchObject({ type: "invalid_request", param });
      }
      expect(gateway.upstream.requests).toHaveLength(0);
    });

    it("takes every documented value, and null for each", async () => {
      gateway.upstream.otherwise(reply(completion("ok")));
      const valid: Record<string, unknown>[] = [
        { truncation: "disabled", background: false, include: [], top_logprobs: 0, max_tool_calls: 1 },
        { truncation: null, background: null, include: null, top_logprobs: null, max_tool_calls: null, service_tier: null, safety_identifier: null },
        { include: ["reasoning.encrypted_content", "message.output_text.logprobs", "web_search_call.action.sources"] },
        { tools: [{ type: "function", name: "f", description: null, parameters: null, strict: null }] },
        { tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} }, strict: true }] },
        { text: { format: { type: "json_schema", name: "x", schema: { type: "object" }, strict: null }, verbosity: null } },
        { reasoning: { effort: null, summary: null } },
        ...["auto", "default", "flex", "scale", "priority"].map((service_tier) => ({ service_tier })),
        ...["auto", "concise", "detailed"].map((summary) => ({ reasoning: { summary } })),
        ...["low", "medium", "high"].map((verbosity) => ({ text: { verbosity } })),
      ];
      for (const fields of valid) expect((await post(fields)).status, JSON.stringify(fields)).toBe(200);
    });

    it("counts metadata lengths in characters (code points), as goals are counted", async () => {
      gateway.upstream.otherwise(reply(completion("ok")));
      const emoji = "🙂";
      expect((await post({ metadata: { note: emoji.repeat(512), [emoji.repeat(64)]: "x" } })).status).toBe(200);
      await expectOpenAiError(await post({ metadata: { note: emoji.repeat(513) } }), 400, { param: "metadata" });
      await expectOpenAiError(await post({ metadata: { [emoji.repeat(65)]: "x" } }), 400, { param: "metadata" });
    });
  });

  describe("the response object", () => {
    it("echoes what was asked for, and the fields OpenAI's types require", async () => {
      gateway.upstream.next(reply(completion("ok")));
      const response = await post({
        truncation: "auto",
        reasoning: { effort: "low", summary: "auto" },
        text: { verbosity: "low" },
        max_tool_calls: 2,
        service_tier: "flex",
        safety_identifier: "user-7",
        prompt_cache_key: "cache-1",
        top_logprobs: 3,
        background: false,
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        access_programs: null,
        background: false,
        truncation: "auto",
        reasoning: { effort: "low", summary: "auto" },
        text: { format: { type: "text" }, verbosity: "low" },
        max_tool_calls: 2,
        service_tier: "flex",
        safety_identifier: "user-7",
        prompt_cache_key: "cache-1",
        top_logprobs: 3,
      });
      expect(body).not.toHaveProperty("user");
    });

    it("echoes the defaults when nothing was asked for, with no null where the type has a string or nothing", async () => {
      gateway.upstream.next(reply(completion("ok")), reply(completion("ok")));
      const plain = (await (await post({})).json()) as Record<string, unknown>;
      expect(plain).toMatchObject({ access_programs: null, background: false, truncation: "disabled", reasoning: { effort: null, summary: null } });
      expect(plain).not.toHaveProperty("user");
      const withUser = await client.responses.create({ model: "project-zero", input: "hi", user: "u-1" });
      expect(withUser.user).toBe("u-1");
    });

    it("sends no usage before the answer is in: response.created and response.in_progress leave it out", async () => {
      gateway.upstream.next(stream([chunk({ role: "assistant", content: "" }), chunk({ content: "ok" }), chunk({}, "stop")]));
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      const responseStream = client.responses.stream({ model: "project-zero", input: "hi", truncation: "auto" });
      for await (const event of responseStream) events.push(event);
      const created = events.find((event) => event.type === "response.created");
      const inProgress = events.find((event) => event.type === "response.in_progress");
      for (const event of [created, inProgress]) {
        expect(event).toMatchObject({ response: { truncation: "auto", background: false, access_programs: null } });
        expect((event as { response: object }).response).not.toHaveProperty("usage");
      }
      expect(events.at(-1)).toMatchObject({ type: "response.completed", response: { usage: { total_tokens: expect.any(Number) } } });
    });
  });

  describe("background-only routes", () => {
    it("refuses to stream a stored response again (only background responses can be), and 404s an unknown id", async () => {
      gateway.upstream.next(reply(completion("ok")));
      const { id } = await client.responses.create({ model: "project-zero", input: "hi" });
      await expect(client.responses.retrieve(id, { stream: true })).rejects.toMatchObject({ status: 400, error: { param: "stream" } });
      const again = await call(`/v1/responses/${id}?stream=true`);
      await expectOpenAiError(again, 400, { type: "invalid_request", param: "stream", message: expect.stringContaining("background") });
      await expectOpenAiError(await call("/v1/responses/resp_unknown?stream=true"), 404, { type: "not_found" });
      expect((await call(`/v1/responses/${id}?stream=false`)).status).toBe(200);
    });

    it("refuses to cancel a response not made in background mode, in OpenAI's words; an unknown or another account's id is 404", async () => {
      gateway.upstream.next(reply(completion("ok")));
      const { id } = await client.responses.create({ model: "project-zero", input: "hi" });
      await expect(client.responses.cancel(id)).rejects.toMatchObject({ status: 400 });
      await expectOpenAiError(await call(`/v1/responses/${id}/cancel`, "POST"), 400, {
        type: "invalid_request",
        message: "Only responses created with background=true can be cancelled.",
      });
      await expectOpenAiError(await call("/v1/responses/resp_unknown/cancel", "POST"), 404, { type: "not_found" });
      const other = await createAccountWithKey(gateway.app, ["chat"]);
      await expectOpenAiError(await call(`/v1/responses/${id}/cancel`, "POST", other.apiKey), 404, { type: "not_found" });
      const wrongMethod = await call(`/v1/responses/${id}/cancel`);
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get("allow")).toBe("POST");
      // The response is still there, as it was.
      expect((await client.responses.retrieve(id)).status).toBe("completed");
    });
  });
});
