import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ServerReflection, ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { grpcJsBidi, grpcJsClient } from "../support/grpc-js.js";

describe("ZERO_METRICS_TOKEN", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_METRICS_TOKEN: "scrape-secret-123" } });
  });
  afterAll(() => app.close());

  it("keeps /metrics to those who hold the token", async () => {
    for (const authorization of [undefined, "Bearer wrong", "Bearer scrape-secret-12", "scrape-secret-123"]) {
      const response = await fetch(`${app.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(response.status, String(authorization)).toBe(401);
      expect(await response.json()).toEqual({ error: { type: "unauthenticated", message: expect.any(String) } });
    }
    // The scheme in any case (RFC 7235), as API keys are read.
    for (const authorization of ["Bearer scrape-secret-123", "bearer scrape-secret-123"]) {
      const response = await fetch(`${app.url}/metrics`, { headers: { authorization } });
      expect(response.status, authorization).toBe(200);
      expect(await response.text()).toContain("http_requests_total");
    }
  });
});

describe("gRPC reflection", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("lists grpc.health.v1.Health and itself beside our services, and describes them", async () => {
    const client = grpcJsClient(app.url);
    try {
      const call = grpcJsBidi(client, ServerReflection.method.serverReflectionInfo);
      const answers: { messageResponse: { case: string; value: { service?: { name: string }[]; fileDescriptorProto?: Uint8Array[] } } }[] = [];
      const done = new Promise<void>((resolve, reject) => {
        call.on("data", (d) => answers.push(d));
        call.on("end", resolve);
        call.on("error", reject);
      });
      call.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }));
      call.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.Health" } }));
      // The detail every RPC error carries, though no service's file imports it: a client working from reflection decodes it.
      call.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "fileContainingSymbol", value: "zero.v1.ErrorDetail" } }));
      call.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "fileByFilename", value: "zero/v1/error.proto" } }));
      call.end();
      await done;
      const names = answers[0]!.messageResponse.value.service!.map((s) => s.name);
      expect(names).toEqual(expect.arrayContaining(["zero.v1.ExecutionService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"]));
      expect(answers[1]!.messageResponse.case).toBe("fileDescriptorResponse");
      for (const answer of answers.slice(2)) {
        expect(answer.messageResponse.case).toBe("fileDescriptorResponse");
        const files = answer.messageResponse.value.fileDescriptorProto!.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);
        expect(files).toContain("zero/v1/error.proto");
      }
    } finally {
      client.close();
    }
  });
});

describe("an RPC that fails, over a protocol that answers HTTP 200 whatever the outcome", () => {
  let app: TestApp;
  let apiKey: string;
  beforeAll(async () => {
    app = await startTestApp();
    ({ apiKey } = await createAccountWithKey(app, ["read"]));
  });
  afterAll(() => app.close());

  const transports: [string, (baseUrl: string) => Transport][] = [
    ["gRPC", (baseUrl) => createGrpcTransport({ baseUrl })],
    ["gRPC-Web", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
    ["Connect streaming", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2" })],
  ];

  it.each(transports)("is counted and logged with the HTTP status Connect gives its code, not 200, over %s", async (protocol, transport) => {
    const client = createClient(ExecutionService, transport(app.url));
    const failure = async (call: Promise<unknown>) =>
      call.then(
        () => "answered",
        (error: unknown) => ConnectError.from(error).code,
      );
    const watchFailure = async (headers: Record<string, string>) => {
      for await (const _ of client.watchExecution({ id: "pln_nope" }, { headers })) return "answered";
      return "ended";
    };
    const calls = [
      // Connect's own unary form answers with the HTTP status already: only its streams need the end message read.
      ...(protocol === "Connect streaming"
        ? []
        : [
            {
              route: "/zero.v1.ExecutionService/GetExecution",
              code: Code.NotFound,
              call: () => client.getExecution({ id: "pln_nope" }, { headers: { authorization: `Bearer ${apiKey}` } }),
            },
            {
              route: "/zero.v1.ExecutionService/GetExecution",
              code: Code.Unauthenticated,
              call: () => client.getExecution({ id: "pln_nope" }, { headers: { authorization: "Bearer zk_wrong" } }),
            },
          ]),
      { route: "/zero.v1.ExecutionService/WatchExecution", code: Code.NotFound, call: () => watchFailure({ authorization: `Bearer ${apiKey}` }) },
    ];
    const before = await scrape();
    for (const { code, call } of calls) expect(await failure(call())).toBe(code);
    const expected = new Map<string, number>();
    for (const { route, code } of calls) {
      const key = `${route} ${code === Code.NotFound ? 404 : 401}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    await vi.waitFor(async () => {
      const after = await scrape();
      for (const [key, count] of expected) expect(after.get(key) ?? 0, key).toBe((before.get(key) ?? 0) + count);
      for (const { route } of calls) expect(after.get(`${route} 200`) ?? 0, `${route} 200`).toBe(before.get(`${route} 200`) ?? 0);
    });
    const logged = app.logs
      .map((line) => JSON.parse(line) as { msg: string; path?: string; status?: number })
      .filter((line) => line.msg === "request" && line.path?.startsWith("/zero.v1.ExecutionService/"));
    expect(logged.length).toBeGreaterThanOrEqual(calls.length);
    for (const line of logged) expect([401, 404], JSON.stringify(line)).toContain(line.status);
  });

  async function scrape(): Promise<Map<string, number>> {
    const text = await (await fetch(`${app.url}/metrics`)).text();
    const counts = new Map<string, number>();
    for (const [, route, code, value] of text.matchAll(/^zero_http_requests_total\{route="([^"]+)",method="POST",code="(\w+)"\} (\d+)$/gm)) {
      counts.set(`${route} ${code}`, Number(value));
    }
    return counts;
  }
});
