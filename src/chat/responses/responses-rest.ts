import type { Authenticator } from "../../server/access.js";
import { clientGone } from "../../server/request-info.js";
import { ServiceError } from "../../server/errors.js";
import { decodedOrAsSent } from "../../strings.js";
import { requestInfo } from "../../server/request-info.js";
import { readJsonBody, sendJson, type RestExchange, type RestRouter } from "../../server/rest.js";
import { asHttp1, authenticateBearer, drained, idempotencyKeyOf, MAX_BODY_BYTES, sendAnswer, SSE_HEADERS, writeEvent } from "../openai-http.js";
import type { ResponseEvent, ResponsesGateway } from "./responses-gateway.js";

const PREFIX = "/v1/responses/";

/**
 * `POST /v1/responses`, and `GET` / `DELETE /v1/responses/{id}` for stored
 * responses: the Responses API in OpenAI's wire format (see ResponsesGateway).
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
    if (!signal.aborted) sendAnswer(exchange.res, result);
  });
  rest.addPrefix(PREFIX, async (exchange) => {
    const id = decodedOrAsSent(exchange.url.pathname.slice(PREFIX.length));
    const method = exchange.req.method ?? "GET";
    if (id === "" || id.includes("/")) throw new ServiceError("not_found", `no route for ${method} ${exchange.url.pathname}`);
    if (method !== "GET" && method !== "HEAD" && method !== "DELETE") {
      exchange.res.setHeader("Allow", "GET, DELETE");
      throw new ServiceError("method_not_allowed", `use GET or DELETE on ${PREFIX}{id}`);
    }
    const { accountId } = await authenticateBearer(exchange, deps.authenticator);
    if (method === "DELETE") {
      await gateway.delete(accountId, id);
      sendJson(exchange.res, 200, { id, object: "response", deleted: true });
      return;
    }
    sendAnswer(exchange.res, { json: await gateway.retrieve(accountId, id), replayed: false });
  });
}

/** The events as SSE, each `event: <type>` then its `data:`, a batch to a write; the head leaves with the first. */
async function sendEvents(exchange: RestExchange, batches: AsyncIterable<ResponseEvent[]>, signal: AbortSignal): Promise<void> {
  const { res } = exchange;
  const out = asHttp1(res);
  out.writeHead(200, SSE_HEADERS);
  const closed = exchange.streamOpened();
  try {
    for await (const batch of batches) {
      if (clientGone(signal)) break;
      let events = "";
      for (const event of batch) events += `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
      if (!writeEvent(res, events)) await drained(res);
    }
  } finally {
    closed();
  }
  if (!clientGone(signal)) out.end();
}
