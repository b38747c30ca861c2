import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { create } from "@bufbuild/protobuf";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection, ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { CapabilitiesService } from "../../gen/zero/v1/capabilities_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { grpcJsBidi, grpcJsClient, grpcJsUnary } from "../support/grpc-js.js";

const exec = promisify(execFile);

describe("one port serves every protocol", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("answers plain HTTP/1.1 REST", async () => {
    const res = await fetch(`${app.url}/api/capabilities`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const body = (await res.json()) as { chat: { model: string }; outcomes: { id: string; stages: { id: string }[] }[] };
    expect(body.chat.model).toBe("project-zero");
    expect(body.outcomes.map((o) => o.id)).toEqual(["website", "ebook"]);
    expect(body.outcomes[0]!.stages.map((s) => s.id)).toEqual(["understand", "outline", "write", "build", "review", "publish"]);
  });

  it("answers the Connect protocol over HTTP/1.1 and HTTP/2 with the same data as REST", async () => {
    const rest = await (await fetch(`${app.url}/api/capabilities`)).json();
    for (const httpVersion of ["1.1", "2"] as const) {
      const client = createClient(CapabilitiesService, createConnectTransport({ baseUrl: app.url, httpVersion }));
      const caps = await client.getCapabilities({});
      expect(caps.chat?.model).toBe("project-zero");
      expect(caps.outcomes.map((o) => o.id)).toEqual((rest as { outcomes: { id: string }[] }).outcomes.map((o) => o.id));
    }
  });

  it("answers gRPC (h2c prior knowledge) and gRPC-Web through connect-node", async () => {
    const grpc = createClient(CapabilitiesService, createGrpcTransport({ baseUrl: app.url }));
    expect((await grpc.getCapabilities({})).service).toBe("project-zero");
    const grpcWeb = createClient(CapabilitiesService, createGrpcWebTransport({ baseUrl: app.url, httpVersion: "1.1" }));
    expect((await grpcWeb.getCapabilities({})).service).toBe("project-zero");
  });

  it("answers a stock @grpc/grpc-js client", async () => {
    const client = grpcJsClient(app.url);
    try {
      const caps = await grpcJsUnary(client, CapabilitiesService.method.getCapabilities, {});
      expect(caps.limits?.goalMaxLength).toBe(2000);
      const health = await grpcJsUnary(client, Health.method.check, { service: "" });
      expect(health.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      const unknown = grpcJsUnary(client, Health.method.check, { service: "no.such.Service" });
      await expect(unknown).rejects.toMatchObject({ code: 5 });
    } finally {
      client.close();
    }
  });

  it("lists and describes services over gRPC reflection", async () => {
    const client = grpcJsClient(app.url);
    try {
      const call = grpcJsBidi(client, ServerReflection.method.serverReflectionInfo);
      const answers: unknown[] = [];
      const done = new Promise<void>((resolve, reject) => {
        call.on("data", (d) => answers.push(d));
        call.on("end", resolve);
        call.on("error", reject);
      });
      call.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }));
      call.write(
        create(ServerReflectionRequestSchema, {
          messageRequest: { case: "fileContainingSymbol", value: "zero.v1.CapabilitiesService.GetCapabilities" },
        }),
      );
      call.end();
      await done;
      const [list, file] = answers as { messageResponse: { case: string; value: { service?: { name: string }[]; fileDescriptorProto?: Uint8Array[] } } }[];
      expect(list!.messageResponse.case).toBe("listServicesResponse");
      expect(list!.messageResponse.value.service!.map((s) => s.name)).toContain("zero.v1.CapabilitiesService");
      expect(file!.messageResponse.case).toBe("fileDescriptorResponse");
      expect(file!.messageResponse.value.fileDescriptorProto!.length).toBeGreaterThan(1);
    } finally {
      client.close();
    }
  });

  it("serves buf curl through reflection, without the proto files", async () => {
    const buf = "node_modules/.bin/buf";
    const { stdout: services } = await exec(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", app.url]);
    expect(services).toContain("zero.v1.CapabilitiesService");
    const { stdout } = await exec(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", `${app.url}/zero.v1.CapabilitiesService/GetCapabilities`]);
    expect(JSON.parse(stdout).chat.model).toBe("project-zero");
  });

  it("answers unknown paths and unknown RPCs with the documented error shape", async () => {
    const res = await fetch(`${app.url}/no/such/route`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { type: "not_found", message: expect.any(String) } });
    const wrongMethod = await fetch(`${app.url}/api/capabilities`, { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(((await wrongMethod.json()) as { error: { type: string } }).error.type).toBe("method_not_allowed");
  });

  it("reports liveness and readiness", async () => {
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${app.url}/readyz`);
    expect(ready.status).toBe(200);
  });

  it("exports Prometheus metrics by route, with bounded labels", async () => {
    await fetch(`${app.url}/api/capabilities`);
    await fetch(`${app.url}/some/random/path/${Math.random()}`);
    const text = await (await fetch(`${app.url}/metrics`)).text();
    expect(text).toMatch(/zero_http_requests_total\{route="\/api\/capabilities",method="GET",code="200"\} [1-9]/);
    expect(text).toMatch(/zero_http_requests_total\{route="other",method="GET",code="404"\}/);
    expect(text).not.toContain("random");
    expect(text).toContain("process_resident_memory_bytes");
  });

  it("keeps the documented error shape over RPC for unknown methods", async () => {
    const client = createClient(Health, createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }));
    await expect(client.check({ service: "missing" })).rejects.toSatisfy((e: unknown) => e instanceof ConnectError && e.code === Code.NotFound);
  });
});

describe("an instance bound to every address", () => {
  it("names localhost in the address it gives, where 0.0.0.0 can be listened on but not opened", async () => {
    const app = await startTestApp({ env: { HOST: "0.0.0.0" } });
    try {
      expect(app.url).toMatch(/^http:\/\/localhost:\d+$/);
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
