import http2 from "node:http2";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapabilitiesService } from "../../gen/zero/v1/capabilities_pb.js";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

/**
 * Property-based bad input against every REST route and every RPC: whatever
 * arrives, the answer is a documented error (never a 500, never a crash,
 * never a stack trace). A `npm test` subset; `npm run soak` runs more.
 */
const RUNS = Number(process.env.ZERO_FUZZ_RUNS ?? 25);
/** Each property's time limit grows with its runs (the soak asks for thousands): up to 10 ms per input of the largest, never under the suite's 30 s. */
const TIMEOUT_MS = Math.max(30_000, RUNS * 2 * 10);
const services = [CapabilitiesService, ExecutionService, ChatService, ConsoleService];
const rpcPaths = services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`));

const anyJson = fc.jsonValue({ maxDepth: 3 });
const unicodeText = fc.string({ unit: "binary", maxLength: 3000 });
const goalLike = fc.oneof(
  unicodeText,
  fc.string({ unit: "grapheme", minLength: 1990, maxLength: 2100 }),
  fc.constantFrom("", "       ", "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "🚲".repeat(2000), "🚲".repeat(2001), "a\u0301".repeat(1000)),
  fc.integer(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);
const executionBody = fc.record(
  {
    goal: goalLike,
    outcome: fc.oneof(fc.constantFrom("website", "ebook", "WEBSITE", "", "pdf"), anyJson),
    planId: fc.oneof(fc.constant(undefined), fc.string(), fc.constant("pln_x"), anyJson),
    approve: fc.oneof(fc.array(fc.string(), { maxLength: 4 }), anyJson),
  },
  { requiredKeys: [] },
);

function expectApiError(status: number, body: unknown): void {
  const documented503 = status === 503 && (body as { error?: { type?: string } }).error?.type === "outcome_unavailable";
  if (!documented503) expect(status, JSON.stringify(body)).toBeLessThan(500);
  expect(body).toMatchObject({ error: { type: expect.any(String), message: expect.any(String) } });
  expect(JSON.stringify(body)).not.toMatch(/\bat [\w.<>]+ \(|node_modules|\.ts:\d+/);
}

describe("bad input never gets past the documented errors", { timeout: TIMEOUT_MS }, () => {
  let app: TestApp;
  let account: TestAccount;
  const auth = () => ({ authorization: `Bearer ${account.apiKey}` });

  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_GENERATION_LIMIT: "100000" } });
    account = await createAccountWithKey(app, ["read", "build", "chat"]);
  });
  afterAll(() => app.close());

  it("POST /api/execution: any JSON shape answers 202 or a documented 4xx/503", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(executionBody, anyJson), async (body) => {
        const res = await fetch(`${app.url}/api/execution`, {
          method: "POST",
          headers: { ...auth(), "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        const json = (await res.json()) as Record<string, unknown>;
        if (res.status === 202) expect(json).toMatchObject({ plan: { id: expect.stringMatching(/^pln_/) }, unavailable: expect.any(Array) });
        else expectApiError(res.status, json);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it("POST /api/execution: bodies that are not JSON, or not sent as JSON, are 400", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 512 }),
        fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "", "application/json; charset=latin1"),
        async (bytes, contentType) => {
          const text = Buffer.from(bytes).toString("latin1");
          let isJson = false;
          try {
            JSON.parse(text);
            isJson = true;
          } catch {}
          const headers: Record<string, string> = { ...auth() };
          if (contentType) headers["content-type"] = contentType;
          const res = await fetch(`${app.url}/api/execution`, { method: "POST", headers, body: bytes });
          const json = await res.json();
          if (!isJson || !contentType.startsWith("application/json")) expect(res.status).toBe(400);
          if (res.status !== 202) expectApiError(res.status, json);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("GET /api/execution?id= with any text is 200 or 404 for this caller, never more", async () => {
    await fc.assert(
      fc.asyncProperty(unicodeText, async (id) => {
        const res = await fetch(`${app.url}/api/execution?id=${encodeURIComponent(id)}`, { headers: auth() });
        const json = await res.json();
        if (res.status !== 200) {
          expectApiError(res.status, json);
          expect([400, 404]).toContain(res.status);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("any Authorization header that is not a live key is 401, with one message", async () => {
    const messages = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 200 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
          fc.string({ minLength: 32, maxLength: 60, unit: fc.constantFrom(..."abcXYZ019") }).map((s) => `Bearer zk_${s}`),
          fc.constantFrom("Bearer", "Bearer ", "Basic dXNlcjpwYXNz", `Bearer zk_${"A".repeat(40)}` as string, "bearer  zk_"),
        ),
        async (authorization) => {
          const res = await fetch(`${app.url}/api/execution`, { headers: { authorization } });
          const json = (await res.json()) as { error: { message: string } };
          expect(res.status).toBe(401);
          expectApiError(res.status, json);
          messages.add(json.error.message);
        },
      ),
      { numRuns: RUNS },
    );
    expect(messages.size).toBe(1);
  });

  it("a session cookie on a write without this service's Origin is 403", async () => {
    for (const origin of [undefined, "null", "https://evil.example", "http://127.0.0.1:1"]) {
      const headers: Record<string, string> = { cookie: account.cookie, "content-type": "application/json" };
      if (origin) headers.origin = origin;
      const res = await fetch(`${app.url}/api/execution`, { method: "POST", headers, body: JSON.stringify({ goal: "a goal long enough" }) });
      expect(res.status).toBe(403);
      expectApiError(res.status, await res.json());
    }
  });

  it("every RPC, over Connect: garbage protobuf and JSON bodies get a Connect error, never internal", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...rpcPaths),
        fc.oneof(
          fc.uint8Array({ maxLength: 256 }).map((b) => ({ type: "application/proto", body: new Blob([new Uint8Array(b)]) as Blob | string })),
          anyJson.map((j) => ({ type: "application/json", body: JSON.stringify(j) as Blob | string })),
        ),
        async (path, { type, body }) => {
          const res = await fetch(`${app.url}${path}`, {
            method: "POST",
            headers: { ...auth(), "content-type": type, origin: app.url },
            body,
          });
          expect(res.status, `${path} ${type}`).not.toBe(500);
          const text = await res.text();
          expect(text).not.toContain('"code":"internal"');
          expect(text).not.toContain('"code":"unknown"');
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it("every read-only RPC, over Connect GET: a garbage message in the query gets a Connect error, never internal", async () => {
    const readOnlyPaths = services.flatMap((s) =>
      s.methods.filter((m) => m.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS).map((m) => `/${s.typeName}/${m.name}`),
    );
    expect(readOnlyPaths.length).toBeGreaterThan(0);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...readOnlyPaths),
        fc.constantFrom("proto", "json"),
        fc.boolean(),
        fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom("!!!!", "a", "ab=", "====", "%%", "_-_-")),
        async (path, encoding, base64, message) => {
          const query = new URLSearchParams({ connect: "v1", encoding, message, ...(base64 ? { base64: "1" } : {}) });
          const res = await fetch(`${app.url}${path}?${query}`, { headers: auth() });
          expect(res.status, `${path}?${query}`).not.toBe(500);
          const text = await res.text();
          expect(text).not.toContain('"code":"internal"');
        },
      ),
      { numRuns: RUNS * 2, examples: [["/zero.v1.CapabilitiesService/GetCapabilities", "proto", true, "!!!!"]] },
    );
  });

  it("every RPC, over gRPC: invalid frames get a gRPC status that is not INTERNAL or UNKNOWN", async () => {
    const session = http2.connect(app.url);
    try {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...rpcPaths), fc.uint8Array({ maxLength: 300 }), fc.boolean(), async (path, payload, framed) => {
          const frame = framed
            ? Buffer.concat([Buffer.from([0]), Buffer.from(new Uint8Array(new Uint32Array([0]).buffer)).fill(0), Buffer.from(payload)])
            : Buffer.from(payload);
          if (framed) frame.writeUInt32BE(payload.length, 1);
          const status = await new Promise<string>((resolve, reject) => {
            const stream = session.request({
              ":method": "POST",
              ":path": path,
              "content-type": "application/grpc+proto",
              te: "trailers",
              authorization: `Bearer ${account.apiKey}`,
            });
            let grpcStatus = "";
            stream.on("response", (headers) => (grpcStatus = String(headers["grpc-status"] ?? grpcStatus)));
            stream.on("trailers", (trailers) => (grpcStatus = String(trailers["grpc-status"] ?? grpcStatus)));
            stream.on("data", () => {});
            stream.on("close", () => resolve(grpcStatus));
            stream.on("error", reject);
            stream.end(frame);
            // Server streams (WatchExecution) may legitimately stay open; a decoded
            // request that reached the service is enough for this property.
            setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), 1500).unref();
          });
          expect(["13", "2"], `${path}: grpc-status ${status}`).not.toContain(status);
        }),
        { numRuns: RUNS },
      );
    } finally {
      session.close();
    }
  });

  it("POST /v1/chat/completions: any JSON gets an OpenAI-shaped error or an answer, never a 500", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          anyJson,
          fc.record(
            { model: fc.oneof(fc.constantFrom("project-zero", "x/project-zero", "gpt-4o"), anyJson), messages: anyJson, stream: anyJson, program: anyJson },
            { requiredKeys: [] },
          ),
        ),
        async (body) => {
          const res = await fetch(`${app.url}/v1/chat/completions`, {
            method: "POST",
            headers: { ...auth(), "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          expect(res.status).not.toBe(500);
          const text = await res.text();
          if (res.headers.get("content-type")?.startsWith("application/json") && res.status >= 400) {
            expect(JSON.parse(text)).toMatchObject({ error: { message: expect.any(String), type: expect.any(String) } });
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("every other route, with any method, path, query and headers, answers a documented status and shape", async () => {
    const segment = fc.string({ unit: "binary", maxLength: 40 }).map(encodeURIComponent);
    const path = fc.oneof(
      fc.constantFrom(
        "/api/capabilities",
        "/api/execution",
        "/v1/models",
        "/v1/chat/completions",
        "/healthz",
        "/readyz",
        "/metrics",
        "/console",
        "/console/",
        "/",
      ),
      segment.map((x) => `/console/${x}`),
      segment.map((x) => `/console/assets/${x}`),
      fc.tuple(fc.constantFrom("preview", "sites", "books"), segment, segment).map(([kind, a, b]) => `/${kind}/${a}/${b}`),
      fc.tuple(fc.constantFrom("api", "v1"), segment).map(([prefix, x]) => `/${prefix}/${x}`),
      segment.map((x) => `/${x}`),
    );
    const query = fc.oneof(
      fc.constant(""),
      fc.dictionary(segment, segment, { maxKeys: 3 }).map(
        (q) =>
          `?${Object.entries(q)
            .map(([k, v]) => `${k}=${v}`)
            .join("&")}`,
      ),
    );
    const headers = fc.record(
      {
        authorization: fc.oneof(
          fc.constant(`Bearer zk_${"A".repeat(40)}` as string),
          fc.string({ maxLength: 80 }).filter((x) => /^[\x20-\x7e]*$/.test(x)),
        ),
        "content-type": fc.constantFrom("application/json", "text/plain", "application/proto", "application/grpc", "multipart/form-data", ""),
        cookie: fc.constantFrom("zero_session=", "zero_session=abc", "a=b; zero_session=%%%", ""),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
        path,
        query,
        headers,
        fc.option(
          fc.oneof(
            anyJson.map((j) => JSON.stringify(j)),
            fc.string({ maxLength: 200 }),
          ),
        ),
        fc.boolean(),
        async (method, route, search, extra, body, useKey) => {
          const sent: Record<string, string> = { ...extra, ...(useKey ? auth() : {}) };
          const res = await fetch(`${app.url}${route}${search}`, {
            method,
            headers: sent,
            body: method === "GET" || method === "HEAD" || body === null ? undefined : body,
          });
          const text = await res.text();
          expect(res.status, `${method} ${route}${search}`).toBeLessThan(500);
          expect(text).not.toMatch(/\bat [\w.<>]+ \(|node_modules|\.ts:\d+/);
          const isJson = res.headers.get("content-type")?.startsWith("application/json") ?? false;
          if (res.status >= 400 && isJson && method !== "HEAD" && (route.startsWith("/api/") || route.startsWith("/v1/"))) {
            const error = (JSON.parse(text) as { error?: Record<string, unknown> }).error;
            expect(error, `${method} ${route}: ${text}`).toMatchObject({ type: expect.any(String), message: expect.any(String) });
            if (route.startsWith("/v1/")) expect(error).toHaveProperty("code");
          }
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  it("every RPC, over gRPC-Web: invalid frames get a status that is not internal or unknown", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...rpcPaths),
        fc.uint8Array({ maxLength: 300 }),
        fc.boolean(),
        fc.constantFrom("application/grpc-web+proto", "application/grpc-web", "application/grpc-web+json"),
        async (path, payload, framed, contentType) => {
          const frame = framed ? Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), Buffer.from(payload)]) : Buffer.from(payload);
          if (framed) frame.writeUInt32BE(payload.length, 1);
          const res = await fetch(`${app.url}${path}`, {
            method: "POST",
            headers: { ...auth(), "content-type": contentType, "x-grpc-web": "1" },
            body: frame,
            signal: AbortSignal.timeout(1500),
          }).catch((error: unknown) => error);
          // A server stream that decoded a valid request may stay open: reaching the service is enough.
          if (!(res instanceof Response)) return;
          const text = Buffer.from(await res.arrayBuffer().catch(() => new ArrayBuffer(0))).toString("latin1");
          expect(res.status, path).toBeLessThan(500);
          const status = res.headers.get("grpc-status") ?? /grpc-status:\s*(\d+)/.exec(text)?.[1];
          expect(["13", "2"], `${path}: grpc-status ${status}`).not.toContain(status);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("is still healthy after all of it", async () => {
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    const internal = app.logs.filter((l) => l.includes('"unexpected error"'));
    expect(internal).toEqual([]);
  });
});
