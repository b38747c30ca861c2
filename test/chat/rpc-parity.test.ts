import { fromJson, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatCompletionParamsSchema, ChatCompletionSchema, ChatService } from "../../gen/zero/v1/chat_pb.js";
import { createAccountWithKey } from "../support/accounts.js";
import { PROTOCOLS, rpcTransport } from "../support/transports.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, stream, textChunks } from "./support/fake-upstream.js";
import { startGateway } from "./support/gateway.js";

// What REST offers, RPC offers: every OpenAI field reaches the upstream, OpenAI's JSON forms, the Responses API.
describe("ChatService parity with /v1", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    headers = { authorization: `Bearer ${(await createAccountWithKey(app, ["chat"])).apiKey}` };
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  it.each(PROTOCOLS)("passes fields with no typed home to the upstream, over %s", async (name) => {
    upstream.next(reply(completion("ok")));
    const client = createClient(ChatService, rpcTransport(app.url, name));
    const { completion: answer } = await client.createChatCompletion(
      {
        params: fromJson(ChatCompletionParamsSchema, {
          model: "project-zero",
          messages: [{ role: "user", content: "hi" }],
          extra: { store: true, service_tier: "flex", modalities: ["text"], prediction: { type: "content", content: "ok" } },
        }),
      },
      { headers },
    );
    expect(upstream.requests[0]!.body).toMatchObject({
      store: true,
      service_tier: "flex",
      modalities: ["text"],
      prediction: { type: "content", content: "ok" },
    });
    // The JSON form is OpenAI's: the first choice says `"index": 0`.
    expect(toJson(ChatCompletionSchema, answer!)).toMatchObject({ choices: [{ index: 0, message: { content: "ok" } }] });
  });

  it("refuses, over Connect JSON, an OpenAI field written beside the typed ones rather than under `extra`, naming it", async () => {
    // Silently dropping `service_tier` (Connect's default for an unknown JSON key) would change what the caller asked for.
    const response = await fetch(`${app.url}/zero.v1.ChatService/CreateChatCompletion`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ params: { model: "project-zero", messages: [{ role: "user", content: "hi" }], service_tier: "flex" } }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain("service_tier");
    expect(upstream.requests).toHaveLength(0);
  });

  it("serves the Responses API over gRPC: a response object, and the typed events of a stream", async () => {
    upstream.next(reply(completion("Hi there")), stream(textChunks(["Hi", " there"])));
    const client = createClient(ChatService, rpcTransport(app.url, "grpc"));
    const { response } = await client.createResponse({ params: { model: "project-zero", input: "hello", instructions: "Be brief." } }, { headers });
    expect(response).toMatchObject({
      object: "response",
      status: "completed",
      model: "project-zero",
      output: [{ type: "message", content: [{ type: "output_text", text: "Hi there" }] }],
    });
    expect(upstream.requests[0]!.body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hello" },
    ]);

    const types: string[] = [];
    let text = "";
    for await (const { type, event } of client.streamResponse({ params: { model: "project-zero", input: "hello" } }, { headers })) {
      types.push(type);
      expect(event).toMatchObject({ type, sequence_number: types.length - 1 });
      if (type === "response.output_text.delta") text += String(event!.delta);
    }
    expect(text).toBe("Hi there");
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
  });
});
