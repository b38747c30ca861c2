import type http from "node:http";
import type http2 from "node:http2";

/** A request as Node's HTTP/1.1 or HTTP/2 compatibility server hands it over. */
export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;
