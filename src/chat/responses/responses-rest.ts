import { ServiceError } from "../../server/errors.js";
import { readJsonBody, renderError, sendJson, type RestExchange, type RestRouter } from "../../server/rest.js";
import { checkAlias } from "../chat-request.js";
import type { ChatRouter } from "../chat-router.js";
import type { IdempotencyStore } from "../idempotency.js";
import { runIdempotently } from "../idempotent-completion.js";
import { asHttp1, authenticateBearer, drained, MAX_BODY_BYTES, SSE_HEADERS } from "../openai-http.js";
import type { ResponseStore } from "./response-store.js";
import { answerOfCompletion, assistantMessage, finishedResponse, newResponseId, responseEvents, responseShell } from "./responses-answer.js";
import { type ChatMessage, parseResponsesRequest, toChatRequest } from "./responses-request.js";
import type { Authenticator } from "../../server/access.js";

export interface ResponsesRestDeps {
  router: ChatRouter;
  idempotency: IdempotencyStore;
  responses: ResponseStore;
  authenticator: Authenticator;
}

const PREFIX = "/v1/responses/";

/**
 * The OpenAI Responses API for the alias, served by translating each
 * request to a chat completion: every configured upstream serves it, and
 * the pool, failover, alias rules and provider hiding are the chat router's.
 * `POST /v1/responses`, and `GET` / `DELETE /v1/responses/{id}` for stored ones.
 */
export function responsesRoutes(rest: RestRouter, deps: ResponsesRestDeps): void {
  rest.add("POST", "/v1/responses", (exchange) => createResponse(exchange, deps));
  rest.addPrefix(PREFIX, async (exchange) => {
    const id = decodeURIComponent(exchange.url.pathname.slice(PREFIX.length));
    const method = exchange.req.method ?? "GET";
    if (id === "" || id.includes("/")) throw new ServiceError("not_found", `no route for ${method} ${exchange.url.pathname}`);
    if (method !== "GET" && method !== "HEAD" && method !== "DELETE") {
      exchange.res.setHeader("Allow", "GET, DELETE");
      throw new ServiceError("method_not_allowed", `use GET or DELETE on ${PREFIX}{id}`);
    }
    const principal = await authenticateBearer(exchange, deps.authenticator);
    if (method === "DELETE") {
      if (!(await deps.responses.delete(principal.accountId, id))) throw missing(id);
      sendJson(exchange.res, 200, { id, object: "response", deleted: true });
      return;
    }
    const stored = await deps.responses.response(principal.accountId, id);
    if (stored === undefined) throw missing(id);
    sendRaw(exchange, 200, stored);
  });
}

async function createResponse(exchange: RestExchange, deps: ResponsesRestDeps): Promise<void> {
  const { req, res } = exchange;
  const principal = await authenticateBearer(exchange, deps.authenticator);
  const request = parseResponsesRequest(await readJsonBody(req, { maxBytes: MAX_BODY_BYTES }));
  checkAlias(request);
  const { accountId } = principal;
  let history: ChatMessage[] = [];
  if (typeof request.previous_response_id === "string") {
    const previous = await deps.responses.messages(accountId, request.previous_response_id);
    if (!previous) throw missing(request.previous_response_id, "previous_response_id");
    history = previous;
  }
  const stream = request.stream === true;
  const { chat, input } = toChatRequest(request, history, stream);
  const id = newResponseId();
  const shell = responseShell(id, request, Math.floor(Date.now() / 1000), "in_progress");
  const keep = (response: string, answer: Parameters<typeof assistantMessage>[0]) =>
    request.store === false ? Promise.resolve() : deps.responses.save(accountId, id, response, [...history, ...input, assistantMessage(answer)]);

  // The client hanging up aborts the upstream request at once.
  const abort = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  if (stream) {
    await streamResponse(exchange, deps.router, { chat, shell, accountId, signal: abort.signal, keep });
    return;
  }
  const produce = async () => {
    const completion = await deps.router.complete(chat, { accountId, signal: abort.signal, fromClient: true });
    const answer = answerOfCompletion(completion);
    const json = JSON.stringify(finishedResponse(shell, answer));
    await keep(json, answer);
    return json;
  };
  const header = req.headers["idempotency-key"];
  const idempotencyKey = Array.isArray(header) ? header[0] : header;
  const result =
    idempotencyKey === undefined
      ? { json: await produce(), replayed: false }
      : await runIdempotently(deps.idempotency, { accountId, key: idempotencyKey, request: { responses: request } }, produce);
  if (abort.signal.aborted) return;
  sendRaw(exchange, 200, result.json, result.replayed ? { "idempotent-replayed": "true" } : {});
}

/**
 * The streamed answer: typed events, each `event: <type>` with its data
 * numbered by `sequence_number`. From the first event on, the status is 200:
 * a refusal or an upstream failure is an `error` event, which the SDKs raise.
 */
async function streamResponse(
  exchange: RestExchange,
  router: ChatRouter,
  call: {
    chat: Parameters<ChatRouter["stream"]>[0];
    shell: ReturnType<typeof responseShell>;
    accountId: string;
    signal: AbortSignal;
    keep: (response: string, answer: Parameters<typeof assistantMessage>[0]) => Promise<void>;
  },
): Promise<void> {
  const { req, res } = exchange;
  const out = asHttp1(res);
  // Refusals before an upstream accepts (alias, pool, no upstream) are still plain HTTP errors.
  const chunks = await router.stream(call.chat, { accountId: call.accountId, signal: call.signal, fromClient: true });
  out.writeHead(200, SSE_HEADERS);
  if (typeof out.flushHeaders === "function") out.flushHeaders();
  let sequence = 0;
  const send = async (type: string, data: Record<string, unknown>) => {
    if (!out.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: sequence++ })}\n\n`)) await drained(res);
  };
  try {
    for await (const [type, data] of responseEvents(call.shell, chunks, (response, answer) => call.keep(JSON.stringify(response), answer))) {
      if (call.signal.aborted) break;
      await send(type, data);
    }
  } catch (error) {
    if (call.signal.aborted) return;
    const { error: rendered } = renderError(error, req);
    const detail: Record<string, unknown> = { code: rendered.type, message: rendered.detail.message, param: rendered.param ?? null };
    if (rendered.detail.capacityState !== undefined) detail.capacity_state = rendered.detail.capacityState;
    if (rendered.detail.resetAt !== undefined) detail.reset_at = rendered.detail.resetAt;
    await send("error", detail);
  }
  if (!call.signal.aborted) out.end();
}

function missing(id: string, param?: string): ServiceError {
  return new ServiceError("not_found", `no response with id \`${id}\` was found`, { param });
}

function sendRaw(exchange: RestExchange, status: number, json: string, headers: Record<string, string> = {}): void {
  asHttp1(exchange.res).writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
    "cache-control": "no-store",
    ...headers,
  });
  exchange.res.end(json);
}
