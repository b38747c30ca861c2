import type http from "node:http";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { CHAT_ALIAS } from "../api/model.js";
import { accessRule, type Authenticator } from "../server/access.js";
import type { Principal } from "../server/context.js";
import { ServiceError } from "../server/errors.js";
import { requestInfo } from "../server/request-info.js";
import { readJsonBody, renderError, sendError, sendJson, type NodeRequest, type NodeResponse, type RestExchange, type RestRouter } from "../server/rest.js";
import { parseChatRequest } from "./chat-request.js";
import type { ChatRouter } from "./chat-router.js";
import type { ChatRequest } from "./chat-types.js";
import { completeIdempotently } from "./idempotent-completion.js";
import type { IdempotencyStore } from "./idempotency.js";

export interface ChatRestDeps {
  router: ChatRouter;
  idempotency: IdempotencyStore;
  authenticator: Authenticator;
}

/** Image content parts travel inline as base64, so chat bodies may be large. */
const MAX_BODY_BYTES = 16 << 20;

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  // Proxies such as nginx would otherwise hold chunks back.
  "x-accel-buffering": "no",
};

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
    const abort = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    if (request.stream === true) {
      await streamCompletion(deps.router, request, principal.accountId, abort.signal, req, res);
      return;
    }
    try {
      const header = req.headers["idempotency-key"];
      const result = await completeIdempotently(deps, request, {
        accountId: principal.accountId,
        idempotencyKey: Array.isArray(header) ? header[0] : header,
        signal: abort.signal,
      });
      if (abort.signal.aborted) return;
      asHttp1(res).writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(result.json),
        "cache-control": "no-store",
        ...(result.replayed ? { "idempotent-replayed": "true" } : {}),
      });
      res.end(result.json);
    } catch (error) {
      if (!abort.signal.aborted) sendError(res, error, req);
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
  accountId: string,
  signal: AbortSignal,
  req: NodeRequest,
  res: NodeResponse,
): Promise<void> {
  const out = asHttp1(res);
  out.writeHead(200, SSE_HEADERS);
  // Commits the 200 now (HTTP/2 sends the head on writeHead already).
  if (typeof out.flushHeaders === "function") out.flushHeaders();
  try {
    const chunks = await router.stream(request, { accountId, signal, fromClient: true });
    for await (const chunk of chunks) {
      if (!out.write(`data: ${JSON.stringify(chunk)}\n\n`)) await drained(res);
      if (signal.aborted) break;
    }
  } catch (error) {
    if (signal.aborted) return;
    out.write(`data: ${JSON.stringify(renderError(error, req).body)}\n\n`);
  }
  if (!signal.aborted) out.end("data: [DONE]\n\n");
}

/**
 * HTTP/1.1 and HTTP/2 compatibility responses share writeHead/write/end, but
 * TypeScript cannot call a method through their union.
 */
function asHttp1(res: NodeResponse): http.ServerResponse {
  return res as http.ServerResponse;
}

/** Waits until the client has taken what was written, or has gone. */
function drained(res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/**
 * The chat route takes bearer keys only (a Console cookie is not a
 * credential here) and names its auth errors as OpenAI clients expect:
 * 401 `invalid_api_key`, 403 `insufficient_scope`. This is the one place the
 * shared authenticator's errors are renamed for `/v1`.
 */
async function authenticateBearer(exchange: RestExchange, authenticator: Authenticator): Promise<Principal> {
  const authorization = exchange.req.headers.authorization;
  if (!authorization) {
    throw new ServiceError("invalid_api_key", "no API key: send it as `Authorization: Bearer <API_KEY>`");
  }
  try {
    return await authenticator.authenticate({
      rule: accessRule(ChatService.method.createChatCompletion),
      // The key alone: cookies and the rest of the request's headers are no credential here.
      headers: { get: (name) => (name.toLowerCase() === "authorization" ? authorization : null) },
      requestMethod: "POST",
      clientAddress: requestInfo(exchange.req)?.clientAddress ?? "",
    });
  } catch (error) {
    if (error instanceof ServiceError && error.type === "unauthenticated") {
      throw new ServiceError("invalid_api_key", error.detail.message, { headers: Object.fromEntries(error.metadata.entries()) });
    }
    if (error instanceof ServiceError && error.type === "permission_denied") {
      throw new ServiceError("insufficient_scope", error.detail.message);
    }
    throw error;
  }
}
