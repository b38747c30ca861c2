import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { getExecution, postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { ScriptedWork } from "../support/stage-work.js";

// What only the REST view has: JSON bodies, content types, the session
// cookie with its Origin rule, and the exact wrapper shapes.
describe("POST and GET /api/execution", () => {
  const work = new ScriptedWork();
  let app: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());
  const cred = () => ({ apiKey: account.apiKey });

  it("answers 400 to a body that is not JSON, or not sent as JSON", async () => {
    for (const [raw, contentType] of [
      ["{not json", "application/json"],
      ['{"goal": "A site for my bakery"}', "text/plain"],
      ["goal=A+site+for+my+bakery", "application/x-www-form-urlencoded"],
      ["[1, 2]", "application/json"],
      ["", "application/json"],
    ] as const) {
      const answer = await postExecution<{ error: { type: string; message: string } }>(app.url, cred(), undefined, { raw, contentType });
      expect(answer.status, `${contentType}: ${raw}`).toBe(400);
      expect(answer.body).toEqual({ error: { type: "invalid_request", message: expect.any(String) } });
    }
  });

  it("answers 400 to fields of the wrong type, but never to an unrecognised outcome", async () => {
    expect((await postExecution(app.url, cred(), { goal: 12345678 })).status).toBe(400);
    expect((await postExecution(app.url, cred(), { goal: ["A site for my bakery"] })).status).toBe(400);
    expect((await postExecution(app.url, cred(), {})).status).toBe(400);
    for (const outcome of [42, null, { kind: "ebook" }, "EBOOK", ""]) {
      const answer = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery", outcome });
      expect(answer.status, JSON.stringify(outcome)).toBe(202);
      expect(answer.body.plan.outcome).toBe("website");
    }
  });

  it("checks credentials before the body: no credentials is 401 even with a broken body", async () => {
    const answer = await postExecution(app.url, undefined, undefined, { raw: "{nope", contentType: "text/plain" });
    expect(answer.status).toBe(401);
  });

  it("answers the documented shapes: 202 {plan, unavailable}, 200 {plan}, 200 {plans}", async () => {
    const created = await postExecution<Record<string, unknown>>(app.url, cred(), { goal: "A site for my bakery" });
    expect(Object.keys(created.body).sort()).toEqual(["plan", "unavailable"]);
    expect(created.body.unavailable).toEqual(["ebook"]);
    const plan = created.body.plan as RestPlan;
    for (const field of ["id", "goal", "project", "status", "progress", "resumable", "warning", "previewUrl", "publishedUrl", "stages"]) {
      expect(plan).toHaveProperty(field);
    }
    const one = await getExecution<Record<string, unknown>>(app.url, cred(), plan.id);
    expect(Object.keys(one.body)).toEqual(["plan"]);
    const list = await getExecution<Record<string, unknown>>(app.url, cred());
    expect(Object.keys(list.body)).toEqual(["plans"]);
    // An empty id is no id: the list.
    expect(Object.keys((await getExecution<Record<string, unknown>>(app.url, cred(), "")).body)).toEqual(["plans"]);
  });

  it("resumes with planId, ignoring goal and outcome whatever they hold", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery" });
    await waitForPlan(app.url, cred(), created.body.plan.id, (p) => p.status === "awaiting_approval");
    const resumed = await postExecution<{ plan: RestPlan; unavailable: string[] }>(app.url, cred(), {
      planId: created.body.plan.id,
      goal: 7,
      outcome: "ebook",
      approve: ["review", "unknown-stage"],
    });
    expect(resumed.status).toBe(202);
    expect(resumed.body.plan.id).toBe(created.body.plan.id);
    expect(resumed.body.plan.goal).toBe("A site for my bakery");
    expect(resumed.body.unavailable).toEqual(["ebook"]);
    expect((await postExecution(app.url, cred(), { planId: 5 })).status).toBe(400);
    expect((await postExecution(app.url, cred(), { planId: created.body.plan.id, approve: "review" })).status).toBe(400);
  });

  it("accepts the session cookie from this origin and refuses it from another", async () => {
    const session = { cookie: account.cookie };
    const created = await postExecution<{ plan: RestPlan }>(app.url, session, { goal: "A site made in the Console" });
    expect(created.status).toBe(202);
    expect((await getExecution(app.url, session, created.body.plan.id)).status).toBe(200);
    const foreign = await postExecution(app.url, session, { goal: "A site made elsewhere" }, { headers: { origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
  });
});
