import { fromJson, ScalarType, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { isUtf8 } from "node:buffer";
import { API_BODY_MAX_BYTES } from "../api/limits.js";
import { COMPRESS_MIN_BYTES, endCompressed } from "./compression.js";
import { apiErrorBody, invalidRequest, openAiErrorBody, ServiceError, toServiceError } from "./errors.js";
import { repeatedKey } from "./json.js";
import { requestInfo } from "./request-info.js";

import { discardBody, type NodeRequest, type NodeResponse } from "./node-http.js";

export type { NodeRequest, NodeResponse };

/** One REST exchange, as a handler sees it. */
export interface RestExchange {
  req: NodeRequest;
  res: NodeResponse;
  url: URL;
  /**
   * Aborted when the client hangs up before the answer is finished (what a
   * route stops, such as an upstream request), or with SHUTTING_DOWN when the
   * shutdown's grace period ends first, so that the answer can say so.
   */
  readonly hangUp: AbortSignal;
}

export type RestHandler = (exchange: RestExchange) => Promise<void> | void;

/**
 * Plain HTTP routes: exact paths by method, plus path prefixes (static pages,
 * artifacts). REST routes that mirror an RPC are thin adapters: they say how
 * to decode the request into the RPC's message and call it through the
 * RestRpc pipeline, which runs the same authorization, interceptors and
 * service function as the RPC.
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
  label(_method: string, pathname: string): string {
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
  /**
   * Also refuse a body that is not UTF-8 (rather than read U+FFFD in place
   * of its bad bytes) or that names a key twice in one object (rather than
   * keep the last, as JSON.parse does; Connect refuses it too). It costs a
   * pass over the body: `/api` takes it, `/v1` reads OpenAI's bodies as
   * OpenAI does and leaves it off.
   */
  strict?: boolean;
}

/** The `/api` routes' bodies. */
const API_BODY_LIMITS: BodyLimits = { maxBytes: API_BODY_MAX_BYTES, strict: true };

/**
 * Reads a JSON body. Refuses, with the documented error, a wrong content
 * type, an oversized body and anything that is not JSON.
 */
export async function readJsonBody(req: NodeRequest, limits: BodyLimits = API_BODY_LIMITS): Promise<JsonValue> {
  const contentType = String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
  if (contentType !== "application/json" && !contentType.endsWith("+json")) {
    discardBody(req);
    throw invalidRequest("the body must be JSON, sent with content-type: application/json");
  }
  const encoding = contentEncoding(req.headers["content-encoding"]);
  if (encoding !== undefined) {
    discardBody(req);
    // SPEC's table: a body that is not JSON as sent is 400 `invalid_request`; the message says why.
    throw invalidRequest(`a body sent with content-encoding: ${encoding.slice(0, 40)} is not taken here; send it uncompressed`);
  }
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (declared > limits.maxBytes) {
    discardBody(req);
    throw new ServiceError("payload_too_large", `the body exceeds ${limits.maxBytes} bytes`);
  }
  const bytes = await readBytes(req, limits.maxBytes);
  if (limits.strict && !isUtf8(bytes)) throw invalidRequest("the body is not valid UTF-8");
  const text = bytes.toString("utf8");
  let body: JsonValue;
  try {
    body = JSON.parse(text) as JsonValue;
  } catch {
    throw invalidRequest("the body is not valid JSON");
  }
  const repeated = limits.strict ? repeatedKey(text) : undefined;
  if (repeated !== undefined) throw invalidRequest(`the body names the key "${repeated.slice(0, 64)}" twice in one object; send each key once`);
  return body;
}

/** The codings a `Content-Encoding` names, `identity` (no coding) and empty ones left out; undefined when none is left. */
function contentEncoding(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const codings = header
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity");
  return codings.length === 0 ? undefined : codings.join(", ");
}

/**
 * The body, by events rather than an async iterator (which costs a promise
 * per chunk on the hottest path). A body that grows past `maxBytes` is
 * refused and the rest is read and discarded, so the answer can be sent.
 */
function readBytes(req: NodeRequest, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Listeners stay on the request and go with it, rather than being taken off one by one.
    let settled = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        settled = true;
        req.off("data", onData);
        reject(new ServiceError("payload_too_large", `the body exceeds ${maxBytes} bytes`));
        discardBody(req);
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.on("end", () => {
      settled = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.on("error", (error: Error) => {
      settled = true;
      reject(error);
    });
    // Every request closes, most of them long after their body ended.
    req.on("close", () => {
      if (!settled) reject(new ServiceError("invalid_request", "the request was closed before its body arrived"));
    });
  });
}

/**
 * Decodes a JSON object into an RPC request message. Field types are checked
 * by the message schema; a mismatch is a 400 naming the field.
 */
