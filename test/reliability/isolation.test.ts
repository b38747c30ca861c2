import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { consoleClient, createAccountWithKey, sessionHeaders, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

/** One account can never see, resume, list or revoke what belongs to another, on any route. */
describe("accounts are isolated from each other", () => {
  let app: TestApp;
  let alice: TestAccount;
  let bob: TestAccount;
  let alicePlanId: string;

  const rest = (account: TestAccount, path: string, init: RequestInit = {}) =>
    fetch(`${app.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${account.apiKey}`, "content-type": "application/json", ...(init.headers as Record<string, string>) },
    });
  const rpc = (account: TestAccount) =>
    createClient(
      ExecutionService,
      createConnectTransport({
        baseUrl: app.url,
        httpVersion: "2",
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${account.apiKey}`);
            return next(req);
          },
        ],
      }),
    );

  beforeAll(async () => {
    app = await startTestApp();
    alice = await createAccountWithKey(app, ["read", "build", "chat"]);
    bob = await createAccountWithKey(app, ["read", "build", "chat"]);
    const created = await rest(alice, "/api/execution", { method: "POST", body: JSON.stringify({ goal: "Alice's private bakery website" }) });
    expect(created.status).toBe(202);
    alicePlanId = ((await created.json()) as { plan: { id: string } }).plan.id;
  });
  afterAll(() => app.close());

  it("REST: another's plan reads exactly like one that never existed", async () => {
    const theirs = await rest(bob, `/api/execution?id=${alicePlanId}`);
    const missing = await rest(bob, `/api/execution?id=pln_doesnotexist000000000`);
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(await theirs.json()).toEqual(await missing.json());
    expect((await rest(alice, `/api/execution?id=${alicePlanId}`)).status).toBe(200);
  });

  it("REST: another's plan cannot be resumed or approved", async () => {
    const res = await rest(bob, "/api/execution", { method: "POST", body: JSON.stringify({ planId: alicePlanId, approve: ["review"] }) });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe("not_found");
  });

  it("REST: lists hold only the caller's own plans", async () => {
    const list = (await (await rest(bob, "/api/execution")).json()) as { plans: { id: string }[] };
    expect(list.plans.map((p) => p.id)).not.toContain(alicePlanId);
    const own = (await (await rest(alice, "/api/execution")).json()) as { plans: { id: string }[] };
    expect(own.plans.map((p) => p.id)).toContain(alicePlanId);
  });

  it("RPC: Get, Resume and Watch of another's plan are NotFound; List leaves it out", async () => {
    const client = rpc(bob);
    const notFound = (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound;
    await expect(client.getExecution({ id: alicePlanId })).rejects.toSatisfy(notFound);
    await expect(client.resumeExecution({ planId: alicePlanId, approve: ["review"] })).rejects.toSatisfy(notFound);
    await expect(
      (async () => {
        for await (const _ of client.watchExecution({ id: alicePlanId })) return;
      })(),
    ).rejects.toSatisfy(notFound);
    const { plans } = await client.listExecutions({});
    expect(plans.map((p) => p.id)).not.toContain(alicePlanId);
  });

  it("Console: keys are listed and revoked only by their own account", async () => {
    const console = consoleClient(app.url);
    const aliceKeys = await console.listApiKeys({}, { headers: sessionHeaders(app.url, alice.cookie) });
    const bobKeys = await console.listApiKeys({}, { headers: sessionHeaders(app.url, bob.cookie) });
    const aliceKeyIds = aliceKeys.apiKeys.map((k) => k.id);
    expect(bobKeys.apiKeys.map((k) => k.id).some((id) => aliceKeyIds.includes(id))).toBe(false);
    await expect(console.revokeApiKey({ id: aliceKeyIds[0]! }, { headers: sessionHeaders(app.url, bob.cookie) })).rejects.toSatisfy(
      (e) => e instanceof ConnectError && e.code === Code.NotFound,
    );
    expect((await rest(alice, "/api/execution")).status).toBe(200);
  });

  it("writes no secret to the logs along the way", () => {
    const logs = app.logs.join("\n");
    for (const account of [alice, bob]) {
      expect(logs).not.toContain(account.apiKey);
      expect(logs).not.toContain(account.password);
      expect(logs).not.toContain(account.cookie.split("=")[1]!);
    }
  });
});
