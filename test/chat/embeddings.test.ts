import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { FakeUpstream, reply, UPSTREAM_MODEL } from "./support/fake-upstream.js";
import { openAiClient, startGateway, UPSTREAM_KEY } from "./support/gateway.js";

const EMBEDDING_MODEL = "secret-embedder-v2";

function embeddings(vectors: number[][]): Record<string, unknown> {
  return {
    object: "list",
    model: EMBEDDING_MODEL,
    data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
    usage: { prompt_tokens: 4, total_tokens: 4 },
  };
}

describe("POST /v1/embeddings", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let chatOnly: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    const entry = { name: "SecretCo-0", baseUrl: upstream.url, apiKey: UPSTREAM_KEY, model: UPSTREAM_MODEL, embeddingModel: EMBEDDING_MODEL };
    app = await startGateway([upstream], { ZERO_UPSTREAMS: JSON.stringify([entry]) });
    chatOnly = await startGateway([upstream]);
    account = await createAccountWithKey(app, ["chat"]);
  });
  afterAll(async () => {
    await Promise.all([app.close(), chatOnly.close()]);
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  it("answers the SDK (which asks for base64 by default) with the upstream's vectors, under the alias", async () => {
    upstream.next(reply(embeddings([[0.5, -0.25, 1]])));
    const result = await openAiClient(app, account.apiKey).embeddings.create({ model: "project-zero", input: "hello" });
    expect(result.model).toBe("project-zero");
    expect(result.data).toEqual([{ object: "embedding", index: 0, embedding: [0.5, -0.25, 1] }]);
    expect(result.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 });
    const sent = upstream.requests[0]!;
    expect(sent.path).toBe("/v1/embeddings");
    expect(sent.body).toMatchObject({ model: EMBEDDING_MODEL, input: "hello", encoding_format: "float" });
  });

  it("answers floats when asked for floats, for an array input, naming nothing of the upstream", async () => {
    upstream.next(
      reply(
        embeddings([
          [1, 2],
          [3, 4],
        ]),
      ),
    );
    const response = await fetch(`${app.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", input: ["a", "b"], encoding_format: "float" }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(JSON.parse(text).data.map((d: { embedding: number[] }) => d.embedding)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(text).not.toMatch(/secret|SecretCo/i);
  });

  it("sends the upstream OpenAI's embedding fields only: a client's routing fields never reach an aggregator", async () => {
    upstream.next(reply(embeddings([[1]])));
    const response = await fetch(`${app.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "project-zero",
        input: "x",
        dimensions: 8,
        user: "end-user-1",
        models: ["openai/text-embedding-3-large"],
        provider: { order: ["OpenAI"] },
        route: "fallback",
        api_base: "http://elsewhere.example",
        api_key: "sk-someone-else",
        extra_body: { a: 1 },
      }),
    });
    expect(response.status).toBe(200);
    expect(upstream.requests[0]!.body).toEqual({ model: EMBEDDING_MODEL, input: "x", dimensions: 8, user: "end-user-1", encoding_format: "float" });
  });

  it("capabilities name /v1/embeddings only where an upstream declares an embedding model", async () => {
    const endpoints = async (target: TestApp) =>
      ((await (await fetch(`${target.url}/api/capabilities`)).json()) as { chat: { endpoints: string[] } }).chat.endpoints;
    expect(await endpoints(app)).toEqual(["/v1/chat/completions", "/v1/responses", "/v1/embeddings"]);
    expect(await endpoints(chatOnly)).toEqual(["/v1/chat/completions", "/v1/responses"]);
  });

  it("is 404 model_not_found where no upstream declares an embedding model, and refuses other models", async () => {
    const key = (await createAccountWithKey(chatOnly, ["chat"])).apiKey;
    await expect(openAiClient(chatOnly, key).embeddings.create({ model: "project-zero", input: "x" })).rejects.toMatchObject({
      status: 404,
      error: { code: "model_not_found" },
    });
    await expect(openAiClient(app, account.apiKey).embeddings.create({ model: "text-embedding-3-small", input: "x" })).rejects.toMatchObject({
      status: 404,
    });
    const empty = await fetch(`${app.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", input: [] }),
    });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error: { param: "input" } });
    expect(upstream.requests).toHaveLength(0);
  });
});
