import type { Authenticator } from "../../server/access.js";
import { clientGone } from "../../server/request-info.js";
import { ServiceError } from "../../server/errors.js";
import { decodedOrAsSent } from "../../strings.js";
import { requestInfo } from "../../server/request-info.js";
import { readJsonBody, sendJson, type RestExchange, type RestRouter } from "../../server/rest.js";
import { asHttp1, authenticateBearer, drained, idempotencyKeyOf, MAX_BODY_BYTES, sendAnswer, setEventStreamHead, writeEvent } from "../openai-http.js";
import type { ResponseEvent, ResponsesGateway } from "./responses-gateway.js";
import { parseInputItemsQuery } from "./responses-input-items.js";

const PREFIX = "/v1/responses/";

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
      const events = await gateway.stream(accountId, body, { signal, requestLog: requestInfo(exchange.req) });
      await sendEvents(exchange, events, signal);
      return;
    }
    const result = await gateway.create(accountId, body, { idempotencyKey: idempotencyKeyOf(exchange.req), signal, requestLog: requestInfo(exchange.req) });
    if (!clientGone(signal)) sendAnswer(exchange.res, result);
  });
  rest.addPrefix(PREFIX, async (exchange) => {
    const tail = exchange.url.pathname.slice(PREFIX.length);
    const method = exchange.req.method ?? "GET";
    const route = STORED_RESPONSE_ROUTES.find((candidate) => tail.endsWith(candidate.suffix))!;
    const id = decodedOrAsSent(tail.slice(0, tail.length - route.suffix.length));
    if (id === "" || id.includes("/")) throw new ServiceError("not_found", `no route for ${method} ${exchange.url.pathname}`);
    if (!route.methods.includes(method)) {
      exchange.res.setHeader("Allow", route.allow);
      throw new ServiceError("method_not_allowed", `use ${route.allow.replace(", ", " or ")} on ${PREFIX}{id}${route.suffix}`);
    }
    const { accountId } = await authenticateBearer(exchange, deps.authenticator);
    await route.answer(exchange, gateway, accountId, id);
  });
}

/** A route on one stored response, `/v1/responses/{id}<suffix>`: the methods it takes (HEAD is GET's), and its answer. */
interface StoredResponseRoute {
  suffix: string;
  methods: readonly string[];
  allow: string;
  answer(exchange: RestExchange, gateway: ResponsesGateway, accountId: string, id: string): Promise<void>;
}

/** In the order they are tried: a route with no suffix takes every path the others do not. */
const STORED_RESPONSE_ROUTES: readonly StoredResponseRoute[] = [
  {
    // `limit` and `order` are checked before the response is read, `after`/`before` against its items.
    suffix: "/input_items",
    methods: ["GET", "HEAD"],
    allow: "GET",
    answer: async (exchange, gateway, accountId, id) => {
      const query = parseInputItemsQuery(exchange.url.searchParams);
      sendAnswer(exchange.res, { json: await gateway.inputItems(accountId, id, query), replayed: false });
    },
  },
  {
    // Answered by the gateway, which has no background response to cancel.
    suffix: "/cancel",
    methods: ["POST"],
    allow: "POST",
    answer: (_exchange, gateway, accountId, id) => gateway.cancel(accountId, id),
  },
  {
    suffix: "",
    methods: ["GET", "HEAD", "DELETE"],
    allow: "GET, DELETE",
    answer: async (exchange, gateway, accountId, id) => {
      if (exchange.req.method === "DELETE") {
        sendJson(exchange.res, 200, await gateway.delete(accountId, id));
        return;
      }
      if (exchange.url.searchParams.get("stream") === "true") await gateway.streamAgain(accountId, id);
      sendAnswer(exchange.res, { json: await gateway.retrieve(accountId, id), replayed: false });
    },
  },
];

/** The events as SSE, each `event: <type>` then its `data:`, a batch to a write; the head leaves with the first. */
async function sendEvents(exchange: RestExchange, batches: AsyncIterable<ResponseEvent[]>, signal: AbortSignal): Promise<void> {
  const { res } = exchange;
  setEventStreamHead(res);
  for await (const batch of batches) {
    if (clientGone(signal)) break;
    let events = "";
    for (const event of batch) events += `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    if (!writeEvent(res, events)) await drained(res);
  }
  if (!clientGone(signal)) asHttp1(res).end();
}
