import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { chunk, completion, FakeUpstream, reply, stream, textChunks } from "./support/fake-upstream.js";
import { postChat, readSse, startGateway } from "./support/gateway.js";

/** What a provider may add that names it, its account or its region. */
const PROVIDER_DETAIL = ["org-7Hq2SECRET", "sk-proj-abcd", "us-east-secret-1", "x_upstream_region", "SecretRouter"];

function expectNoProviderDetail(text: string): void {
  for (const detail of PROVIDER_DETAIL) expect(text, `leaked ${detail}`).not.toContain(detail);
}

let upstream: FakeUpstream;
let app: TestApp;
let apiKey: string;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  app = await startGateway([upstream]);
  ({ apiKey } = await createAccountWithKey(app, ["chat"]));
});
afterAll(async () => {
  await app.close();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const hello = { model: "project-zero", messages: [{ role: "user", content: "hi" }] };

describe("nothing of a provider reaches the client", () => {
  it("an upstream's 4xx message is replaced by ours", async () => {
    upstream.next(
      reply(
        {
          error: {
            message: "Invalid 'messages': organization org-7Hq2SECRET (key sk-proj-abcd…) in us-east-secret-1 rejected it",
            type: "invalid_request_error",
            param: "messages",
            code: null,
          },
        },
        400,
      ),
    );
    const response = await postChat(app, apiKey, hello);
    const text = await response.text();
    expect(response.status).toBe(400);
    expectNoProviderDetail(text);
    expect(JSON.parse(text)).toEqual({
      error: { type: "invalid_request", code: "invalid_request", param: "messages", message: expect.stringContaining("model provider") },
    });
  });

  it("a param that is not a field of the request is not passed on either", async () => {
    upstream.next(reply({ error: { message: "nope", type: "invalid_request_error", param: "org-7Hq2SECRET", code: null } }, 422));
    const response = await postChat(app, apiKey, hello);
    const body = (await response.json()) as { error: { param: unknown } };
    expect(response.status).toBe(400);
    expect(body.error.param).toBeNull();
  });

  it("only OpenAI's documented fields are in a completion, at every level", async () => {
    upstream.next(
      reply(
        completion("hello", {
          x_upstream_region: "us-east-secret-1",
          // Documented, but a provider's own values tell which provider served (Groq's "on_demand").
          service_tier: "SecretRouter-on-demand",
          metadata: { routed_by: "SecretRouter" },
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: "hello", refusal: null, provider_routing: "SecretRouter", reasoning_content: "org-7Hq2SECRET" },
              logprobs: null,
              finish_reason: "stop",
              provider_choice_id: "SecretRouter",
            },
          ],
          usage: {
            prompt_tokens: 9,
            completion_tokens: 3,
            total_tokens: 12,
            cost_usd: 0.0001,
            prompt_tokens_details: { cached_tokens: 0, provider_cache: "SecretRouter" },
          },
        }),
      ),
    );
    const response = await postChat(app, apiKey, hello);
    const text = await response.text();
    expectNoProviderDetail(text);
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["choices", "created", "id", "model", "object", "usage"]);
    expect(body.choices).toEqual([{ index: 0, message: { role: "assistant", content: "hello", refusal: null }, logprobs: null, finish_reason: "stop" }]);
    expect(body.usage).toEqual({ prompt_tokens: 9, completion_tokens: 3, total_tokens: 12, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it("and in every streamed chunk", async () => {
    const chunks: Record<string, unknown>[] = textChunks(["hel", "lo"]).map((c) => ({
      ...c,
      x_upstream_region: "us-east-secret-1",
      service_tier: "SecretRouter-on-demand",
    }));
    chunks[1] = chunk({ content: "hel", provider_routing: "SecretRouter" }, null, { x_upstream_region: "us-east-secret-1" });
    upstream.next(stream(chunks));
    const events = await readSse(await postChat(app, apiKey, { ...hello, stream: true }));
    expectNoProviderDetail(events.join("\n"));
    expect(events.at(-1)).toBe("[DONE]");
    const parsed = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: { delta?: unknown }[] });
    expect(parsed[1]!.choices[0]!.delta).toEqual({ content: "hel" });
  });

  it("vendor routing fields never reach the upstream; OpenAI's own fields do", async () => {
    const vendor = {
      models: ["expensive/model-a", "expensive/model-b"],
      route: "fallback",
      provider: { order: ["SecretRouter"], allow_fallbacks: true },
      transforms: ["middle-out"],
      plugins: [{ id: "web" }],
      api_base: "http://elsewhere.example",
      custom_llm_provider: "other",
    };
    const openAiFields = { temperature: 0.2, max_completion_tokens: 50, seed: 7, user: "u1", store: false, service_tier: "default", metadata: { a: "b" } };
    await postChat(app, apiKey, { ...hello, ...vendor, ...openAiFields });
    const sent = upstream.requests[0]!.body;
    for (const field of Object.keys(vendor)) expect(sent, field).not.toHaveProperty(field);
    expect(sent).toMatchObject(openAiFields);
    expect(sent.model).not.toBe("project-zero");
  });
});

describe("a request nested deeper than any OpenAI request is refused before any upstream", () => {
  /** JSON text nested `depth` arrays deep (built as text: JSON.stringify itself recurses). */
  const deep = (depth: number) => `${"[".repeat(depth)}"x"${"]".repeat(depth)}`;

  it("over REST: 400 invalid_request, and the upstream never sees it", async () => {
    for (const body of [
      `{"model":"project-zero","messages":[{"role":"user","content":${deep(20_000)}}]}`,
      `{"model":"project-zero","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"a":${deep(100_000)}}}}}`,
    ]) {
      const response = await postChat(app, apiKey, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe("invalid_request");
    }
    expect(upstream.requests).toHaveLength(0);
  });

  it("over RPC: invalid_argument", async () => {
    for (const depth of [100, 5_000, 100_000]) {
      const params = `{"model":"project-zero","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"a":${deep(depth)}}}}]}`;
      const response = await fetch(`${app.url}/zero.v1.ChatService/CreateChatCompletion`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
        body: `{"params":${params}}`,
      });
      expect(response.status, `depth ${depth}`).toBe(400);
      expect(((await response.json()) as { code: string }).code).toBe("invalid_argument");
    }
    expect(upstream.requests).toHaveLength(0);
  });
});
