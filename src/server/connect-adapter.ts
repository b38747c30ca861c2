import { Code, ConnectError, createConnectRouter, type ConnectRouter, type ContextValues, type Interceptor } from "@connectrpc/connect";
import type { JsonReadOptions } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeFromString, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse } from "@connectrpc/connect/protocol-grpc-web";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { protobufParseFailure } from "../api/errors.js";
import { OPENAI_BODY_MAX_BYTES } from "../api/limits.js";
import { decodedOrAsSent } from "../strings.js";
import { jsonAnswersKey } from "./context.js";
import { discardBody, type NodeRequest, type NodeResponse } from "./node-http.js";
import { sendJson } from "./rest.js";

export interface ConnectAdapterOptions {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  shutdownSignal: AbortSignal;
  readMaxBytes: number;
  contextValues: (req: NodeRequest) => ContextValues;
  /** Requests for paths that are not an RPC. */
  fallback: (req: NodeRequest, res: NodeResponse) => void;
  /** Called when a handler fails outside the RPC protocol (e.g. the socket broke). */
  onHandlerError: (error: unknown) => void;
  /**
   * Called, once the answer is written, with the code of an RPC that failed
   * over a protocol that answers HTTP 200 whatever the outcome: gRPC,
   * gRPC-Web and Connect streams. (Connect's unary answers say it in their HTTP status.)
   */
  onRpcFailed: (req: NodeRequest, code: Code) => void;
}

/**
 * A JSON body that is not UTF-8 is refused (invalid_argument), as REST's
 * /api refuses it, rather than read with U+FFFD in its bad bytes' place.
 * The router's option type omits `textDecoder`, which its JSON
 * serialization reads.
 */
const STRICT_JSON: Partial<JsonReadOptions> & { textDecoder: { decode(data: Uint8Array): string } } = {
  ignoreUnknownFields: true,
  textDecoder: new TextDecoder("utf-8", { fatal: true }),
};

/**
 * Serves Connect, gRPC and gRPC-Web through Connect-ES's router; the same job
 * as `connectNodeAdapter`, plus one correction. Connect-ES reports a request
 * body that is not valid protobuf as `internal` (HTTP 500 / grpc-status 13),
 * and for unary calls it does so before any interceptor runs. A body the
 * client got wrong is the client's error, so those answers are rewritten to
 * `invalid_argument` (400 / grpc-status 3) here, where they leave the router;
 * a Connect GET whose base64 `message` does not decode (which Connect-ES also
 * calls `internal`) is refused before it reaches the router.
 * (Errors inside streams pass through the error interceptor, which does the same.)
 * Every answer is `Cache-Control: no-store`, as every REST answer is.
 */
export function createConnectAdapter(options: ConnectAdapterOptions): (req: NodeRequest, res: NodeResponse) => void {
  const router = createConnectRouter({
    interceptors: options.interceptors,
    shutdownSignal: options.shutdownSignal,
    readMaxBytes: options.readMaxBytes,
    acceptCompression: [compressionGzip, compressionBrotli],
    jsonOptions: STRICT_JSON,
  });
  options.routes(router);
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));

  return (req, res) => {
    const path = req.url?.split("?", 2)[0] ?? "";
    const handler = handlers.get(path);
    if (!handler) {
      options.fallback(req, res);
      return;
    }
    // Answers carry accounts' data and secrets (a new key's secret, a session's e-mail), Connect GETs' included.
    res.setHeader("cache-control", "no-store");
    if (req.method === "GET" && !isDecodableGetMessage(req.url ?? "")) {
      // Connect-ES throws a plain Error for it, which it answers as `internal`.
      sendJson(res, 400, { code: "invalid_argument", message: "the request's message is not valid base64" });
      return;
    }
    const values = options.contextValues(req);
    const jsonAnswers = JSON_CONTENT_TYPES.has(
      String(req.headers["content-type"] ?? "")
        .split(";", 1)[0]!
        .trim()
        .toLowerCase(),
    )
      ? []
      : undefined;
    if (jsonAnswers) values.set(jsonAnswersKey, jsonAnswers);
    const request = { ...universalRequestFromNodeRequest(req, res, undefined, values), body: bodyKeepingConnection(req) };
    handler(request)
      .then((response) => reclassifyParseErrors(response))
      .then((response) => (jsonAnswers ? withJsonAnswers(response, jsonAnswers) : response))
      .then((response) =>
        universalResponseToNodeResponse(
          noticingFailure(response, (code) => options.onRpcFailed(req, code)),
          res,
        ),
      )
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code !== Code.Aborted) options.onHandlerError(reason);
      });
  };
}

/**
 * The request body as Connect reads it. Connect stops reading at
 * `readMaxBytes`, and Node's stream iterator would then destroy the request
 * and with it the socket, a keep-alive connection its answer has just said
 * stays open: the client's next call on it would fail. The rest is read and
 * thrown away instead, up to the largest body any route reads (`/v1`'s),
 * past which the connection is closed.
 */
