import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, getExecution, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";

// A revision that renames the site (the offline writer applies a quoted name) renames the
// plan's project too: the API, CLI and Console show what the preview and the published
// site are called. A revision is taken only at the approval gate, before anything is
// published, so the project's address follows the new name as well.
const GOAL = 'A website for "Shop Number 11", a bicycle shop in Utrecht';
const RENAME = 'Call it "Spoke & Wheel" and make it calmer';

let app: TestApp;
let credential: Credential;

beforeAll(async () => {
  app = await startTestApp(); // no upstream: the offline writer
  credential = { apiKey: (await createAccountWithKey(app, ["build", "read"])).apiKey };
}, 60_000);
afterAll(() => app?.close());

const atGate = (revisions: number) => (p: RestPlan) => p.status === "awaiting_approval" && p.revisions.length === revisions;

async function page(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

describe("a revision that renames the site, through the real API", () => {
  it("renames the plan's project, moves its unpublished address to the new name, and publishes there", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: GOAL });
    expect(created.status).toBe(202);
    const planId = created.body.plan.id;
    const first = await waitForPlan(app.url, credential, planId, atGate(0), 60_000);
    expect(first.project).toMatchObject({ name: "Shop Number 11", slug: "shop-number-11" });

    expect((await postExecution(app.url, credential, { planId, feedback: RENAME })).status).toBe(202);
    const renamed = await waitForPlan(app.url, credential, planId, atGate(1), 60_000);
    expect(renamed.project).toEqual({ id: first.project!.id, name: "Spoke & Wheel", slug: "spoke-wheel" });
    // The draft is built for the address it will have.
    const draft = await page(renamed.previewUrl!);
    expect(draft.text).toContain("<title>Spoke &amp; Wheel");
    expect(draft.text).toContain(`<link rel="canonical" href="${app.url}/sites/spoke-wheel/">`);
    // The list shows the new name as well.
    const listed = await getExecution<{ plans: RestPlan[] }>(app.url, credential);
    expect(listed.body.plans.find((p) => p.id === planId)?.project?.name).toBe("Spoke & Wheel");

    // A second revision that names nothing keeps the name and the address.
    expect((await postExecution(app.url, credential, { planId, feedback: "Make it bolder" })).status).toBe(202);
    const bolder = await waitForPlan(app.url, credential, planId, atGate(2), 60_000);
    expect(bolder.project).toEqual(renamed.project);

    expect((await postExecution(app.url, credential, { planId, approve: ["review"] })).status).toBe(202);
    const published = await waitForPlan(app.url, credential, planId, (p) => p.status === "succeeded", 60_000);
    expect(published.project).toEqual(renamed.project);
    expect(published.publishedUrl).toBe(`${app.url}/sites/spoke-wheel/`);
    expect((await page(published.publishedUrl!)).text).toContain("<title>Spoke &amp; Wheel");
    expect((await page(`${app.url}/sites/shop-number-11/`)).status).toBe(404);

    // The name the plan gave up is free: the next shop called that gets its address, not "-2".
    const next = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: GOAL });
    const other = await waitForPlan(app.url, credential, next.body.plan.id, atGate(0), 60_000);
    expect(other.project).toMatchObject({ name: "Shop Number 11", slug: "shop-number-11" });

    // Deleting the renamed plan takes its site down at the address it was published at.
    const deleted = await fetch(`${app.url}/api/execution?id=${planId}`, { method: "DELETE", headers: authHeaders(app.url, credential) });
    expect(deleted.status).toBe(204);
    expect((await page(`${app.url}/sites/spoke-wheel/`)).status).toBe(404);
  }, 180_000);
});
