import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { FakeUpstream, reply } from "./support/fake-upstream.js";
import { expectOpenAiError, openAiClient, startGateway, upstreamsEnv } from "./support/gateway.js";

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
  let backup: FakeUpstream;
  let app: TestApp;
  let chatOnly: TestApp;
  let account: TestAccount;

  const postEmbeddings = (body: Record<string, unknown>) =>
    fetch(`${app.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", encoding_format: "float", ...body }),
    });

  const answerOf = async (response: Response) => (await response.json()) as { data?: unknown; error?: unknown };

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    backup = await FakeUpstream.start();
    app = await startGateway([upstream, backup], { ZERO_UPSTREAMS: upstreamsEnv([upstream.url, backup.url], { embeddingModel: EMBEDDING_MODEL }) });
    chatOnly = await startGateway([upstream]);
    account = await createAccountWithKey(app, ["chat"]);
  });
  afterAll(async () => {
    await Promise.all([app.close(), chatOnly.close()]);
    await Promise.all([upstream.close(), backup.close()]);
  });
  beforeEach(() => {
    upstream.reset();
    backup.reset();
  });

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

  it("puts each vector at its input's index, whatever order the upstream lists them in, or as listed when it gives no index", async () => {
    const inputs = ["zero", "one", "two"];
    upstream.next(
      reply({ data: [2, 0, 1].map((index) => ({ object: "embedding", index, embedding: [index, index] })) }),
      reply({ data: [0, 1, 2].map((n) => ({ object: "embedding", embedding: [n, n] })) }),
    );
    for (let i = 0; i < 2; i++) {
      const response = await postEmbeddings({ input: inputs });
      expect(response.status).toBe(200);
      expect((await answerOf(response)).data).toEqual([0, 1, 2].map((index) => ({ object: "embedding", index, embedding: [index, index] })));
    }
  });

  it("asks the next upstream when one answers 200 with vectors that are not one finite vector of one length per input, and is 502 when none does", async () => {
    const item = (index: unknown, embedding: unknown) => ({ object: "embedding", index, embedding });
    const notOnePerInput = {
      "a gap, listed out of order": [item(2, [2, 2]), item(0, [0, 0])],
      "one vector for three inputs": [item(0, [0, 0])],
      "an extra vector": [item(0, [0, 0]), item(1, [1, 1]), item(2, [2, 2]), item(3, [3, 3])],
      "an index twice": [item(0, [0, 0]), item(0, [1, 1]), item(2, [2, 2])],
      "an index past the inputs": [item(0, [0, 0]), item(1, [1, 1]), item(3, [3, 3])],
      "an index on some items only": [item(0, [0, 0]), item(undefined, [1, 1]), item(2, [2, 2])],
      "an index that is not a whole number": [item(0, [0, 0]), item("1", [1, 1]), item(2, [2, 2])],
      "a vector that is not all numbers": [item(0, [0, 0]), item(1, ["a", null]), item(2, [2, 2])],
      "vectors of different lengths": [item(0, [0, 0]), item(1, [1, 1, 1]), item(2, [2, 2])],
      "an empty vector": [item(0, []), item(1, []), item(2, [])],
      "base64 that is not whole float32s": [item(0, [0, 0]), item(1, "AAAAAAA="), item(2, [2, 2])],
      "base64 that holds NaN": [item(0, [0, 0]), item(1, Buffer.from(new Float32Array([Number.NaN, 1]).buffer).toString("base64")), item(2, [2, 2])],
    };
    const good = [0, 1, 2].map((index) => ({ object: "embedding", index, embedding: [index / 2, index / 4] }));
    for (const [what, data] of Object.entries(notOnePerInput)) {
      upstream.reset().next(reply({ data }));
      backup.reset().next(reply({ data: good }));
      const response = await postEmbeddings({ input: ["zero", "one", "two"] });
      expect(response.status, what).toBe(200);
      expect((await answerOf(response)).data, what).toEqual(good);
      expect([upstream.requests.length, backup.requests.length], what).toEqual([1, 1]);
    }
    upstream.reset().next(reply({ data: notOnePerInput["a gap, listed out of order"] }));
    backup.reset().next(reply({ data: notOnePerInput["one vector for three inputs"] }));
    const response = await postEmbeddings({ input: ["zero", "one", "two"] });
    expect(response.status).toBe(502);
    expect((await answerOf(response)).error).toMatchObject({ type: "upstream_error" });
  });

  it("counts a token array as one input and an array of token arrays as one input each", async () => {
    upstream.next(reply(embeddings([[1]])), reply(embeddings([[1], [2]])));
    expect((await postEmbeddings({ input: [5, 0, 7] })).status).toBe(200);
    expect((await postEmbeddings({ input: [[5], [0, 7]] })).status).toBe(200);
    expect(upstream.requests.map((request) => request.body.input)).toEqual([
      [5, 0, 7],
      [[5], [0, 7]],
    ]);
  });

  it("reads dimensions and encoding_format sent as null as left out, as OpenAI does (the Python SDK sends dimensions=None so)", async () => {
    upstream.next(reply(embeddings([[0.5, 1]])));
    const response = await postEmbeddings({ input: "x", dimensions: null, encoding_format: null });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: unknown }).data).toEqual([{ object: "embedding", index: 0, embedding: [0.5, 1] }]);
    expect(upstream.requests[0]!.body).toEqual({ model: EMBEDDING_MODEL, input: "x", encoding_format: "float" });
  });

  it("is 400 naming the field, as OpenAI is, for an input or dimensions it cannot embed, and asks no upstream", async () => {
    const badInputs = [
      "",
      [],
      [""],
      ["a", ""],
      [[]],
      [[1], []],
      [null],
      [1, "a"],
      ["a", 1],
      [-1],
      [1.5],
      [[1, -2]],
      [[1], "a"],
      [{ text: "a" }],
      { text: "a" },
      42,
      null,
    ];
    for (const input of badInputs) {
      await expectOpenAiError(await postEmbeddings({ input }), 400, { type: "invalid_request", param: "input" });
    }
    for (const dimensions of [0, -8, 1.5, "8"]) {
      await expectOpenAiError(await postEmbeddings({ input: "x", dimensions }), 400, { type: "invalid_request", param: "dimensions" });
    }
    expect([upstream.requests, backup.requests]).toEqual([[], []]);
  });
});
