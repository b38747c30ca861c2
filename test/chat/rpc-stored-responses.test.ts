import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { ErrorDetailSchema } from "../../gen/zero/v1/error_pb.js";
import { PROTOCOLS, rpcTransport } from "../support/transports.js";
import { completion, reply } from "./support/fake-upstream.js";
import { useSdkGateway } from "./support/gateway.js";

// A stored response is read, listed, cancelled and deleted over RPC as over `/v1/responses/{id}`: same answers, same refusals.
describe("stored responses over RPC", () => {
  const gateway = useSdkGateway();
  let headers: Record<string, string>;
  beforeAll(() => {
    headers = { authorization: `Bearer ${gateway.apiKey}` };
  });

  async function rest(method: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${gateway.app.url}${path}`, { method, headers });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function refusal(call: Promise<unknown>) {
    const error = await call.then(
      () => expect.fail("the call succeeded"),
      (e: unknown) => ConnectError.from(e),
    );
    const detail = error.findDetails(ErrorDetailSchema)[0];
    return { code: error.code, type: detail?.type, message: detail?.message, param: detail?.param };
  }

  it.each(PROTOCOLS)("reads, lists, cancels and deletes a stored response as REST does, over %s", async (name) => {
    gateway.upstream.next(reply(completion("Hi there")));
    const client = createClient(ChatService, rpcTransport(gateway.app.url, name));
    const input = [
      { role: "user", content: "one" },
      { role: "assistant", content: "two" },
      { role: "user", content: "three" },
    ];
    const { response: created } = await client.createResponse({ params: { model: "project-zero", input } }, { headers });
    const id = String(created!.id);

    const { response } = await client.getResponse({ responseId: id }, { headers });
    expect(response).toEqual((await rest("GET", `/v1/responses/${id}`)).body);

    const { page } = await client.listResponseInputItems({ responseId: id, order: "asc", limit: 2 }, { headers });
    const restPage = (await rest("GET", `/v1/responses/${id}/input_items?order=asc&limit=2`)).body;
    expect(page).toEqual(restPage);
    expect(restPage).toMatchObject({ object: "list", has_more: true });
    const { page: next } = await client.listResponseInputItems({ responseId: id, order: "asc", after: String(restPage.last_id) }, { headers });
    expect(next).toEqual((await rest("GET", `/v1/responses/${id}/input_items?order=asc&after=${String(restPage.last_id)}`)).body);
    expect(await client.listResponseInputItems({ responseId: id }, { headers })).toMatchObject({
      page: (await rest("GET", `/v1/responses/${id}/input_items`)).body,
    });

    const cancelled = await rest("POST", `/v1/responses/${id}/cancel`);
    expect(cancelled.status).toBe(400);
    expect(await refusal(client.cancelResponse({ responseId: id }, { headers }))).toEqual({
      code: Code.InvalidArgument,
      type: "invalid_request",
      message: (cancelled.body.error as { message: string }).message,
      param: undefined,
    });

    const deleted = await client.deleteResponse({ responseId: id }, { headers });
    expect({ id: deleted.id, object: deleted.object, deleted: deleted.deleted }).toEqual({ id, object: "response", deleted: true });

    const gone = await rest("GET", `/v1/responses/${id}`);
    expect(gone.status).toBe(404);
    const notFound = { code: Code.NotFound, type: "not_found", message: (gone.body.error as { message: string }).message, param: undefined };
    expect(await refusal(client.getResponse({ responseId: id }, { headers }))).toEqual(notFound);
    expect(await refusal(client.deleteResponse({ responseId: id }, { headers }))).toEqual(notFound);
    expect(await refusal(client.listResponseInputItems({ responseId: id }, { headers }))).toEqual(notFound);
    expect(await refusal(client.cancelResponse({ responseId: id }, { headers }))).toEqual(notFound);
  });

  it("refuses a list query REST refuses, naming the same parameter", async () => {
    gateway.upstream.next(reply(completion("ok")));
    const client = createClient(ChatService, rpcTransport(gateway.app.url, "connect"));
    const { response: created } = await client.createResponse({ params: { model: "project-zero", input: "hi" } }, { headers });
    const id = String(created!.id);
    for (const [query, asked] of [
      ["limit=0", { limit: 0 }],
      ["limit=101", { limit: 101 }],
      ["order=up", { order: "up" }],
      ["after=msg_none", { after: "msg_none" }],
    ] as const) {
      const refused = await rest("GET", `/v1/responses/${id}/input_items?${query}`);
      expect(refused.status).toBe(400);
      const error = refused.body.error as { message: string; param: string };
      expect(await refusal(client.listResponseInputItems({ responseId: id, ...asked }, { headers }))).toEqual({
        code: Code.InvalidArgument,
        type: "invalid_request",
        message: error.message,
        param: error.param,
      });
    }
  });

  it("answers the JSON form as REST does, a deletion included", async () => {
    gateway.upstream.next(reply(completion("ok")));
    const client = createClient(ChatService, rpcTransport(gateway.app.url, "connect"));
    const { response: created } = await client.createResponse({ params: { model: "project-zero", input: "hi" } }, { headers });
    const id = String(created!.id);
    const post = (method: string, body: unknown) =>
      fetch(`${gateway.app.url}/zero.v1.ChatService/${method}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect(await (await post("GetResponse", { response_id: id })).json()).toEqual({ response: (await rest("GET", `/v1/responses/${id}`)).body });
    expect(await (await post("ListResponseInputItems", { response_id: id, limit: 5 })).json()).toEqual({
      page: (await rest("GET", `/v1/responses/${id}/input_items?limit=5`)).body,
    });
    expect(await (await post("DeleteResponse", { response_id: id })).json()).toEqual({ id, object: "response", deleted: true });
  });
});