export function decodeRequest<Desc extends DescMessage>(schema: Desc, json: JsonValue): MessageShape<Desc> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalidRequest("the body must be a JSON object");
  }
  const loose = looseIntegerString(schema, json);
  if (loose) throw invalidRequest(`invalid field \`${loose.field}\` in request body: ${JSON.stringify(loose.value)} is not a number as JSON writes one`);
  try {
    return fromJson(schema, json, { ignoreUnknownFields: true });
  } catch (error) {
    throw invalidRequest(decodeFailure(schema, error instanceof Error ? error.message : ""));
  }
}

const INTEGER_TYPES: ReadonlySet<ScalarType> = new Set([
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * ProtoJSON takes an integer as a number or as a string holding one (`"1"`,
 * `"1e0"`); protobuf-es reads that string with `Number()`, which also takes
 * `"0x1"`, `"0b1"`, `"+1"` or `"1."`. A REST body's string must hold a
 * number as JSON writes it. (Request messages here are flat: the top level
 * is all there is to check.)
 */
function looseIntegerString(schema: DescMessage, json: JsonObject): { field: string; value: string } | undefined {
  for (const field of schema.fields) {
    if (field.fieldKind !== "scalar" || !INTEGER_TYPES.has(field.scalar)) continue;
    for (const name of [field.jsonName, field.name]) {
      const value = json[name];
      if (typeof value === "string" && !JSON_NUMBER.test(value)) return { field: field.jsonName, value };
    }
  }
  return undefined;
}

/**
 * protobuf-es says `cannot decode field zero.v1.Msg.plan_id from JSON:
 * expected string, got 5`; the client sent `planId`, so that is the name
 * the message gives.
 */
function decodeFailure(schema: DescMessage, message: string): string {
  const prefix = "cannot decode field ";
  const separator = " from JSON: ";
  const at = message.indexOf(separator);
  if (!message.startsWith(prefix) || at === -1) {
    const detail = message.startsWith("cannot decode ") && message.includes(": ") ? message.slice(message.indexOf(": ") + 2) : message;
    return `invalid field in request body${detail ? `: ${detail}` : ""}`;
  }
  const path = message.slice(prefix.length, at);
  const name = path.slice(path.lastIndexOf(".") + 1);
  const field = schema.fields.find((f) => f.name === name);
  return `invalid field \`${field?.jsonName ?? name}\` in request body: ${message.slice(at + separator.length)}`;
}

export function sendJson(res: NodeResponse, status: number, body: unknown, headers?: Headers | Record<string, string>): void {
  const payload = JSON.stringify(body);
  if (headers) {
    const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
    for (const [name, value] of entries) res.setHeader(name, value);
  }
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("cache-control", "no-store");
  res.statusCode = status;
  // Only `/api`'s answers: `/v1`'s are OpenAI's, small, and on the gateway's measured path.
  if (payload.length >= COMPRESS_MIN_BYTES && isApiPath(res.req.url)) {
    endCompressed(res.req, res, Buffer.from(payload));
    return;
  }
  res.setHeader("content-length", Buffer.byteLength(payload));
  res.end(payload);
}

/** `/api/…`: the service's own REST routes. */
function isApiPath(url: string | undefined): boolean {
  return url?.startsWith("/api/") === true;
}

/**
 * The one error renderer for plain HTTP: any error as a ServiceError and the
 * body its route family reads. Under /v1 every answer is OpenAI's, unknown
 * routes included (OpenAI's SDKs read no other shape); elsewhere the `/api`
 * shape. Unexpected errors are logged with their cause, never shown; the
 * database being away goes to the server's outage log (RequestInfo.logDatabaseDown).
 */
export function renderError(error: unknown, req?: NodeRequest): { error: ServiceError; body: { error: Record<string, unknown> } } {
  const info = req ? requestInfo(req) : undefined;
  const serviceError = toServiceError(
    error,
    (cause) => info?.logUnexpected(cause),
    (cause) => info?.logDatabaseDown(cause),
  );
  const body = req?.url !== undefined && isOpenAiPath(req.url) ? openAiErrorBody(serviceError) : apiErrorBody(serviceError);
  return { error: serviceError, body };
}

/** `/v1` and below: OpenAI's routes, whose every answer is in OpenAI's shape. */
function isOpenAiPath(url: string): boolean {
  return url.startsWith("/v1") && (url.length === 3 || url[3] === "/" || url[3] === "?");
}

/** Answers with any error, rendered by `renderError`; a response already under way is cut off instead. */
export function sendError(res: NodeResponse, error: unknown, req?: NodeRequest): void {
  const rendered = renderError(error, req);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, rendered.error.status, rendered.body, rendered.error.metadata);
}
