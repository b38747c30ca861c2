import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, UPSTREAM_MODEL } from "./support/fake-upstream.js";
import { expectOpenAiError, startGateway, UPSTREAM_KEY } from "./support/gateway.js";

// Inputs a new user's client sends by mistake, found by trying the gateway as one: each is a clear 4xx in OpenAI's shape.
describe("the /v1 gateway and the inputs clients get wrong", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let apiKey: string;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    const entry = { name: "SecretCo-0", baseUrl: upstream.url, apiKey: UPSTREAM_KEY, model: UPSTREAM_MODEL, embeddingModel: "secret-embedder" };
    app = await startGateway([upstream], { ZERO_UPSTREAMS: JSON.stringify([entry]) });
    ({ apiKey } = await createAccountWithKey(app, ["chat"]));
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  const call = (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    fetch(`${app.url}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", ...init.headers },
      body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
    });

  it("answers a response id with a broken percent-encoding as an unknown id, not an internal error", async () => {
    for (const id of ["%ZZ", "%C0%80", "%E0%A4%A"]) {
      await expectOpenAiError(await call(`/v1/responses/${id}`), 404, { type: "not_found" });
      await expectOpenAiError(await call(`/v1/responses/${id}`, { method: "DELETE" }), 404, { type: "not_found" });
    }
  });

  it("refuses Responses fields of the wrong type or range, naming the field, and sends nothing upstream", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ max_output_tokens: "a" }, "max_output_tokens"],
      [{ max_output_tokens: -5 }, "max_output_tokens"],
      [{ max_output_tokens: 0 }, "max_output_tokens"],
      [{ max_output_tokens: 50.5 }, "max_output_tokens"],
      [{ temperature: "hot" }, "temperature"],
      [{ temperature: 2.5 }, "temperature"],
      [{ top_p: "x" }, "top_p"],
      [{ top_p: 1.5 }, "top_p"],
      [{ metadata: "m" }, "metadata"],
      [{ metadata: { a: 5 } }, "metadata"],
      // OpenAI's limit: 16 pairs.
      [{ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`key${i}`, "v"])) }, "metadata"],
      // Nothing to send the model.
      [{ input: [] }, "input"],
      [{ text: 5 }, "text"],
      [{ text: { format: {} } }, "text.format"],
    ];
    for (const [fields, param] of cases) {
      const response = await call("/v1/responses", { body: { model: "project-zero", input: "hi", ...fields } });
      expect(response.status, JSON.stringify(fields)).toBe(400);
      const { error } = (await response.json()) as { error: { type: string; param: string; message: string } };
      expect(error, JSON.stringify(fields)).toMatchObject({ type: "invalid_request", param });
      expect(error.message).not.toContain("undefined");
    }
    expect(upstream.requests).toHaveLength(0);
    upstream.next(reply(completion("fine")));
    const valid = await call("/v1/responses", {
      body: {
        model: "project-zero",
        input: "hi",
        max_output_tokens: 64,
        temperature: 0,
        top_p: 1,
        metadata: { topic: "x" },
        text: { format: { type: "text" } },
      },
    });
    expect(valid.status).toBe(200);
  });

  it("takes only JSON on every /v1 route that reads a body, chat completions included", async () => {
    const body = JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "hi" }], input: "hi" });
    for (const path of ["/v1/chat/completions", "/v1/responses", "/v1/embeddings"]) {
      for (const contentType of ["text/plain", "application/x-www-form-urlencoded"]) {
        await expectOpenAiError(await call(path, { body, headers: { "content-type": contentType } }), 400, { type: "invalid_request" });
      }
    }
    expect(upstream.requests).toHaveLength(0);
  });

  it("refuses a compressed body as 400 naming its encoding, rather than reading gzip as broken JSON; takes identity", async () => {
    const body = JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "hi" }], input: "hi" });
    const gzipped = gzipSync(body);
    for (const path of ["/v1/chat/completions", "/v1/responses", "/v1/embeddings"]) {
      const response = await fetch(`${app.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipped,
      });
      await expectOpenAiError(response, 400, {
        type: "invalid_request",
        message: "a body sent with content-encoding: gzip is not taken here; send it uncompressed",
      });
    }
    // A plain body labelled with an encoding it does not have is refused the same way.
    await expectOpenAiError(await call("/v1/chat/completions", { body, headers: { "content-encoding": "br" } }), 400, { type: "invalid_request" });
    const builder = await createAccountWithKey(app, ["build"]);
    const api = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${builder.apiKey}`, "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify({ goal: "A website for a bakery" })),
    });
    expect(api.status).toBe(400);
    expect(((await api.json()) as { error: { message: string } }).error.message).toContain("content-encoding: gzip");
    expect(upstream.requests).toHaveLength(0);
    // `identity` (in any case, listed, or empty) is no encoding at all.
    for (const none of ["identity", " IDENTITY ", "identity, identity", ""]) {
      upstream.next(reply(completion("hello")));
      expect((await call("/v1/chat/completions", { body, headers: { "content-encoding": none } })).status).toBe(200);
    }
  });

  it("answers /v1 itself and an unknown model in OpenAI's shape", async () => {
    await expectOpenAiError(await call("/v1"), 404, { type: "not_found" });
    await expectOpenAiError(await call("/v1/models/gpt-4o"), 404, { code: "model_not_found", param: "model" });
  });

  it("replays an embeddings request sent again with its Idempotency-Key, and refuses the key with another body", async () => {
    const vectors = {
      object: "list",
      model: "secret-embedder",
      data: [{ object: "embedding", index: 0, embedding: [0.5, 1] }],
      usage: { prompt_tokens: 1, total_tokens: 1 },
    };
    upstream.next(reply(vectors));
    const headers = { "idempotency-key": "embed-once-1" };
    const first = await call("/v1/embeddings", { body: { model: "project-zero", input: "hello", encoding_format: "float" }, headers });
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await call("/v1/embeddings", { body: { model: "project-zero", input: "hello", encoding_format: "float" }, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(await first.json());
    expect(upstream.requests).toHaveLength(1);
    const other = await call("/v1/embeddings", { body: { model: "project-zero", input: "another", encoding_format: "float" }, headers });
    await expectOpenAiError(other, 422, { code: "idempotency_key_reused" });
    expect(upstream.requests).toHaveLength(1);
  });

  it("takes an Idempotency-Key with spaces inside, as printable ASCII includes the space", async () => {
    upstream.next(reply(completion("once")));
    const body = { model: "project-zero", messages: [{ role: "user", content: "hi" }] };
    const headers = { "idempotency-key": "order 42 retry" };
    const first = await call("/v1/chat/completions", { body, headers });
    expect(first.status).toBe(200);
    const again = await call("/v1/chat/completions", { body, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.requests).toHaveLength(1);
    await expectOpenAiError(await call("/v1/chat/completions", { body, headers: { "idempotency-key": "tab\tinside" } }), 400, { type: "invalid_request" });
  });
});
