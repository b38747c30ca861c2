import { OPENAI_BODY_MAX_BYTES } from "../api/limits.js";
import http from "node:http";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { accessRule, type Authenticator } from "../server/access.js";
import type { Principal } from "../server/context.js";
import type { CompletionResult } from "../server/idempotency.js";
import type { NodeRequest, NodeResponse } from "../server/node-http.js";
import { requestInfo } from "../server/request-info.js";
import type { RestExchange } from "../server/rest.js";

export const MAX_BODY_BYTES = OPENAI_BODY_MAX_BYTES;

/**
 * Makes the response an event stream, status 200, without sending its head:
 * the head leaves with the first event, in the same write. Until then it is
 * not sent (`headersSent` stays false, which `writeHead` would set at once),
 * so a client that leaves first is counted `aborted`, not as a 200 it never got.
 */
export function setEventStreamHead(res: NodeResponse): void {
  res.statusCode = 200;
  res.setHeader("content-type", "text/event-stream; charset=utf-8");
  res.setHeader("cache-control", "no-cache");
  // Proxies such as nginx would otherwise hold chunks back.
  res.setHeader("x-accel-buffering", "no");
}

/** A non-streamed answer, already JSON; a replay under an `Idempotency-Key` says so in `Idempotent-Replayed`. */
export function sendAnswer(res: NodeResponse, result: CompletionResult): void {
  asHttp1(res).writeHead(200, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(result.json),
    "cache-control": "no-store",
    ...(result.replayed ? { "idempotent-replayed": "true" } : {}),
  });
  res.end(result.json);
}

/** The `Idempotency-Key` header as sent (the first, if sent twice). */
export function idempotencyKeyOf(req: NodeRequest): string | undefined {
  const header = req.headers["idempotency-key"];
  return Array.isArray(header) ? header[0] : header;
}

/**
 * HTTP/1.1 and HTTP/2 compatibility responses share writeHead/write/end, but
 * TypeScript cannot call a method through their union.
 */
export function asHttp1(res: NodeResponse): http.ServerResponse {
  return res as http.ServerResponse;
}

/**
 * Writes one SSE event; false when the client should be let drain first.
 * The events written in one tick (those an upstream read carried together)
 * leave in one socket write: an HTTP/1.1 response is corked until the next
 * tick, so a ten-event answer is not ten system calls.
 */
export function writeEvent(res: NodeResponse, event: string): boolean {
  // The socket, not the response: corking a chunked ServerResponse loses what is written after its first uncork (Node 24).
  const socket = res instanceof http.ServerResponse ? res.socket : null;
  if (socket && socket.writableCorked === 0) {
    socket.cork();
    process.nextTick(() => socket.uncork());
  }
  return asHttp1(res).write(event);
}

/** Waits until the client has taken what was written, or has gone. */
export function drained(res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    // Already closed (an HTTP/2 stream the client reset): no event is coming.
    if (res.destroyed || res.closed) {
      resolve();
      return;
    }
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
 * The `/v1` routes authenticate as ChatService's RPCs do (its access rule:
 * an API key with `chat`, never a Console cookie, refusals named as OpenAI
 * clients expect). Only the key is passed on: cookies and the rest of the
 * request's headers are no credential here.
 */
export function authenticateBearer(exchange: RestExchange, authenticator: Authenticator): Promise<Principal> {
  const authorization = exchange.req.headers.authorization ?? null;
  return authenticator.authenticate({
    rule: accessRule(ChatService.method.createChatCompletion),
    headers: { get: (name) => (name.toLowerCase() === "authorization" ? authorization : null) },
    requestMethod: "POST",
    clientAddress: requestInfo(exchange.req)?.clientAddress ?? "",
  });
}
