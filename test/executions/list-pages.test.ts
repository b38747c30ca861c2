import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { restApi, rpcApi } from "../support/execution-api.js";
import { type Credential, waitForPlan } from "../support/executions.js";
import { ScriptedWork } from "../support/stage-work.js";

const TRANSPORTS = [
  { name: "REST", make: (url: string) => restApi(url) },
  { name: "Connect RPC", make: (url: string) => rpcApi(url, "connect") },
  { name: "gRPC", make: (url: string) => rpcApi(url, "grpc") },
];

const work = new ScriptedWork();
let app: TestApp;
let account: TestAccount;
/** Newest first, as the list orders them. */
let created: string[];

beforeAll(async () => {
  app = await startTestApp({ stageWork: work.resolver, env: { ZERO_GENERATION_LIMIT: "100" } });
  account = await createAccountWithKey(app, ["build", "read"]);
  const api = restApi(app.url);
  created = [];
  for (let i = 1; i <= 23; i++) {
    const answer = await api.create({ apiKey: account.apiKey }, { goal: `A website for shop number ${i} in Bruges` });
    expect(answer.status).toBe(202);
    created.unshift(answer.plan!.id);
  }
  // At rest at their gates, so a page and a later read of one plan see it the same.
  for (const id of created) await waitForPlan(app.url, { apiKey: account.apiKey }, id, (plan) => plan.status === "awaiting_approval", 60_000);
});
afterAll(() => app?.close());

describe.each(TRANSPORTS)("listing plans page by page over $name", ({ make }) => {
  const credential = (): Credential => ({ apiKey: account.apiKey });

  it("gives the ten newest without a cursor, then ten older per page until none are left", async () => {
    const api = make(app.url);
    const first = await api.list(credential());
    expect(first.status).toBe(200);
    expect(first.plans!.map((p) => p.id)).toEqual(created.slice(0, 10));
    const second = await api.list(credential(), first.plans!.at(-1)!.id);
    expect(second.plans!.map((p) => p.id)).toEqual(created.slice(10, 20));
    const third = await api.list(credential(), second.plans!.at(-1)!.id);
    expect(third.plans!.map((p) => p.id)).toEqual(created.slice(20));
    const past = await api.list(credential(), third.plans!.at(-1)!.id);
    expect(past.status).toBe(200);
    expect(past.plans).toEqual([]);
    // A page has the shape of the first one: whole plans with their stages.
    expect(second.plans![0]).toEqual((await api.get(credential(), created[10]!)).plan);
  });

  it("refuses a cursor that is not one of the caller's plans with 400 invalid_request", async () => {
    const api = make(app.url);
    const stranger = await createAccountWithKey(app, ["build", "read"]);
    for (const before of ["not-a-plan", "pln_doesnotexist", created[3]!]) {
      const answer = await api.list(before === created[3] ? { apiKey: stranger.apiKey } : credential(), before);
      expect(answer.status, before).toBe(400);
      expect(answer.errorType).toBe("invalid_request");
    }
  });
});
