import { createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { expect } from "vitest";
import { createZeroClient as createNodeClient } from "../../src/client/node.js";
import { createZeroClient as createWebClient, ZeroError, type ZeroClient } from "../../src/client/zero-client.js";

/**
 * HTTP/2 sessions the gRPC clients opened, to be closed before the service is:
 * a client that hung up on a watch leaves its session open, and the service's
 * graceful close (src/server/listener.ts) then waits on that socket for good.
 */
export const http2Sessions: Http2SessionManager[] = [];

/** The same client over each way in: fetch (the browser entry), connect-node, gRPC, gRPC-Web. */
export const TRANSPORTS: [string, (baseUrl: string, apiKey?: string) => ZeroClient][] = [
  ["Connect over fetch (browser entry)", (baseUrl, apiKey) => createWebClient({ baseUrl, apiKey })],
  ["Connect over connect-node (Node default)", (baseUrl, apiKey) => createNodeClient({ baseUrl, apiKey })],
  [
    "gRPC over h2c",
    (baseUrl, apiKey) =>
      createNodeClient({
        baseUrl,
        apiKey,
        transport: (init) => {
          const sessionManager = new Http2SessionManager(init.baseUrl);
          http2Sessions.push(sessionManager);
          return createGrpcTransport({ ...init, sessionManager });
        },
      }),
  ],
  [
    "gRPC-Web through a transport factory",
    (baseUrl, apiKey) => createNodeClient({ baseUrl, apiKey, transport: (init) => createGrpcWebTransport({ ...init, httpVersion: "1.1" }) }),
  ],
];

/** The ZeroError a call failed with; fails the test if it succeeded or threw anything else. */
export async function caught(promise: Promise<unknown>): Promise<ZeroError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ZeroError);
    return error as ZeroError;
  }
  throw new Error("the call succeeded");
}
