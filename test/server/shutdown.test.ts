import net from "node:net";
import tls from "node:tls";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ChatCompletionChunkSchema, ChatService } from "../../gen/zero/v1/chat_pb.js";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/grpc/health/v1/health_pb.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { FakeUpstream, stream, textChunks } from "../chat/support/fake-upstream.js";
import { postChat, readSse, startGateway } from "../chat/support/gateway.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { postExecution } from "../support/executions.js";
import { HeldWork } from "../support/stage-work.js";
import { selfSignedCertificate } from "../support/tls.js";

describe("graceful shutdown", () => {
  it("finishes even when an HTTP/2 client left a stream and keeps its connection open", async () => {
    const work = new HeldWork();
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    const app = await startTestApp({ stageWork: work.resolver, env: { ZERO_SHUTDOWN_GRACE_MS: "500" } });
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    // The gRPC transport keeps its HTTP/2 session open after the stream is left.
    const executions = createClient(
      ExecutionService,
      createGrpcTransport({
        baseUrl: app.url,
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${apiKey}`);
            return next(req);
          },
        ],
      }),
    );
    const { plan } = await executions.createExecution({ goal: "A website for a bakery in Lyon" });
    const held = await work.next();
    for await (const _ of executions.watchExecution({ id: plan!.id })) break;
    // The plan changes after the client left: the server's stream has something to say to nobody.
    held.succeed();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const closed = app.close().then(() => "closed");
    const outcome = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve("still open"), 15_000))]);
    expect(outcome).toBe("closed");
  });
  it("a stage that ignores the stop past the grace period is left to its lease, and ending after the database closed logs no error", async () => {
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => (unblock = resolve));
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const app = await startTestApp({
      env: { ZERO_SHUTDOWN_GRACE_MS: "300" },
      stageWork: () => async (input) => {
        markStarted();
        await blocked;
        setImmediate(markEnded);
        throw input.signal.reason;
      },
    });
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    expect((await postExecution(app.url, { apiKey }, { goal: "A website for a bakery in Lyon" })).status).toBe(202);
    await started;
    await app.close();
    unblock();
    // The work has ended; then a margin for whatever the engine does with its end.
    await ended;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const errors = app.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
    expect(app.logs.some((line) => line.includes("did not stop in time"))).toBe(true);
  });
});

/** A raw HTTP/1.1 connection, to send requests on one keep-alive socket at chosen moments. */
async function openConnection(url: string, overTls: boolean) {
  const { hostname, port } = new URL(url);
  const socket = overTls
    ? tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] })
    : net.connect(Number(port), hostname);
  await new Promise((resolve, reject) => socket.once(overTls ? "secureConnect" : "connect", resolve).once("error", reject));
  let received = "";
  let closed = false;
  socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
  socket.on("error", () => {});
  const ended = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve();
    }),
  );
  return {
    socket,
    ended,
    /** Sends a GET and resolves with the answer's head (status line and headers), or "cut" if the connection closed first. */
    async get(path: string): Promise<string> {
      received = "";
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      while (!/\r\n\r\n[\s\S]*\}/.test(received)) {
        if (closed) return "cut";
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return received.slice(0, received.indexOf("\r\n\r\n")).toLowerCase();
    },
    /** The body of the last answer `get` resolved with. */
    get body(): string {
      return received.slice(received.indexOf("\r\n\r\n") + 4);
    },
  };
}

describe.each([
  { over: "plain TCP", overTls: false },
  { over: "TLS", overTls: true },
])("keep-alive HTTP/1.1 connections at shutdown, over $over", ({ overTls }) => {
  let certificate: Awaited<ReturnType<typeof selfSignedCertificate>> | undefined;
  beforeAll(async () => {
    if (overTls) certificate = await selfSignedCertificate();
  });
  afterAll(() => certificate?.remove());

  it("a request sent on an idle connection as shutdown begins is answered, with Connection: close, and the connection then closes", async () => {
    const app = await startTestApp({ env: { ZERO_SHUTDOWN_GRACE_MS: "5000", ...certificate?.env } });
    const connection = await openConnection(app.url, overTls);
    expect(await connection.get("/healthz")).toContain("connection: keep-alive");
    const closed = app.close();
    const head = await connection.get("/healthz");
    expect(head).toMatch(/^http\/1\.1 200/);
    expect(head).toContain("connection: close");
    await connection.ended;
    await closed;
  });

  it("/readyz says the instance is shutting down, not that its database is away, once shutdown begins", async () => {
    const app = await startTestApp({ env: { ZERO_SHUTDOWN_GRACE_MS: "5000", ...certificate?.env } });
    const connection = await openConnection(app.url, overTls);
    expect(await connection.get("/readyz")).toMatch(/^http\/1\.1 200/);
    const closed = app.close();
    expect(await connection.get("/readyz")).toMatch(/^http\/1\.1 503/);
    expect(JSON.parse(connection.body)).toEqual({ error: { type: "unavailable", message: "not ready: the instance is shutting down" } });
    await connection.ended;
    await closed;
  });

  it("an idle connection that sends nothing more is closed after a short quiet time, well within the grace period", async () => {
    const app = await startTestApp({ env: { ZERO_SHUTDOWN_GRACE_MS: "8000", ...certificate?.env } });
    const connection = await openConnection(app.url, overTls);
    expect(await connection.get("/healthz")).toContain("connection: keep-alive");
    const started = Date.now();
    await app.close();
    await connection.ended;
    expect(Date.now() - started).toBeLessThan(4000);
  });
});

describe("what clients see of a shutdown", () => {
  const params = { model: "project-zero", messages: [{ role: "user", content: { kind: { case: "stringValue" as const, value: "Hi" } } }] };

  it("gRPC health's Watch says NOT_SERVING as soon as shutdown begins, as Check does", async () => {
    const app = await startTestApp({ env: { ZERO_SHUTDOWN_GRACE_MS: "3000" } });
    const health = createClient(Health, createGrpcTransport({ baseUrl: app.url }));
    const seen: Serving[] = [];
    const watched = (async () => {
      try {
        for await (const { status } of health.watch({ service: "" })) seen.push(status);
      } catch {
        // The grace ending cuts it off: what it said before is what counts.
      }
    })();
    while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const closed = app.close();
    await watched;
    expect(seen).toEqual([Serving.SERVING, Serving.NOT_SERVING]);
    await closed;
  });

  it("a watch open at shutdown ends with UNAVAILABLE, never as if the plan were at rest, over gRPC and Connect", async () => {
    const work = new HeldWork();
    const app = await startTestApp({ stageWork: work.resolver, env: { ZERO_SHUTDOWN_GRACE_MS: "2000" } });
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    const headers = { authorization: `Bearer ${apiKey}` };
    const grpc = createClient(ExecutionService, createGrpcTransport({ baseUrl: app.url }));
    const connect = createClient(ExecutionService, createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }));
    const { plan } = await grpc.createExecution({ goal: "A website for a bakery in Lyon" }, { headers });
    const held = await work.next();
    const watch = async (client: typeof grpc, seen: string[]) => {
      try {
        for await (const { plan: now } of client.watchExecution({ id: plan!.id }, { headers })) seen.push(now!.status);
        return { seen, ended: "normally" };
      } catch (error) {
        return { seen, ended: ConnectError.from(error).code };
      }
    };
    const seenOverGrpc: string[] = [];
    const seenOverConnect: string[] = [];
    const watches = [watch(grpc, seenOverGrpc), watch(connect, seenOverConnect)];
    await vi.waitFor(() => expect([seenOverGrpc, seenOverConnect]).toEqual([["running"], ["running"]]), { timeout: 10_000 });
    const closed = app.close();
    for (const outcome of await Promise.all(watches)) expect(outcome).toEqual({ seen: ["running"], ended: Code.Unavailable });
    held.succeed();
    await closed;
  });

  it("a chat stream under way at shutdown is answered in full within the grace period, over REST and RPC", async () => {
    const upstream = await FakeUpstream.start();
    const pieces = Array.from({ length: 8 }, (_, i) => `w${i} `);
    upstream.otherwise(stream(textChunks(pieces), { delayMs: 100 }));
    const app = await startGateway([upstream], { ZERO_SHUTDOWN_GRACE_MS: "5000", ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "5000" });
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    const rest = postChat(app, apiKey, { model: "project-zero", messages: [{ role: "user", content: "Hi" }], stream: true }).then((r) => readSse(r));
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: app.url }));
    const rpc = (async () => {
      let text = "";
      for await (const message of client.streamChatCompletion({ params }, { headers: { authorization: `Bearer ${apiKey}` } })) {
        const chunk = toJson(ChatCompletionChunkSchema, message.chunk!) as { choices?: { delta?: { content?: string } }[] };
        text += chunk.choices?.[0]?.delta?.content ?? "";
      }
      return text;
    })();
    await vi.waitFor(() => expect(upstream.requests).toHaveLength(2), { timeout: 10_000 });
    const closed = app.close();
    const events = await rest;
    expect(events.at(-1)).toBe("[DONE]");
    expect(
      events
        .slice(0, -1)
        .map((e) => JSON.parse(e).choices?.[0]?.delta?.content ?? "")
        .join(""),
    ).toBe(pieces.join(""));
    expect(await rpc).toBe(pieces.join(""));
    await closed;
    await upstream.close();
  });

  it("a chat stream still open when the grace period ends is told so: an unavailable error event and [DONE] over REST, UNAVAILABLE over gRPC", async () => {
    const upstream = await FakeUpstream.start();
    upstream.otherwise(stream(textChunks(Array.from({ length: 30 }, (_, i) => `w${i} `)), { delayMs: 150 }));
    const app = await startGateway([upstream], { ZERO_SHUTDOWN_GRACE_MS: "600", ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "5000" });
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    const messages = [{ role: "user", content: "Hi" }];
    const chat = postChat(app, apiKey, { model: "project-zero", messages, stream: true }).then((r) => readSse(r));
    const responses = fetch(`${app.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model: "project-zero", input: "Hi", stream: true }),
    }).then((r) => r.text());
    const client = createClient(ChatService, createGrpcTransport({ baseUrl: app.url }));
    let chunks = 0;
    const rpc = (async () => {
      try {
        for await (const _ of client.streamChatCompletion({ params }, { headers: { authorization: `Bearer ${apiKey}` } })) chunks++;
        return { chunks, code: "ended normally" };
      } catch (error) {
        return { chunks, code: ConnectError.from(error).code };
      }
    })();
    await vi.waitFor(
      () => {
        expect(upstream.requests).toHaveLength(3);
        expect(chunks).toBeGreaterThan(0);
      },
      { timeout: 10_000 },
    );
    await app.close();

    const events = await chat;
    expect(events.at(-1)).toBe("[DONE]");
    expect(JSON.parse(events.at(-2)!).error).toMatchObject({ type: "unavailable", message: expect.stringContaining("shutting down") });
    const last = (await responses).trim().split("\n\n").at(-1)!;
    expect(last).toMatch(/^event: error\ndata: /);
    expect(JSON.parse(last.split("data: ")[1]!)).toMatchObject({ type: "error", code: "unavailable" });
    const overRpc = await rpc;
    expect(overRpc.chunks).toBeGreaterThan(0);
    expect(overRpc.code).toBe(Code.Unavailable);
    await upstream.close();
  });

  it("with no REST stream open, an RPC chat stream past the grace still ends UNAVAILABLE (gRPC, Connect over HTTP/2 and HTTP/1.1), and a waiting non-streamed call is answered 503", async () => {
    const upstream = await FakeUpstream.start();
    // A chunk a second: the stream is waiting on the upstream when the grace ends.
    upstream.otherwise((exchange) =>
      exchange.body.stream === true ? stream(textChunks(Array.from({ length: 20 }, (_, i) => `w${i} `)), { delayMs: 1000 })(exchange) : undefined,
    );
    const app = await startGateway([upstream], {
      ZERO_SHUTDOWN_GRACE_MS: "1500",
      ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "10000",
      ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "60000",
    });
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    const headers = { authorization: `Bearer ${apiKey}` };
    const transports = {
      grpc: createGrpcTransport({ baseUrl: app.url }),
      connectHttp2: createConnectTransport({ baseUrl: app.url, httpVersion: "2" }),
      connectHttp1: createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }),
    };
    const streams = Object.entries(transports).map(async ([name, transport]) => {
      let chunks = 0;
      try {
        for await (const _ of createClient(ChatService, transport).streamChatCompletion({ params }, { headers })) chunks++;
        return { name, code: "ended normally" };
      } catch (error) {
        return { name, code: ConnectError.from(error).code, chunks };
      }
    });
    // Not streamed: the upstream never answers it.
    const waiting = postChat(app, apiKey, { model: "project-zero", messages: [{ role: "user", content: "Hi" }] });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await app.close();

    for (const outcome of await Promise.all(streams)) {
      expect(outcome).toEqual({ name: outcome.name, code: Code.Unavailable, chunks: expect.any(Number) });
      expect(outcome.chunks).toBeGreaterThan(0);
    }
    const refused = await waiting;
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe("unavailable");
    await upstream.close();
  });
});
