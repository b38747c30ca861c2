import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, getExecution, postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
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
    // The interface document: an unrecognised outcome "falls back to the default and does not cause an error", whatever its type.
    for (const outcome of [42, null, { kind: "ebook" }, ["ebook"], "EBOOK", ""]) {
      const answer = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A site for my bakery", outcome });
      expect(answer.status, JSON.stringify(outcome)).toBe(202);
      expect(answer.body.plan.outcome).toBe("website");
    }
  });

  it("type-checks every field of a create as a resume does, and creates nothing when one is wrong", async () => {
    const before = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A website for a bakery" });
    const listed = await getExecution<{ plans: RestPlan[] }>(app.url, cred());
    for (const wrong of [
      { approve: "review" },
      { approve: [1] },
      { approve: { review: true } },
      { feedback: 5 },
      { cancel: "yes" },
      { cancel: 1 },
      { cancel: null },
      { planId: 5 },
      { plan_id: false },
    ]) {
      const answer = await postExecution<{ error: { type: string; message: string } }>(app.url, cred(), { goal: "A website for a bakery", ...wrong });
      expect(answer.status, JSON.stringify(wrong)).toBe(400);
      expect(answer.body, JSON.stringify(wrong)).toEqual({ error: { type: "invalid_request", message: expect.any(String) } });
      // Named as the client knows the field (JSON's camelCase, whichever spelling was sent).
      const field = Object.keys(wrong)[0] === "plan_id" ? "planId" : Object.keys(wrong)[0]!;
      expect(answer.body.error.message, JSON.stringify(wrong)).toContain(field);
    }
    // The same approve values are refused on a resume.
    for (const approve of ["review", [1]]) {
      expect((await postExecution(app.url, cred(), { planId: before.body.plan.id, approve })).status).toBe(400);
    }
    expect((await getExecution<{ plans: RestPlan[] }>(app.url, cred())).body.plans.map((p) => p.id)).toEqual(listed.body.plans.map((p) => p.id));
    const after = await postExecution(app.url, cred(), { goal: "A website for a bakery" });
    expect(Number(after.headers.get("ratelimit-remaining"))).toBe(Number(before.headers.get("ratelimit-remaining")) - 1);
  });

  it("answers 400 naming planId to cancel or feedback without one, and creates nothing", async () => {
    const before = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A website for a florist" });
    const listed = await getExecution<{ plans: RestPlan[] }>(app.url, cred());
    for (const body of [
      { goal: "A website created by a cancel request", cancel: true },
      { goal: "A website created by a feedback request", feedback: "make it calm" },
      { goal: "A website created by a feedback request", feedback: "" },
      // An empty or null planId is no planId.
      { goal: "A website created by a cancel request", planId: "", cancel: true },
      { goal: "A website created by a cancel request", planId: null, cancel: true },
      { goal: "A website created by a feedback request", plan_id: "", feedback: "make it calm" },
      { cancel: true },
    ]) {
      const answer = await postExecution<{ error: { type: string; message: string } }>(app.url, cred(), body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body, JSON.stringify(body)).toEqual({ error: { type: "invalid_request", message: expect.stringContaining("planId") } });
    }
    expect((await getExecution<{ plans: RestPlan[] }>(app.url, cred())).body.plans.map((p) => p.id)).toEqual(listed.body.plans.map((p) => p.id));
    const after = await postExecution(app.url, cred(), { goal: "A website for a florist" });
    expect(after.status).toBe(202);
    expect(Number(after.headers.get("ratelimit-remaining"))).toBe(Number(before.headers.get("ratelimit-remaining")) - 1);
    // Without cancel or feedback, an empty planId stays a create, as does `cancel: false`; so does one with
    // `approve`, a field the interface document names, answered 202 as it always was.
    const approving = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A website for a baker", approve: ["review"] });
    expect(approving.status).toBe(202);
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A website for a florist", planId: "", cancel: false });
    expect(created.status).toBe(202);
    expect(created.body.plan.id).not.toBe(before.body.plan.id);
  });

  it("answers 400 to a body that names a key twice (as Connect does) or is not UTF-8, and creates nothing", async () => {
    const listed = await getExecution<{ plans: RestPlan[] }>(app.url, cred());
    const send = (body: Uint8Array | string) =>
      fetch(`${app.url}/api/execution`, { method: "POST", headers: { "content-type": "application/json", ...authHeaders(app.url, cred()) }, body });
    for (const raw of [
      '{"goal":"x","goal":"A website for a cafe in Lille"}',
      // The same key spelled with an escape is the same key; so is one twice in a nested object.
      '{"goal":"A website for a cafe in Lille","go\\u0061l":"x"}',
      '{"goal":"A website for a cafe in Lille","outcome":{"kind":"ebook","kind":"website"}}',
    ]) {
      const answer = await send(raw);
      expect(answer.status, raw).toBe(400);
      expect(await answer.json(), raw).toEqual({ error: { type: "invalid_request", message: expect.stringContaining("twice") } });
    }
    // A raw 0xE9 (Latin-1's é) is not UTF-8: refused, never stored as U+FFFD.
    const latin1 = Buffer.concat([Buffer.from('{"goal":"A website for a caf'), Buffer.from([0xe9]), Buffer.from(' in Lille"}')]);
    const answer = await send(latin1);
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: { type: "invalid_request", message: expect.stringContaining("UTF-8") } });
    expect((await getExecution<{ plans: RestPlan[] }>(app.url, cred())).body.plans.map((p) => p.id)).toEqual(listed.body.plans.map((p) => p.id));
    // The same key in two objects, and é as UTF-8, are fine.
    const fine = await send(Buffer.from('{"goal":"A website for a café in Lille","outcome":{"goal":1}}'));
    expect(fine.status).toBe(202);
    expect(((await fine.json()) as { plan: RestPlan }).plan.goal).toBe("A website for a café in Lille");
  });

  it("refuses a Connect JSON create that is not UTF-8 as REST does, and creates nothing", async () => {
    const listed = await getExecution<{ plans: RestPlan[] }>(app.url, cred());
    const latin1 = Buffer.concat([Buffer.from('{"goal":"A website for a caf'), Buffer.from([0xe9]), Buffer.from(' in Lille"}')]);
    const answer = await fetch(`${app.url}/zero.v1.ExecutionService/CreateExecution`, {
      method: "POST",
      headers: { "content-type": "application/json", ...authHeaders(app.url, cred()) },
      body: latin1,
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ code: "invalid_argument" });
    expect((await getExecution<{ plans: RestPlan[] }>(app.url, cred())).body.plans.map((p) => p.id)).toEqual(listed.body.plans.map((p) => p.id));
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
