import { describe, expect, it } from "vitest";
import { hasOption } from "@bufbuild/protobuf";
import { access } from "../../gen/zero/v1/access_pb.js";
import { CapabilitiesService } from "../../gen/zero/v1/capabilities_pb.js";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { SCOPES } from "../../src/api/scopes.js";
import { accessRule } from "../../src/server/access.js";

describe("access rules live in the API definition", () => {
  const services = [CapabilitiesService, ExecutionService, ChatService, ConsoleService];

  it("every method of ours declares who may call it", () => {
    for (const service of services) {
      for (const method of service.methods) {
        expect(hasOption(method, access), `${service.typeName}.${method.name}`).toBe(true);
        const rule = accessRule(method);
        if (rule.mode === "account" || rule.mode === "key") expect(SCOPES).toContain(rule.scope);
      }
    }
  });

  it("matches the interface document: build to create, read to read, chat to chat, a session for keys", () => {
    expect(accessRule(ExecutionService.method.createExecution)).toMatchObject({ mode: "account", scope: "build" });
    expect(accessRule(ExecutionService.method.resumeExecution)).toMatchObject({ mode: "account", scope: "build" });
    expect(accessRule(ExecutionService.method.getExecution)).toMatchObject({ mode: "account", scope: "read", readOnly: true });
    // The chat gateway takes API keys only, as /v1 (and OpenAI's API) does.
    for (const method of ChatService.methods) expect(accessRule(method), method.name).toMatchObject({ mode: "key", scope: "chat" });
    expect(accessRule(ConsoleService.method.createApiKey)).toMatchObject({ mode: "session" });
    expect(accessRule(ConsoleService.method.revokeApiKey)).toMatchObject({ mode: "session" });
    expect(accessRule(CapabilitiesService.method.getCapabilities)).toMatchObject({ mode: "public" });
  });
});
