import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { drip, fail, FakeUpstream } from "../chat/support/fake-upstream.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, postExecution, waitForPlan, type RestPlan } from "../support/executions.js";

let upstream: FakeUpstream;
let app: TestApp;
let account: TestAccount;

const settled = (p: RestPlan) => p.status !== "running";

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  app = await startTestApp({
    env: {
      ZERO_UPSTREAMS: JSON.stringify([{ name: "SecretCo", baseUrl: upstream.url, apiKey: "sk-upstream-SECRET", model: "secret-model-xyz" }]),
      ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "800",
      ZERO_STAGE_MAX_ATTEMPTS: "3",
      ZERO_STAGE_RETRY_BASE_MS: "20",
      ZERO_STAGE_RETRY_CAP_MS: "50",
    },
  });
  account = await createAccountWithKey(app, ["build", "read"]);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

async function historyTypes(planId: string): Promise<string[]> {
  const res = await fetch(`${app.url}/api/execution/history?id=${encodeURIComponent(planId)}`, { headers: authHeaders(app.url, { apiKey: account.apiKey }) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: { type: string }[] }).events.map((event) => event.type);
}

describe("a stage whose upstream refuses the service's own key, account or model name", () => {
  // 402: the operator's provider account is out of credit (OpenRouter and DeepSeek answer so), which no retry mends either.
  it("fails at once, resumable, pointing the operator at ZERO_UPSTREAMS without naming the provider", async () => {
    for (const status of [401, 402, 403, 404]) {
      upstream.reset().otherwise(fail(status, "Incorrect API key provided: sk-upstream-SECRET for secret-model-xyz"));
      const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal: "A site for my bakery in Leiden" });
      const failed = await waitForPlan(app.url, { apiKey: account.apiKey }, created.body.plan.id, settled, 30_000);
      expect(failed.status).toBe("failed");
      expect(failed.resumable).toBe(true);
      const stage = failed.stages.find((s) => s.id === "understand")!;
      expect(stage).toMatchObject({
        state: "failed",
        attempts: 1,
        error: {
          type: "upstream_misconfigured",
          message:
            "the model provider refused the service's key, account or model name; check the API keys, the provider accounts' credit and the model names in ZERO_UPSTREAMS",
        },
      });
      expect(upstream.requests).toHaveLength(1);
      expect(await historyTypes(failed.id)).not.toContain("stage_retrying");
    }
  }, 120_000);

  // Found operating the service: a stage's failed upstream attempts were logged with neither its plan nor its stage.
  it("logs the upstream's refusal with the plan and the stage it failed", async () => {
    upstream.otherwise(fail(401, "Incorrect API key provided"));
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal: "A site for my bakery in Gouda" });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, { apiKey: account.apiKey }, planId, settled, 30_000);
    const refusals = app.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "upstream attempt refused");
    expect(refusals.filter((line) => line.planId === planId)).toEqual([expect.objectContaining({ level: 40, planId, stage: "understand", status: 401 })]);
  }, 60_000);
});

describe("a stage whose upstream answer never finishes", () => {
  it("times out as upstream_timeout, is retried, then fails resumable instead of running forever", async () => {
    upstream.otherwise(drip());
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal: "A site for my bakery in Delft" });
    const failed = await waitForPlan(app.url, { apiKey: account.apiKey }, created.body.plan.id, settled, 30_000);
    expect(failed.status).toBe("failed");
    expect(failed.resumable).toBe(true);
    expect(failed.stages.find((s) => s.id === "understand")).toMatchObject({ state: "failed", attempts: 3, error: { type: "upstream_timeout" } });
    expect((await historyTypes(failed.id)).filter((type) => type === "stage_retrying")).toHaveLength(2);
  }, 60_000);
});