async function* bodyKeepingConnection(req: NodeRequest): AsyncIterable<Uint8Array> {
  try {
    yield* req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
  } finally {
    if (!req.complete && !req.destroyed) discardBody(req, OPENAI_BODY_MAX_BYTES);
  }
}

/** Whether a Connect GET's `message` decodes, when it says it is base64 (`base64=1`), by the decoder Connect-ES itself uses. */
function isDecodableGetMessage(url: string): boolean {
  const query = url.indexOf("?");
  if (query === -1) return true;
  const params = new URLSearchParams(url.slice(query + 1));
  if (params.get("base64") !== "1") return true;
  try {
    base64Decode(params.get("message") ?? "");
    return true;
  } catch {
    return false;
  }
}

/** Request content types whose answer is the JSON form: Connect unary, Connect streaming, gRPC-Web and gRPC. */
const JSON_CONTENT_TYPES = new Set(["application/json", "application/connect+json", "application/grpc-web+json", "application/grpc+json"]);

/**
 * Puts the JSON a service gave for each message (`jsonAnswersKey`) in place
 * of the message's own JSON form. A unary answer is one JSON body; a stream
 * is enveloped messages (a flags byte and a 4-byte length each), of which
 * only uncompressed data envelopes are replaced, in order, and only when the
 * service gave an answer for the first: other methods pass as they are.
 */
function withJsonAnswers(response: UniversalServerResponse, answers: string[]): UniversalServerResponse {
  if (!response.body || response.header?.has("content-encoding")) return response;
  if (response.header?.get("content-type")?.startsWith("application/json")) {
    if (response.status !== 200 || answers.length !== 1) return response;
    const body = Buffer.from(answers[0]!);
    response.header.set("content-length", String(body.length));
    return { ...response, body: once(body) };
  }
  return { ...response, body: replaceEnvelopes(response.body, answers) };
}

const COMPRESSED = 0b01;

async function* replaceEnvelopes(body: AsyncIterable<Uint8Array>, answers: string[]): AsyncIterable<Uint8Array> {
  let pending = Buffer.alloc(0);
  let replacing: boolean | undefined;
  for await (const chunk of body) {
    if (replacing === false) {
      yield chunk;
      continue;
    }
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    const out: Buffer[] = [];
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const end = 5 + pending.readUInt32BE(1);
      const flags = pending[0]!;
      let frame = pending.subarray(0, end);
      pending = pending.subarray(end);
      // Data envelopes have no flag but compression; end-of-stream and trailer envelopes pass as they are.
      if ((flags & ~COMPRESSED) === 0) {
        replacing ??= answers.length > 0;
        const answer = replacing ? answers.shift() : undefined;
        if (answer !== undefined && flags === 0) {
          const json = Buffer.from(answer);
          frame = Buffer.alloc(5 + json.length);
          frame.writeUInt32BE(json.length, 1);
          json.copy(frame, 5);
        }
      }
      out.push(frame);
    }
    if (replacing === false) {
      out.push(pending);
      pending = Buffer.alloc(0);
    }
    if (out.length > 0) yield out.length === 1 ? out[0]! : Buffer.concat(out);
  }
  if (pending.length > 0) yield pending;
}

