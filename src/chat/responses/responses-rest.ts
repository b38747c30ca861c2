import type { Authenticator } from "../../server/access.js";
import { clientGone } from "../../server/request-info.js";
import { ServiceError } from "../../server/errors.js";
import { decodedOrAsSent } from "../../strings.js";
import { requestInfo } from "../../server/request-info.js";
import { readJsonBody, sendJson, type RestExchange, type RestRouter } from "../../server/rest.js";
import { asHttp1, authenticateBearer, drained, idempotencyKeyOf, MAX_BODY_BYTES, sendAnswer, SSE_HEADERS, writeEvent } from "../openai-http.js";
import type { ResponseEvent, ResponsesGateway } from "./responses-gateway.js";
import { parseInputItemsQuery } from "./responses-input-items.js";

const PREFIX = "/v1/responses/";
const INPUT_ITEMS = "/input_items";
const CANCEL = "/cancel";

/**
 * `POST /v1/responses`, and `GET` / `DELETE /v1/responses/{id}`,
 * `GET /v1/responses/{id}/input_items` and `POST /v1/responses/{id}/cancel`
 * for stored responses: the Responses API in OpenAI's wire format (see
 * ResponsesGateway).
 */
export function responsesRoutes(rest: RestRouter, deps: { gateway: ResponsesGateway; authenticator: Authenticator }): void {
  const { gateway } = deps;
  rest.add("POST", "/v1/responses", async (exchange) => {
    const { accountId } = await authenticateBearer(exchange, deps.authenticator);
    const body = await readJsonBody(exchange.req, { maxBytes: MAX_BODY_BYTES });
    const signal = exchange.hangUp;
    if (typeof body === "object" && body !== null && !Array.isArray(body) && body.stream === true) {
      const log = requestInfo(exchange.req)?.log;
      const events = await gateway.stream(accountId, body, { signal, onUnexpected: (error) => log?.error({ err: error }, "unexpected error") });
      await sendEvents(exchange, events, signal);
      return;
    }
    const result = await gateway.create(accountId, body, { idempotencyKey: idempotencyKeyOf(exchange.req), signal });
    if (!clientGone(signal)) sendAnswer(exchange.res, result);
  });
  rest.addPrefix(PREFIX, async (exchange) => {
    const tail = exchange.url.pathname.slice(PREFIX.length);
    const method = exchange.req.method ?? "GET";
    if (tail.endsWith(INPUT_ITEMS)) {
      await listInputItems(exchange, deps, tail.slice(0, -INPUT_ITEMS.length), method);
      return;
    }
    if (tail.endsWith(CANCEL)) {
      await cancel(exchange, deps, tail.slice(0, -CANCEL.length), method);
      return;
    }
    const id = decodedOrAsSent(tail);
    if (id === "" || id.includes("/")) throw new ServiceError("not_found", `no route for ${method} ${exchange.url.pathname}`);
    if (method !== "GET" && method !== "HEAD" && method !== "DELETE") {
      exchange.res.setHeader("Allow", "GET, DELETE");
      throw new ServiceError("method_not_allowed", `use GET or DELETE on ${PREFIX}{id}`);
    }
    const { accountId } = await authenticateBearer(exchange, deps.authenticator);
    if (method === "DELETE") {
      sendJson(exchange.res, 200, await gateway.delete(accountId, id));
      return;
    }
    if (exchange.url.searchParams.get("stream") === "true") await gateway.streamAgain(accountId, id);
    sendAnswer(exchange.res, { json: await gateway.retrieve(accountId, id), replayed: false });
  });
}

/** `POST /v1/responses/{id}/cancel`: answered by the gateway, which has no background response to cancel. */
async function cancel(exchange: RestExchange, deps: { gateway: ResponsesGateway; authenticator: Authenticator }, rawId: string, method: string): Promise<void> {
  const id = decodedOrAsSent(rawId);
  if (id === "" || id.includes("/")) throw new ServiceError("not_found", `no route for ${method} ${exchange.url.pathname}`);
  if (method !== "POST") {
    exchange.res.setHeader("Allow", "POST");
    throw new ServiceError("method_not_allowed", `use POST on ${PREFIX}{id}${CANCEL}`);
  }
  const { accountId } = await authenticateBearer(exchange, deps.authenticator);
  await deps.gateway.cancel(accountId, id);
}

/** `GET /v1/responses/{id}/input_items`: `limit` and `order` are checked before the response is read, `after`/`before` against its items. */
async function listInputItems(
  exchange: RestExchange,
  deps: { gateway: ResponsesGateway; authenticator: Authenticator },
  rawId: string,
  method: string,
): Promise<void> {
  const id = decodedOrAsSent(rawId);
  if (id === "" || id.includes("/")) throw new ServiceError("not_found", `no route for ${method} ${exchange.url.pathname}`);
  if (method !== "GET" && method !== "HEAD") {
    exchange.res.setHeader("Allow", "GET");
    throw new ServiceError("method_not_allowed", `use GET on ${PREFIX}{id}${INPUT_ITEMS}`);
  }
  const { accountId } = await authenticateBearer(exchange, deps.authenticator);
  const query = parseInputItemsQuery(exchange.url.searchParams);
  sendAnswer(exchange.res, { json: await deps.gateway.inputItems(accountId, id, query), replayed: false });
}

/** The events as SSE, each `event: <type>` then its `data:`, a batch to a write; the head leaves with the first. */
async function sendEvents(exchange: RestExchange, batches: AsyncIterable<ResponseEvent[]>, signal: AbortSignal): Promise<void> {
  const { res } = exchange;
  const out = asHttp1(res);
  out.writeHead(200, SSE_HEADERS);
  for await (const batch of batches) {
    if (clientGone(signal)) break;
    let events = "";
    for (const event of batch) events += `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    if (!writeEvent(res, events)) await drained(res);
  }
  if (!clientGone(signal)) out.end();
}
