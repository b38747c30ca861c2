import { CHAT_ALIAS } from "../api/model.js";
import type { Authenticator } from "../server/access.js";
import { ServiceError } from "../server/errors.js";
import { decodedOrAsSent } from "../strings.js";
import type { Principal } from "../server/context.js";
import { readJsonBody, renderError, sendError, sendJson, type NodeRequest, type NodeResponse, type RestExchange, type RestRouter } from "../server/rest.js";
import { parseChatRequest, unknownModel } from "./chat-request.js";
import type { ChatRouter } from "./chat-router.js";
import type { ChatCallOptions, ChatRequest } from "./chat-types.js";
import { completeIdempotently } from "./idempotent-completion.js";
import { asHttp1, authenticateBearer, drained, idempotencyKeyOf, MAX_BODY_BYTES, sendAnswer, setEventStreamHead, writeEvent } from "./openai-http.js";
import type { IdempotencyStore } from "../server/idempotency.js";
import { clientGone, requestInfo } from "../server/request-info.js";

export interface ChatRestDeps {
  router: ChatRouter;
  idempotency: IdempotencyStore;
  authenticator: Authenticator;
}

/**
 * `POST /v1/chat/completions`: OpenAI's wire format in and out. The body is
 * handled as plain JSON, never converted to the RPC messages, so every field
 * reaches the upstream exactly as sent; the router is the one ChatService uses.
 */
export function chatRoutes(rest: RestRouter, deps: ChatRestDeps): void {
  modelRoutes(rest, deps);
  rest.add("POST", "/v1/chat/completions", async (exchange) => {
    const { req, res } = exchange;
    let principal: Principal;
    let request: ChatRequest;
    try {
      principal = await authenticateBearer(exchange, deps.authenticator);
      request = parseChatRequest(await readJsonBody(req, { maxBytes: MAX_BODY_BYTES }));
    } catch (error) {
      sendError(res, error, req);
      return;
    }
    // The client hanging up aborts the upstream request at once.
    const signal = exchange.hangUp;
    const options = { accountId: principal.accountId, signal, fromClient: true, requestLog: requestInfo(req) };
    if (request.stream === true) {
      await streamCompletion(deps.router, request, options, req, res);
      return;
    }
    try {
      const result = await completeIdempotently(deps, request, { ...options, idempotencyKey: idempotencyKeyOf(req) });
      if (!clientGone(signal)) sendAnswer(res, result);
    } catch (error) {
      if (!clientGone(signal)) sendError(res, signal.aborted ? signal.reason : error, req);
    }
  });
}

/**
 * `GET /v1/models` and `GET /v1/models/project-zero`: OpenAI-compatible tools
 * list models before they chat. The alias is the only model, and nothing
 * about the upstreams behind it is listed.
 */
function modelRoutes(rest: RestRouter, deps: ChatRestDeps): void {
  const model = { id: CHAT_ALIAS, object: "model", created: MODEL_CREATED, owned_by: "project-zero" };
  const answer = (body: unknown) => async (exchange: RestExchange) => {
    try {
      await authenticateBearer(exchange, deps.authenticator);
    } catch (error) {
      sendError(exchange.res, error, exchange.req);
      return;
    }
    sendJson(exchange.res, 200, body);
  };
  rest.add("GET", "/v1/models", answer({ object: "list", data: [model] }));
  rest.add("GET", `/v1/models/${CHAT_ALIAS}`, answer(model));
  // Any other model, as OpenAI answers one it does not have (an SDK's `models.retrieve` reads the code).
  rest.addPrefix("/v1/models/", async (exchange) => {
    const method = exchange.req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD") {
      exchange.res.setHeader("Allow", "GET");
      throw new ServiceError("method_not_allowed", "use GET on /v1/models/{model}");
    }
    await authenticateBearer(exchange, deps.authenticator);
    throw unknownModel(decodedOrAsSent(exchange.url.pathname.slice("/v1/models/".length)));
  });
}

/** When the alias first existed (Unix seconds): OpenAI's `created` for a model. */
const MODEL_CREATED = 1_795_305_600;

/**
 * The SSE answer. From here on the status is 200 whatever happens: a refusal
 * (alias, pool) or an upstream failure is one `data: {"error": …}` event,
 * and every stream ends with `data: [DONE]`.
 */
async function streamCompletion(
  router: ChatRouter,
  request: ChatRequest,
  options: ChatCallOptions & { signal: AbortSignal },
  req: NodeRequest,
  res: NodeResponse,
): Promise<void> {
  const { signal } = options;
  // Either way the status is 200 from here on.
  setEventStreamHead(res);
  try {
    const batches = await router.stream(request, options);
    for await (const chunks of batches) {
      // The chunks of one upstream read leave in one write: one chunked frame for the client, not one each.
      let events = "";
      for (const chunk of chunks) events += `data: ${JSON.stringify(chunk)}\n\n`;
      if (!writeEvent(res, events)) await drained(res);
      if (signal.aborted) break;
    }
    if (signal.aborted) throw signal.reason;
  } catch (error) {
    if (clientGone(signal)) return;
    // A shutdown that could not wait for the end says so, like any failure after the first byte.
    writeEvent(res, `data: ${JSON.stringify(renderError(signal.aborted ? signal.reason : error, req).body)}\n\n`);
  }
  if (!clientGone(signal)) asHttp1(res).end("data: [DONE]\n\n");
}
