import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createZeroClient as createNodeClient } from "../../src/client/node.js";
import type { ZeroClient } from "../../src/client/zero-client.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { HeldWork } from "../support/stage-work.js";
import { caught, http2Sessions, TRANSPORTS } from "./support.js";

/** Fetch, connect-node and gRPC, each with a key the service never sees (no call here gets that far). */
const CLIENTS: [string, (baseUrl: string) => ZeroClient][] = TRANSPORTS.slice(0, 3).map(([name, connect]) => [name, (baseUrl) => connect(baseUrl, "zk_test")]);

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

  it.each(CLIENTS)("%s: https:// to the service, which speaks plain HTTP", async (_name, connect) => {
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

// A connection that drops mid-call (the server killed, a proxy reset) is `unreachable` too, so a client (the CLI's
// follow) watches again, rather than `conflict` (Connect reports a reset as aborted) or `canceled` (gRPC's RST_STREAM).
describe("ZeroError for a connection that drops mid-call", () => {
  const work = new HeldWork();
  let app: TestApp;
  let apiKey: string;
  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    ({ apiKey } = await createAccountWithKey(app, ["build", "read"]));
  });
  afterAll(async () => {
    for (const session of http2Sessions) session.abort();
    await app.close();
  });

  it.each(TRANSPORTS.slice(0, 3))("%s: a watch whose connection is reset", async (_name, connect) => {
    // A TCP relay to the service whose connections can all be reset at once.
    const target = new URL(app.url);
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((inbound) => {
      const outbound = net.connect(Number(target.port), target.hostname);
      for (const socket of [inbound, outbound]) {
        sockets.add(socket);
        socket.on("error", () => {});
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    try {
      const client = connect(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`, apiKey);
      const { plan } = await client.executions.create({ goal: "A website for a bakery in Lyon" });
      const stage = await work.next();
      const watching = (async () => {
        for await (const seen of client.executions.watch(plan.id)) {
          if (seen.status === "running") for (const socket of sockets) socket.resetAndDestroy();
        }
      })();
      const error = await caught(watching);
      expect({ type: error.type, fromServer: error.fromServer }).toEqual({ type: "unreachable", fromServer: false });
      stage.succeed();
    } finally {
      relay.close();
      for (const socket of sockets) socket.destroy();
    }
  });

  it.each(TRANSPORTS.slice(0, 3))("%s: the caller's own cancel stays canceled, whatever its reason says", async (_name, connect) => {
    const client = connect(app.url, apiKey);
    const { plan } = await client.executions.create({ goal: "A website for a bakery in Lyon" });
    const stage = await work.next();
    const stop = new AbortController();
    const watching = (async () => {
      for await (const seen of client.executions.watch(plan.id, { signal: stop.signal })) {
        // A proxy passing on its own client's hang-up: the reason is a network error.
        if (seen.status === "running") stop.abort(Object.assign(new Error("upstream socket failed"), { code: "ECONNRESET" }));
      }
    })();
    expect((await caught(watching)).type).toBe("canceled");
    stage.succeed();
  });
});
