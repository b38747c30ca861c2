import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerReflection, ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
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
