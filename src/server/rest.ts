import type http from "node:http";
import type http2 from "node:http2";
import { create, fromJson, type DescMessage, type DescMethodUnary, type JsonValue, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { authorize, type Authenticator } from "./access.js";
import { clientAddressKey, requestLogKey } from "./context.js";
import { apiErrorBody, invalidRequest, openAiErrorBody, ServiceError, toServiceError } from "./errors.js";
import { requestInfo } from "./request-info.js";

export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/** One REST exchange, as a handler sees it. */
export interface RestExchange {
  req: NodeRequest;
  res: NodeResponse;
  url: URL;
}

export type RestHandler = (exchange: RestExchange) => Promise<void> | void;

/**
 * Plain HTTP routes: exact paths by method, plus path prefixes (static pages,
 * artifacts). REST routes that mirror an RPC are thin adapters: they decode
 * the request into the RPC's message and call `callUnary`, which runs the same
 * authorization and service function as the RPC.
 */
export class RestRouter {
  readonly #exact = new Map<string, Map<string, RestHandler>>();
  readonly #prefixes: { prefix: string; handler: RestHandler }[] = [];

  add(method: string, path: string, handler: RestHandler): this {
    const byMethod = this.#exact.get(path) ?? new Map<string, RestHandler>();
    byMethod.set(method, handler);
    if (method === "GET" && !byMethod.has("HEAD")) byMethod.set("HEAD", handler);
    this.#exact.set(path, byMethod);
    return this;
  }

  addPrefix(prefix: string, handler: RestHandler): this {
    this.#prefixes.push({ prefix, handler });
    return this;
  }

  /** A bounded label for metrics: the exact path or the prefix that matched. */
  label(method: string, pathname: string): string {
    if (this.#exact.has(pathname)) return pathname;
    return this.#prefixes.find((p) => pathname.startsWith(p.prefix))?.prefix ?? "other";
  }

  /** The handler for a request, a 405 handler for a known path, or undefined. */
  match(method: string, pathname: string): RestHandler | undefined {
    const byMethod = this.#exact.get(pathname);
    if (byMethod) {
      const handler = byMethod.get(method);
      if (handler) return handler;
      const allow = [...byMethod.keys()].join(", ");
      return ({ req, res }) => {
        res.setHeader("Allow", allow);
        sendError(res, new ServiceError("method_not_allowed", `use ${allow} on ${pathname}`), req);
      };
    }
    return this.#prefixes.find((p) => pathname.startsWith(p.prefix))?.handler;
  }
}

export interface BodyLimits {
  maxBytes: number;
}

/**
 * Reads a JSON body. Refuses, with the documented error, a wrong content
 * type, an oversized body and anything that is not JSON.
 */
export async function readJsonBody(req: NodeRequest, limits: BodyLimits = { maxBytes: 1 << 20 }): Promise<JsonValue> {
  const contentType = String(req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType !== "application/json" && !contentType.endsWith("+json")) {
    drain(req);
    throw invalidRequest("the body must be JSON, sent with content-type: application/json");
  }
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (declared > limits.maxBytes) {
    drain(req);
    throw new ServiceError("payload_too_large", `the body exceeds ${limits.maxBytes} bytes`);
  }
  const text = await readText(req, limits.maxBytes);
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw invalidRequest("the body is not valid JSON");
  }
}

/**
 * The body as UTF-8, by events rather than an async iterator (which costs
 * a promise per chunk on the hottest path). A body that grows past `maxBytes`
 * is refused and the rest is read and discarded, so the answer can be sent.
 */
function readText(req: NodeRequest, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (settle: () => void) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
      settle();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        finish(() => reject(new ServiceError("payload_too_large", `the body exceeds ${maxBytes} bytes`)));
        drain(req);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish(() => resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks, size).toString("utf8")));
    const onError = (error: Error) => finish(() => reject(error));
    const onClose = () => finish(() => reject(new ServiceError("invalid_request", "the request was closed before its body arrived")));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

function drain(req: NodeRequest): void {
  req.resume();
}

/**
 * Decodes a JSON object into an RPC request message. Field types are checked
 * by the message schema; a mismatch is a 400 naming the field.
 */
export function decodeRequest<Desc extends DescMessage>(schema: Desc, json: JsonValue): MessageShape<Desc> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalidRequest("the body must be a JSON object");
  }
  try {
    return fromJson(schema, json, { ignoreUnknownFields: true });
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^cannot decode [^:]*: /, "") : "";
    throw invalidRequest(`invalid field in request body${detail ? `: ${detail}` : ""}`);
  }
}

/**
 * Runs an RPC's service function for a REST request: same context, same
 * authorization, same code. Returns the response message and the headers the
 * function set (e.g. RateLimit-*), which the caller copies to the response.
 */
export async function callUnary<I extends DescMessage, O extends DescMessage>(
  exchange: RestExchange,
  authenticator: Authenticator,
  method: DescMethodUnary<I, O>,
  impl: (request: MessageShape<I>, context: HandlerContext) => Promise<MessageInitShape<O>> | MessageInitShape<O>,
  request: MessageShape<I>,
): Promise<{ response: MessageShape<O>; context: HandlerContext }> {
  const { req, url } = exchange;
  const info = requestInfo(req);
  const abort = new AbortController();
  req.once("close", () => abort.abort());
  const values = createContextValues()
    .set(clientAddressKey, info?.clientAddress ?? "")
    .set(requestLogKey, info);
  const context = createHandlerContext({
    service: method.parent,
    method,
    protocolName: "rest",
    requestMethod: req.method ?? "GET",
    url: url.href,
    requestHeader: headerEntries(req.headers),
    requestSignal: abort.signal,
    contextValues: values,
  });
  await authorize(authenticator, context, info?.clientAddress ?? "");
  const response = create(method.output, await impl(request, context));
  return { response, context };
}

/** Node's request headers as Fetch header entries; the handler context makes its Headers from them once. */
function headerEntries(headers: http.IncomingHttpHeaders): [string, string][] {
  const entries: [string, string][] = [];
  for (const name in headers) {
    const value = headers[name];
    if (name.startsWith(":") || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) entries.push([name, v]);
    else entries.push([name, value]);
  }
  return entries;
}

export function sendJson(res: NodeResponse, status: number, body: unknown, headers?: Headers | Record<string, string>): void {
  const payload = JSON.stringify(body);
  if (headers) {
    const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
    for (const [name, value] of entries) res.setHeader(name, value);
  }
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("content-length", Buffer.byteLength(payload));
  res.setHeader("cache-control", "no-store");
  res.statusCode = status;
  res.end(payload);
}

/** Writes any error in the `/api` shape; unexpected ones are logged, never shown. */
export function sendError(res: NodeResponse, error: unknown, req?: NodeRequest): void {
  const serviceError = toServiceError(error, (cause) => {
    const log = req ? requestInfo(req)?.log : undefined;
    log?.error({ err: cause }, "unexpected error");
  });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Under /v1 every answer is OpenAI's, unknown routes included: OpenAI's SDKs read no other shape.
  const body = req?.url?.startsWith("/v1/") ? openAiErrorBody(serviceError) : apiErrorBody(serviceError);
  sendJson(res, serviceError.status, body, serviceError.metadata);
}
