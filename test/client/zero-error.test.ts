import http from "node:http";
import type { AddressInfo } from "node:net";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createZeroClient as createNodeClient } from "../../src/client/node.js";
import { createZeroClient as createWebClient, ZeroError, type ZeroClient } from "../../src/client/zero-client.js";
import { startTestApp, type TestApp } from "../support/app.js";

/** gRPC sessions opened here, closed before the service is (a session left open holds its graceful close). */
const http2Sessions: Http2SessionManager[] = [];

const TRANSPORTS: [string, (baseUrl: string) => ZeroClient][] = [
  ["Connect over fetch (browser entry)", (baseUrl) => createWebClient({ baseUrl, apiKey: "zk_test" })],
  ["Connect over connect-node (Node default)", (baseUrl) => createNodeClient({ baseUrl, apiKey: "zk_test" })],
  [
    "gRPC",
    (baseUrl) =>
      createNodeClient({
        baseUrl,
        apiKey: "zk_test",
        transport: (init) => {
          const sessionManager = new Http2SessionManager(init.baseUrl);
          http2Sessions.push(sessionManager);
          return createGrpcTransport({ ...init, sessionManager });
        },
      }),
  ],
];

async function caught(promise: Promise<unknown>): Promise<ZeroError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ZeroError);
    return error as ZeroError;
  }
  throw new Error("the call succeeded");
}

// A call that never got through to the service is `unreachable`, however the transport failed, in words a person can act on.
describe("ZeroError for a call that never got through", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    for (const session of http2Sessions) session.abort();
    await app.close();
  });

  it.each(TRANSPORTS)("%s: https:// to the service, which speaks plain HTTP", async (_name, connect) => {
    const error = await caught(connect(app.url.replace(/^http:/, "https:")).executions.list());
    expect(error).toMatchObject({ type: "unreachable", fromServer: false, message: "the server does not speak TLS (try http://)" });
  });

  it("gRPC to a server that speaks only HTTP/1.1", async () => {
    const http1 = http.createServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => http1.listen(0, "127.0.0.1", resolve));
    try {
      const client = createNodeClient({ baseUrl: `http://127.0.0.1:${(http1.address() as AddressInfo).port}`, apiKey: "zk_test", protocol: "grpc" });
      const error = await caught(client.executions.list());
      expect(error).toMatchObject({
        type: "unreachable",
        fromServer: false,
        message: "the server does not speak HTTP/2 without TLS (h2c), which gRPC over http:// needs",
      });
    } finally {
      http1.closeAllConnections();
      await new Promise((resolve) => http1.close(resolve));
    }
  });
});
