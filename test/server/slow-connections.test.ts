import http2 from "node:http2";
import net from "node:net";
import tls from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { selfSignedCertificate } from "../support/tls.js";

const HEADERS_MS = 400;
const REQUEST_MS = 800;
const IDLE_MS = 600;
/** Node checks HTTP/1.1 deadlines on an interval; everything must be gone well within this. */
const BOUND_MS = 3_000;

/** Resolves with how long the server took to close the socket (or rejects after `BOUND_MS` + slack). */
function closedWithin(socket: net.Socket, giveUpMs = BOUND_MS * 2): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server still held the connection after ${giveUpMs} ms`));
    }, giveUpMs);
    socket.on("error", () => {});
    // Read what the server sends (a GOAWAY, a 408), or its end is never seen.
    socket.resume();
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

async function connect(app: TestApp): Promise<net.Socket> {
  const { port, hostname } = new URL(app.url);
  const socket = net.connect(Number(port), hostname);
  await new Promise((resolve) => socket.once("connect", resolve));
  return socket;
}

describe("every kind of connection ends when its client stalls", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      env: {
        ZERO_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
        ZERO_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
        ZERO_HTTP2_IDLE_TIMEOUT_MS: String(IDLE_MS),
      },
    });
  });
  afterAll(() => app.close());

  for (const [kind, bytes] of [
    ["one byte of the HTTP/2 preface", "P"],
    ["the first line of the HTTP/2 preface", "PRI * HTTP/2.0\r\n"],
    ["all but the last byte of the HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r"],
  ] as const) {
    it(`a client that sends ${kind} and stops`, async () => {
      const socket = await connect(app);
      socket.write(bytes);
      expect(await closedWithin(socket)).toBeLessThan(BOUND_MS);
    });
  }

  it("a client that sends the preface a byte at a time, slower than the headers deadline allows", async () => {
    const socket = await connect(app);
    const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let sent = 0;
    const drip = setInterval(() => sent < preface.length - 1 && socket.write(preface[sent++]!), 100);
    const closed = await closedWithin(socket).finally(() => clearInterval(drip));
    expect(closed).toBeLessThan(BOUND_MS);
  });

  it("an h2c connection that sends the preface and then nothing", async () => {
    const socket = await connect(app);
    socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    expect(await closedWithin(socket)).toBeLessThan(BOUND_MS);
  });

  it("an h2c session left idle after its last stream", async () => {
    const session = http2.connect(app.url);
    session.on("error", () => {});
    const response = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ":path": "/healthz" });
      stream.on("response", (headers) => resolve(Number(headers[":status"])));
      stream.on("error", reject);
      stream.resume();
    });
    expect(response).toBe(200);
    const started = Date.now();
    await new Promise((resolve) => session.once("close", resolve));
    expect(Date.now() - started).toBeLessThan(IDLE_MS + BOUND_MS);
  });

  it("an h2 stream whose request body stalls is reset, and its session then closes", async () => {
    const session = http2.connect(app.url);
    session.on("error", () => {});
    const stream = session.request({
      ":method": "POST",
      ":path": "/zero.v1.CapabilitiesService/GetCapabilities",
      "content-type": "application/json",
    });
    stream.on("error", () => {});
    stream.write("{");
    const started = Date.now();
    await new Promise((resolve) => stream.once("close", resolve));
    expect(Date.now() - started).toBeLessThan(REQUEST_MS + BOUND_MS);
    await new Promise((resolve) => (session.closed ? resolve(undefined) : session.once("close", resolve)));
    expect(Date.now() - started).toBeLessThan(REQUEST_MS + IDLE_MS + BOUND_MS);
  });

  it("HTTP/1.1: a request body that stalls, and an idle keep-alive connection", async () => {
    const stalled = await connect(app);
    stalled.write("POST /api/execution HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{");
    const idle = await connect(app);
    idle.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const [stalledMs, idleMs] = await Promise.all([closedWithin(stalled), closedWithin(idle, 15_000)]);
    expect(stalledMs).toBeLessThan(REQUEST_MS + BOUND_MS);
    // Node's keep-alive timeout (5 s) plus the second it adds so that clients' own idle timers fire first.
    expect(idleMs).toBeLessThan(6_000 + BOUND_MS);
  });

  it("long-lived streams that send data outlive every deadline", async () => {
    // gRPC health Watch sends its status at once and then holds the stream open: a server stream whose request
    // is complete. It must stay open past the request and idle deadlines.
    const client = createClient(Health, createGrpcTransport({ baseUrl: app.url }));
    const abort = new AbortController();
    const statuses: number[] = [];
    const watching = (async () => {
      for await (const answer of client.watch({ service: "" }, { signal: abort.signal })) statuses.push(answer.status);
    })().catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, REQUEST_MS + IDLE_MS + 500));
    expect(statuses.length).toBeGreaterThan(0);
    abort.abort();
    const ended = await watching;
    expect(String(ended)).toMatch(/cancel|abort/i);
  });
});

describe("a TLS handshake that never finishes", () => {
  let app: TestApp;
  let certificate: Awaited<ReturnType<typeof selfSignedCertificate>>;
  beforeAll(async () => {
    certificate = await selfSignedCertificate();
    app = await startTestApp({
      env: {
        ...certificate.env,
        ZERO_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
        ZERO_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
        ZERO_HTTP2_IDLE_TIMEOUT_MS: String(IDLE_MS),
      },
    });
  });
  afterAll(async () => {
    await app.close();
    await certificate.remove();
  });

  it("is closed by the headers deadline", async () => {
    const socket = await connect(app);
    socket.write(Buffer.from([0x16, 0x03, 0x01]));
    expect(await closedWithin(socket)).toBeLessThan(BOUND_MS);
  });

  it("an h2 session over TLS left idle is closed too", async () => {
    const socket = tls.connect({ host: "127.0.0.1", port: app.port, rejectUnauthorized: false, ALPNProtocols: ["h2"] });
    await new Promise((resolve) => socket.once("secureConnect", resolve));
    expect(socket.alpnProtocol).toBe("h2");
    expect(await closedWithin(socket)).toBeLessThan(BOUND_MS);
  });
});
