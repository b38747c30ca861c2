import { fromJson, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { ChatCompletionParamsSchema, ChatCompletionSchema, ChatService } from "../../gen/zero/v1/chat_pb.js";
import { PROTOCOLS, rpcTransport } from "../support/transports.js";
import { completion, reply, stream, textChunks } from "./support/fake-upstream.js";
import { useSdkGateway } from "./support/gateway.js";

// What REST offers, RPC offers: every OpenAI field reaches the upstream, OpenAI's JSON forms, the Responses API.
describe("ChatService parity with /v1", () => {
  const gateway = useSdkGateway();
  let headers: Record<string, string>;
  beforeAll(() => {
    headers = { authorization: `Bearer ${gateway.apiKey}` };
  });

  it.each(PROTOCOLS)("passes fields with no typed home to the upstream, over %s", async (name) => {
    gateway.upstream.next(reply(completion("ok")));
    const client = createClient(ChatService, rpcTransport(gateway.app.url, name));
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
    expect(gateway.upstream.requests[0]!.body).toMatchObject({
      store: true,
      service_tier: "flex",
      modalities: ["text"],
      prediction: { type: "content", content: "ok" },
    });
    // The JSON form is OpenAI's: the first choice says `"index": 0`.
    expect(toJson(ChatCompletionSchema, answer!)).toMatchObject({ choices: [{ index: 0, message: { content: "ok" } }] });
  });

  it("takes back, over Connect JSON, an answer's message as it was sent, fields with no typed home included", async () => {
    // An agent loop sends the assistant's message back as it got it; OpenAI's `annotations` has no field in
    // ChatMessage, and protobuf's JSON reading leaves such a key out rather than refuse the call.
    gateway.upstream.next(reply(completion("ok")));
    const response = await fetch(`${gateway.app.url}/zero.v1.ChatService/CreateChatCompletion`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({
        params: {
          model: "project-zero",
          messages: [
            { role: "user", content: "hi" },
            { role: "assistant", content: "hello", refusal: null, annotations: [] },
            { role: "user", content: "again" },
          ],
        },
      }),
    });
    expect(response.status).toBe(200);
    expect(gateway.upstream.requests[0]!.body.messages).toHaveLength(3);
  });

  it.each(PROTOCOLS)(
    "replays a response for an Idempotency-Key first used over REST, and the other way round, over %s; another body is still refused",
    async (name) => {
      gateway.upstream.next(reply(completion("first")), reply(completion("second")));
      const client = createClient(ChatService, rpcTransport(gateway.app.url, name));
      const body = { model: "project-zero", input: "once, whichever way" };
      const rest = (key: string, sent: unknown) =>
        fetch(`${gateway.app.url}/v1/responses`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify(sent),
        });
      const rpc = async (key: string, params: typeof body) => {
        let replayed: string | null = null;
        const { response } = await client.createResponse(
          { params, idempotencyKey: key },
          { headers, onHeader: (h) => (replayed = h.get("idempotent-replayed")) },
        );
        return { id: String(response!.id), replayed };
      };

      const overRpc = await rpc(`rpc-first-${name}`, body);
      const thenRest = await rest(`rpc-first-${name}`, body);
      expect(thenRest.status).toBe(200);
      expect(thenRest.headers.get("idempotent-replayed")).toBe("true");
      expect(((await thenRest.json()) as { id: string }).id).toBe(overRpc.id);

      const overRest = (await (await rest(`rest-first-${name}`, body)).json()) as { id: string };
      expect(await rpc(`rest-first-${name}`, body)).toEqual({ id: overRest.id, replayed: "true" });
      expect(gateway.upstream.requests).toHaveLength(2);

      const other = { ...body, input: "something else" };
      const refused = await rest(`rest-first-${name}`, other);
      expect(refused.status).toBe(422);
      expect(await refused.json()).toMatchObject({ error: { code: "idempotency_key_reused" } });
      const refusedOverRpc = await rpc(`rest-first-${name}`, other).catch((e: unknown) => ConnectError.from(e));
      expect(refusedOverRpc).toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("different request body") });
      expect(gateway.upstream.requests).toHaveLength(2);

      // This call answers whole whatever `stream` says.
      gateway.upstream.next(reply(completion("whole")));
      const { response } = await client.createResponse({ params: { ...body, stream: true } }, { headers });
      expect(response).toMatchObject({ status: "completed", output: [{ content: [{ text: "whole" }] }] });
    },
  );

  it("serves the Responses API over gRPC: a response object, and the typed events of a stream", async () => {
    gateway.upstream.next(reply(completion("Hi there")), stream(textChunks(["Hi", " there"])));
    const client = createClient(ChatService, rpcTransport(gateway.app.url, "grpc"));
    const { response } = await client.createResponse({ params: { model: "project-zero", input: "hello", instructions: "Be brief." } }, { headers });
    expect(response).toMatchObject({
      object: "response",
      status: "completed",
      model: "project-zero",
      output: [{ type: "message", content: [{ type: "output_text", text: "Hi there" }] }],
    });
    expect(gateway.upstream.requests[0]!.body.messages).toEqual([
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
