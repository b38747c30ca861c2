import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { completion, FakeUpstream, reply, stream, textChunks } from "./support/fake-upstream.js";
import { startGateway } from "./support/gateway.js";

const run = promisify(execFile);
const PYTHON = "/usr/bin/python3";
const PROTO_ROOT = join(import.meta.dirname, "../../proto");
const CLIENT = join(import.meta.dirname, "support/python_grpc_client.py");

/** Why Debian's Python gRPC toolchain cannot run here, or null when it can (CI installs it through apt). */
function missingToolchain(): string | null {
  try {
    execFileSync(PYTHON, ["-c", "import grpc, google.protobuf"], { stdio: "ignore" });
  } catch {
    return `${PYTHON} with grpcio and protobuf is missing (apt-get install python3-grpcio python3-protobuf)`;
  }
  for (const tool of ["protoc", "grpc_python_plugin"]) {
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      return `${tool} is missing (apt-get install protobuf-compiler protobuf-compiler-grpc)`;
    }
  }
  if (!existsSync("/usr/include/google/protobuf/descriptor.proto")) {
    return "protoc's well-known types are missing (apt-get install libprotobuf-dev)";
  }
  return null;
}

const missing = missingToolchain();
if (missing) console.warn(`python-grpc.test.ts skipped: ${missing}`);

// A client in another language, from another toolchain, reads our protos and calls the gateway over gRPC.
describe.skipIf(missing !== null)("a Python grpcio client", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let stubs: string;

  beforeAll(async () => {
    stubs = mkdtempSync(join(tmpdir(), "zero-python-stubs-"));
    await run("protoc", [
      `-I${PROTO_ROOT}`,
      "-I/usr/include",
      `--python_out=${stubs}`,
      `--grpc_python_out=${stubs}`,
      `--plugin=protoc-gen-grpc_python=${execFileSync("sh", ["-c", "command -v grpc_python_plugin"]).toString().trim()}`,
      "zero/v1/access.proto",
      "zero/v1/chat.proto",
    ]);
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
  });
  afterAll(async () => {
    await app?.close();
    await upstream?.close();
    rmSync(stubs, { recursive: true, force: true });
  });

  it("drives a Responses call and a streamed chat call, and reads a refusal's status", async () => {
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    upstream.next(reply(completion("Hello from Python's call")), stream(textChunks(["one, ", "two, ", "three"])));

    const { stdout } = await run(PYTHON, [CLIENT, stubs, new URL(app.url).host, apiKey], { timeout: 60_000 });
    const result = JSON.parse(stdout) as {
      response: { id: string; object: string; status: string; model: string; output: { type: string; content: { type: string; text: string }[] }[] };
      deltas: string[];
      finishReasons: string[];
      refused: { code: string; details: string } | null;
    };

    expect(result.response).toMatchObject({ object: "response", status: "completed", model: "project-zero" });
    expect(result.response.id).toMatch(/^resp_/);
    expect(result.response.output[0]!.content[0]).toMatchObject({ type: "output_text", text: "Hello from Python's call" });
    expect(upstream.requests[0]!.body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Say hello from Python" },
    ]);

    expect(result.deltas.join("")).toBe("one, two, three");
    expect(result.finishReasons).toEqual(["stop"]);
    expect(upstream.requests[1]!.body).toMatchObject({ stream: true, messages: [{ role: "user", content: "Count to three" }] });

    expect(result.refused?.code).toBe("UNAUTHENTICATED");
    expect(JSON.stringify(result)).not.toMatch(/SecretCo|upstream-model/i);
  });
});
