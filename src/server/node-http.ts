import type http from "node:http";
import type http2 from "node:http2";

/** A request as Node's HTTP/1.1 or HTTP/2 compatibility server hands it over. */
export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Reads the rest of a request body and throws it away, so that an HTTP/1.1
 * connection can take its next request once the answer is sent; past
 * `maxBytes` discarded, the request (and its connection) is destroyed instead.
 */
export function discardBody(req: NodeRequest, maxBytes = Number.POSITIVE_INFINITY): void {
  if (maxBytes === Number.POSITIVE_INFINITY) {
    req.resume();
    return;
  }
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > maxBytes) req.destroy();
  });
}
