import { create, fromJson } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatCompletionParamsSchema, ChatService } from "../../gen/zero/v1/chat_pb.js";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { ErrorDetailSchema } from "../../gen/zero/v1/error_pb.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { createAccountWithKey, sessionHeaders, type TestAccount } from "../support/accounts.js";
import { PROTOCOLS, type Protocol, rpcTransport } from "../support/transports.js";
import type { TestApp } from "../support/app.js";
import { FakeUpstream, hang } from "./support/fake-upstream.js";
import { postChat, startGateway } from "./support/gateway.js";

// Faults a typed client meets over RPC, found by trying each service as a new user: each has the code and type REST gives it.
describe("RPC errors as the REST routes name them", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let account: TestAccount;
  let readOnly: TestAccount;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    account = await createAccountWithKey(app, ["chat", "build", "read"]);
    readOnly = await createAccountWithKey(app, ["read"]);
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  // The deadline is sent as a header rather than as the client's `timeoutMs`, so what is checked is the server's answer, not the client's own timer.
  const deadline = (name: Protocol, ms: number) => (name === "connect" ? { "connect-timeout-ms": String(ms) } : { "grpc-timeout": `${ms}m` });
  const chat = (model: string) => ({ params: fromJson(ChatCompletionParamsSchema, { model, messages: [{ role: "user", content: "hi" }] }) });
  const message = chat("project-zero");

  async function refusal(call: Promise<unknown>): Promise<{ code: Code; type: string | undefined }> {
    const error = await call.then(
      () => expect.fail("the call succeeded"),
      (e: unknown) => ConnectError.from(e),
    );
    return { code: error.code, type: error.findDetails(ErrorDetailSchema)[0]?.type };
  }

  it.each(PROTOCOLS)("answers a client's deadline on a chat call with deadline_exceeded, over %s", async (name) => {
    upstream.otherwise(hang());
    const client = createClient(ChatService, rpcTransport(app.url, name));
    expect(await refusal(client.createChatCompletion(message, { headers: { ...bearer(account.apiKey), ...deadline(name, 300) } }))).toEqual({
      code: Code.DeadlineExceeded,
      type: "deadline_exceeded",
    });
  });

  it("ends a watch at the client's deadline with deadline_exceeded, not as if the plan had come to rest", async () => {
    // The writer's first call hangs, so the plan stays running past the deadline.
    upstream.otherwise(hang());
    const executions = createClient(ExecutionService, rpcTransport(app.url, "connect"));
    const { plan } = await executions.createExecution({ goal: "A website for a repair cafe" }, { headers: bearer(account.apiKey) });
    const seen: string[] = [];
    const watched = (async () => {
      for await (const { plan: now } of executions.watchExecution({ id: plan!.id }, { headers: { ...bearer(account.apiKey), ...deadline("connect", 500) } })) {
        seen.push(now!.status);
      }
    })();
    expect(await refusal(watched)).toMatchObject({ code: Code.DeadlineExceeded });
    expect(seen).toEqual(["running"]);
    // Stopped, so its writer's tries never reach the upstream another test reads.
    await executions.cancelExecution({ id: plan!.id }, { headers: bearer(account.apiKey) });
  });

  it.each(PROTOCOLS)("answers deadline_exceeded when a unary call's deadline ran out while it was served, over %s", async (name) => {
    // A sign-in takes its password hash's time, well past 2 ms: the caller has given up by the time it is done.
    const console_ = createClient(ConsoleService, rpcTransport(app.url, name));
    let setCookie: string | null = null;
    const call = console_.signIn(
      { email: account.email, password: account.password },
      { headers: deadline(name, 2), onHeader: (headers) => (setCookie = headers.get("set-cookie")) },
    );
    expect(await refusal(call)).toEqual({ code: Code.DeadlineExceeded, type: "deadline_exceeded" });
    // No session reaches a caller that was told the call failed.
    expect(setCookie).toBeNull();
  });

  it("refuses a unary call whose deadline has already run out before doing anything: no plan is created", async () => {
    const executions = createClient(ExecutionService, rpcTransport(app.url, "connect"));
    const goal = `A website created after its deadline ${Date.now()}`;
    expect(await refusal(executions.createExecution({ goal }, { headers: { ...bearer(account.apiKey), "connect-timeout-ms": "0" } }))).toEqual({
      code: Code.DeadlineExceeded,
      type: "deadline_exceeded",
    });
    const { plans } = await executions.listExecutions({}, { headers: bearer(account.apiKey) });
    expect(plans.map((plan) => plan.goal)).not.toContain(goal);
  });

  it("takes API keys only, as /v1 does: a Console session is refused and nothing reaches the upstream", async () => {
    const client = createClient(ChatService, rpcTransport(app.url, "connect"));
    expect(await refusal(client.createChatCompletion(message, { headers: sessionHeaders(app.url, account.cookie) }))).toEqual({
      code: Code.Unauthenticated,
      type: "invalid_api_key",
    });
    expect(upstream.requests).toHaveLength(0);
  });

  it.each(["grpc", "grpc-web"] as const)(
    "reads a google.protobuf.Value JSON has no form for (no kind, NaN) as null, as REST reads JSON null, over %s",
    async (name) => {
      // Valid protobuf, and what @grpc/grpc-js with proto-loader's keepCase sends for `{string_value: …}`.
      const empty = create(ValueSchema);
      // NaN has no JSON form either; inside a Struct it reaches the upstream as null.
      const notANumber = create(ValueSchema, { kind: { case: "numberValue", value: Number.NaN } });
      const unwritableList = create(ValueSchema, { kind: { case: "listValue", value: create(ListValueSchema, { values: [empty, notANumber] }) } });
      await postChat(app, account.apiKey, { model: "project-zero", messages: [{ role: "user", content: null }], tool_choice: null, stop: [null, null] });
      const client = createClient(ChatService, rpcTransport(app.url, name));
      const params = { model: "project-zero", messages: [{ role: "user", content: empty }], toolChoice: empty, stop: unwritableList };
      await client.createChatCompletion({ params }, { headers: bearer(account.apiKey) });
      for await (const _ of client.streamChatCompletion({ params }, { headers: bearer(account.apiKey) }));
      const [rest, unary, streamed] = upstream.requests.map((request) => request.body);
      expect(rest).toMatchObject({ messages: [{ role: "user", content: null }], tool_choice: null, stop: [null, null] });
      expect(unary).toEqual(rest);
      expect(streamed).toEqual({ ...rest, stream: true });
    },
  );

  it("names the chat refusals as /v1 does", async () => {
    const client = createClient(ChatService, rpcTransport(app.url, "connect"));
    expect(await refusal(client.createChatCompletion(message, { headers: bearer("zk_not-a-key") }))).toEqual({
      code: Code.Unauthenticated,
      type: "invalid_api_key",
    });
    expect(await refusal(client.createChatCompletion(message, { headers: bearer(readOnly.apiKey) }))).toEqual({
      code: Code.PermissionDenied,
      type: "insufficient_scope",
    });
    // A provider-prefixed alias is a 400 on /v1, so an invalid argument here, not a not-found.
    const prefixed = chat("openai/project-zero");
    expect(await refusal(client.createChatCompletion(prefixed, { headers: bearer(account.apiKey) }))).toEqual({
      code: Code.InvalidArgument,
      type: "model_not_found",
    });
    expect(upstream.requests).toHaveLength(0);
  });

  it.each(PROTOCOLS)("names the refused field as the REST error's `param` does, over %s", async (name) => {
    const client = createClient(ChatService, rpcTransport(app.url, name));
    const options = { headers: bearer(account.apiKey) };
    const paramOf = async (call: Promise<unknown>) => {
      const error = await call.then(
        () => expect.fail("the call succeeded"),
        (e: unknown) => ConnectError.from(e),
      );
      return error.findDetails(ErrorDetailSchema)[0]?.param;
    };
    const restParam = async (path: string, body: unknown) => {
      const response = await fetch(`${app.url}${path}`, {
        method: "POST",
        headers: { ...bearer(account.apiKey), "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return ((await response.json()) as { error: { param: string | null } }).error.param;
    };
    const noMessages = { model: "project-zero", messages: [] };
    expect(await paramOf(client.createChatCompletion({ params: fromJson(ChatCompletionParamsSchema, noMessages) }, options))).toBe(
      await restParam("/v1/chat/completions", noMessages),
    );
    const inBackground = { model: "project-zero", input: "hi", background: true };
    expect(await paramOf(client.createResponse({ params: inBackground }, options))).toBe(await restParam("/v1/responses", inBackground));
    expect(await restParam("/v1/responses", inBackground)).toBe("background");
    // An error with no field named has none over RPC either.
    expect(await paramOf(client.createChatCompletion(message, { headers: bearer(readOnly.apiKey) }))).toBeUndefined();
    expect(upstream.requests).toHaveLength(0);
  });
});