async function reclassifyParseErrors(response: UniversalServerResponse): Promise<UniversalServerResponse> {
  // gRPC: the status travels in trailers (or headers, for a trailers-only answer).
  for (const headers of [response.trailer, response.header]) {
    if (headers?.get("grpc-status") === "13" && protobufParseFailure(decodedOrAsSent(headers.get("grpc-message") ?? "")) !== undefined) {
      headers.set("grpc-status", String(Code.InvalidArgument));
      return response;
    }
  }
  if (response.header?.get("content-type")?.startsWith("application/grpc-web") && response.body) {
    return reclassifyGrpcWebTrailer(response, response.body);
  }
  // Connect unary: a 500 with a small JSON error body.
  if (response.status !== 500 || !response.header?.get("content-type")?.startsWith("application/json") || !response.body) {
    return response;
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let error: { code?: string; message?: string } | undefined;
  try {
    error = JSON.parse(bytes.toString("utf8")) as typeof error;
  } catch {
    error = undefined;
  }
  const parseFailure = error?.code === "internal" ? protobufParseFailure(error.message ?? "") : undefined;
  if (parseFailure !== undefined) {
    const body = Buffer.from(JSON.stringify({ code: "invalid_argument", message: `the request is not valid protobuf: ${parseFailure}` }));
    response.header.set("content-length", String(body.length));
    return { ...response, status: 400, body: once(body) };
  }
  return { ...response, body: once(bytes) };
}

/**
 * gRPC-Web: the status travels in a trailer frame (flag 0x80) at the end of
 * the body, as HTTP/1 header lines. Only an answer small enough to be an
 * error is read whole; anything longer passes as it streams.
 */
async function reclassifyGrpcWebTrailer(response: UniversalServerResponse, body: AsyncIterable<Uint8Array>): Promise<UniversalServerResponse> {
  const iterator = body[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) return { ...response, body: once(new Uint8Array(0)) };
  const bytes = Buffer.from(first.value);
  const isTrailerOnly = bytes.length >= 5 && (bytes[0]! & 0x80) !== 0 && bytes.readUInt32BE(1) === bytes.length - 5;
  if (isTrailerOnly) {
    const trailer = bytes.subarray(5).toString("latin1");
    const message = /grpc-message:([^\r\n]*)/.exec(trailer)?.[1] ?? "";
    if (/grpc-status:\s*13\b/.test(trailer) && protobufParseFailure(decodedOrAsSent(message.trim())) !== undefined) {
      const fixed = Buffer.from(trailer.replace(/grpc-status:\s*13\b/, `grpc-status:${Code.InvalidArgument}`), "latin1");
      const frame = Buffer.concat([Buffer.from([bytes[0]!, 0, 0, 0, 0]), fixed]);
      frame.writeUInt32BE(fixed.length, 1);
      response.header?.delete("content-length");
      return { ...response, body: once(frame) };
    }
  }
  return { ...response, body: prepend(bytes, iterator) };
}

async function* prepend(first: Uint8Array, rest: AsyncIterator<Uint8Array>): AsyncIterable<Uint8Array> {
  yield first;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}

/**
 * The answer as it is, telling `onFailure` the code of an RPC that failed,
 * read where its protocol puts it once the body is written: gRPC's trailers
 * (or headers, for an answer with trailers only), gRPC-Web's trailer frame
 * and a Connect stream's end message, each the body's last frame. A body the
 * client left before its end tells nothing.
 */
function noticingFailure(response: UniversalServerResponse, onFailure: (code: Code) => void): UniversalServerResponse {
  const contentType = response.header?.get("content-type") ?? "";
  let failure: (lastChunk: Uint8Array | undefined) => Code | undefined;
  if (contentType.startsWith("application/grpc-web")) {
    failure = (lastChunk) => {
      const trailer = lastFrame(lastChunk, trailerFlag);
      return trailer && grpcFailure(trailerParse(trailer));
    };
  } else if (contentType.startsWith("application/grpc")) {
    failure = () => grpcFailure(response.trailer) ?? grpcFailure(response.header);
  } else if (contentType.startsWith("application/connect+")) {
    failure = (lastChunk) => {
      const end = lastFrame(lastChunk, endStreamFlag);
      return end && connectStreamFailure(end);
    };
  } else {
    return response;
  }
  const report = (lastChunk: Uint8Array | undefined) => {
    const code = failure(lastChunk);
    if (code !== undefined) onFailure(code);
  };
  if (!response.body) {
    report(undefined);
    return response;
  }
  return { ...response, body: reportingEnd(response.body, report) };
}

async function* reportingEnd(body: AsyncIterable<Uint8Array>, report: (lastChunk: Uint8Array | undefined) => void): AsyncIterable<Uint8Array> {
  let lastChunk: Uint8Array | undefined;
  for await (const chunk of body) {
    lastChunk = chunk;
    yield chunk;
  }
  report(lastChunk);
}

/**
 * The data of the chunk's last enveloped frame when its flags are `flags`
 * (and so it is not compressed). Connect writes each frame as one chunk, and
 * `replaceEnvelopes` only ever joins whole frames.
 */
function lastFrame(chunk: Uint8Array | undefined, flags: number): Uint8Array | undefined {
  if (!chunk) return undefined;
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  let start = 0;
  while (start + 5 <= chunk.length) {
    const end = start + 5 + view.getUint32(start + 1);
    if (end > chunk.length) return undefined;
    if (end === chunk.length) return chunk[start] === flags ? chunk.subarray(start + 5, end) : undefined;
    start = end;
  }
  return undefined;
}

function grpcFailure(headers: Headers | undefined): Code | undefined {
  const status = headers?.get("grpc-status");
  if (!status || status === "0") return undefined;
  const code = Number(status);
  return code in Code ? (code as Code) : Code.Unknown;
}

function connectStreamFailure(end: Uint8Array): Code | undefined {
  let message: { error?: { code?: unknown } };
  try {
    message = JSON.parse(Buffer.from(end.buffer, end.byteOffset, end.byteLength).toString("utf8")) as typeof message;
  } catch {
    return Code.Unknown;
  }
  const code = message?.error?.code;
  if (code === undefined) return undefined;
  return (typeof code === "string" ? codeFromString(code) : undefined) ?? Code.Unknown;
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
