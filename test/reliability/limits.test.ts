import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

describe("limits on what a client may send", () => {
  let app: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_HEADERS_TIMEOUT_MS: "1000", ZERO_REQUEST_TIMEOUT_MS: "2000" } });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  it("refuses a body over 1 MiB with 413 in the documented shape", async () => {
    const goal = "x".repeat(1_100_000);
    const res = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ goal }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { type: "payload_too_large", message: expect.stringContaining("1048576") } });
  });

  it("refuses a body over 1 MiB sent in chunks, with no Content-Length to refuse it by, with the same 413", async () => {
    const body = new TextEncoder().encode(JSON.stringify({ goal: "x".repeat(1_100_000) }));
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < body.length; at += 64 * 1024) controller.enqueue(body.subarray(at, at + 64 * 1024));
        controller.close();
      },
    });
    const res = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { type: "payload_too_large", message: expect.stringContaining("1048576") } });
  });

  it("refuses an oversized RPC body with resource_exhausted", async () => {
    const res = await fetch(`${app.url}/zero.v1.ExecutionService/CreateExecution`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ goal: "y".repeat(1_100_000) }),
    });
    expect(res.status).toBe(429);
    expect(((await res.json()) as { code: string }).code).toBe("resource_exhausted");
  });

  it("keeps a keep-alive connection usable after refusing an oversized RPC body sent chunked, as connect-node sends one over HTTP/1.1", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const post = (path: string, body: string) =>
        new Promise<{ status: number | undefined; reusedSocket: boolean }>((resolve, reject) => {
          const req = http.request(`${app.url}${path}`, {
            method: "POST",
            agent,
            headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json" },
          });
          req.on("response", (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode, reusedSocket: req.reusedSocket }));
          });
          req.on("error", reject);
          // A write before end() makes the body chunked: no content-length says in advance that it is too big.
          req.write(body.slice(0, 100));
          req.end(body.slice(100));
        });
      const big = await post("/zero.v1.ExecutionService/CreateExecution", JSON.stringify({ goal: "y".repeat(1_200_000) }));
      expect(big.status).toBe(429);
      const small = await post("/zero.v1.CapabilitiesService/GetCapabilities", "{}");
      expect(small).toMatchObject({ status: 200, reusedSocket: true });
    } finally {
      agent.destroy();
    }
  });

  it("closes the connection of an oversized RPC body that does not end, rather than read it forever", async () => {
    const { port, hostname } = new URL(app.url);
    const socket = net.connect(Number(port), hostname);
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write("POST /zero.v1.ExecutionService/CreateExecution HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n");
    const chunk = Buffer.alloc(1 << 20, "y");
    const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]);
    let sent = 0;
    const closed = new Promise((resolve) => socket.once("close", resolve));
    let open = true;
    void closed.then(() => (open = false));
    while (open && sent < 64 << 20) {
      if (!socket.write(frame)) await Promise.race([new Promise((resolve) => socket.once("drain", resolve)), closed]);
      sent += chunk.length;
    }
    expect(open).toBe(false);
  });

  it("closes a connection whose headers never finish (slowloris)", async () => {
    const { port, hostname } = new URL(app.url);
    const socket = net.connect(Number(port), hostname);
    // The server may drop the connection while a drip is on its way: the reset that answers it is an expected way to close.
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write("GET /api/capabilities HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    const drip = setInterval(() => socket.write("a"), 200);
    const received: Buffer[] = [];
    socket.on("data", (d: Buffer) => received.push(d));
    const closedAfter = await new Promise<number>((resolve) => {
      const started = Date.now();
      socket.once("close", () => resolve(Date.now() - started));
    });
    clearInterval(drip);
    expect(closedAfter).toBeLessThan(10_000);
    const answer = Buffer.concat(received).toString();
    if (answer) expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it("closes a connection that opens and says nothing", async () => {
    const { port, hostname } = new URL(app.url);
    const socket = net.connect(Number(port), hostname);
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    await new Promise((resolve) => socket.once("close", resolve));
    expect(socket.destroyed).toBe(true);
  });
});
