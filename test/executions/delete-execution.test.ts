import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { FakeUpstream, type UpstreamRequest } from "../chat/support/fake-upstream.js";
import { schemaNameOf, writerModel } from "../outcomes/support/model-answers.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, getExecution, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { HeldWork } from "../support/stage-work.js";

// The real outcomes writing real files, with a fake upstream writer behind the chat router.

const HANG = "hang-the-outline";

let upstream: FakeUpstream;
let app: TestApp;
let account: TestAccount;
let other: TestAccount;
const hanging: UpstreamRequest[] = [];

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  upstream.otherwise((exchange) => {
    // A writer request that never answers: only a cancel ends it.
    if (schemaNameOf(exchange.body) === "site_outline" && JSON.stringify(exchange.body).includes(HANG)) {
      hanging.push(exchange.record);
      return;
    }
    return writerModel(exchange);
  });
  app = await startTestApp({ env: { ZERO_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstream.url, apiKey: "sk-fake", model: "fake-model" }]) } });
  [account, other] = await Promise.all([createAccountWithKey(app, ["build", "read"]), createAccountWithKey(app, ["build", "read"])]);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

const cred = () => ({ apiKey: account.apiKey });

async function deleteExecution(credential: Credential, id: string): Promise<Response> {
  return fetch(`${app.url}/api/execution?id=${encodeURIComponent(id)}`, { method: "DELETE", headers: authHeaders(app.url, credential) });
}

async function statusOf(url: string, credential: Credential = cred()): Promise<number> {
  const res = await fetch(url, { headers: authHeaders(app.url, credential) });
  await res.arrayBuffer();
  return res.status;
}

describe("cancel aborts the stage's upstream writer request", () => {
  it("a website stuck in its outline request: the cancel hangs the request up", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: `A website for a sea kayaking school ${HANG}` });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, cred(), planId, (p) => p.stages.find((s) => s.id === "outline")?.state === "running" && hanging.length > 0);
    const request = hanging.at(-1)!;
    expect(request.abortedAt).toBeUndefined();
    const answer = await postExecution<{ plan: RestPlan }>(app.url, cred(), { planId, cancel: true });
    expect(answer.body.plan.status).toBe("cancelled");
    // Resolves only when the service closed the upstream request.
    await request.aborted;
    expect(request.abortedAt).toBeDefined();
    const plan = (await getExecution<{ plan: RestPlan }>(app.url, cred(), planId)).body.plan;
    expect(plan.stages.find((s) => s.id === "outline")?.state).toBe("cancelled");
  });
});

describe("DELETE /api/execution?id= and DeleteExecution", () => {
  it("removes a published plan, its history, download, preview and published site; the URLs are 404", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A website for a harbour-side kayak rental" });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    await postExecution(app.url, cred(), { planId, approve: ["review"] });
    const done = await waitForPlan(app.url, cred(), planId, (p) => p.status === "succeeded");
    const urls = [done.previewUrl!, done.publishedUrl!, `${app.url}/api/execution/history?id=${planId}`, `${app.url}/api/execution/download?id=${planId}`];
    for (const url of urls) expect(await statusOf(url)).toBe(200);
    const slug = done.project!.slug;
    // Through the store the service uses (files, or Postgres when DATABASE_URL is set).
    expect(await app.artifacts.list(`sites/${slug}/`)).toContain(`sites/${slug}/index.html`);

    // Another account's plan is a 404 like a missing one, and stays.
    const theirs = await deleteExecution({ apiKey: other.apiKey }, planId);
    const missing = await deleteExecution(cred(), "pln_missing");
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toEqual(await missing.json());
    expect(await statusOf(done.publishedUrl!)).toBe(200);

    const res = await deleteExecution(cred(), planId);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect((await getExecution(app.url, cred(), planId)).status).toBe(404);
    for (const url of urls) expect(await statusOf(url)).toBe(404);
    for (const prefix of [`sites/${slug}/`, `preview/${planId}/`, `index/plans/${planId}/`]) expect(await app.artifacts.list(prefix)).toEqual([]);
    // The plan is gone from the list, and a second delete is a 404.
    const list = await getExecution<{ plans: RestPlan[] }>(app.url, cred());
    expect(list.body.plans.map((p) => p.id)).not.toContain(planId);
    expect((await deleteExecution(cred(), planId)).status).toBe(404);
  });

  it("lets go of an address no site was published at, and keeps a published one from every later plan", async () => {
    const goal = "A website for a quayside oyster bar";
    const atGate = async (credential: Credential) => {
      const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal });
      return waitForPlan(app.url, credential, created.body.plan.id, (p) => p.status === "awaiting_approval");
    };
    // A draft holds its address while it lives; deleted unpublished, the address is free again, for any account.
    const draft = await atGate(cred());
    const slug = draft.project!.slug;
    expect((await deleteExecution(cred(), draft.id)).status).toBe(204);
    expect(await app.artifacts.get(`index/slugs/${slug}`)).toBeUndefined();
    const theirs = await atGate({ apiKey: other.apiKey });
    expect(theirs.project!.slug).toBe(slug);

    // Published and then deleted, its address is never handed to another plan.
    await postExecution(app.url, { apiKey: other.apiKey }, { planId: theirs.id, approve: ["review"] });
    await waitForPlan(app.url, { apiKey: other.apiKey }, theirs.id, (p) => p.status === "succeeded");
    expect((await deleteExecution({ apiKey: other.apiKey }, theirs.id)).status).toBe(204);
    expect(new TextDecoder().decode(await app.artifacts.get(`index/slugs/${slug}`))).toBe(theirs.id);
    const later = await atGate(cred());
    expect(later.project!.slug).not.toBe(slug);
  });

  it("cancels a running plan first, over Connect, answering an empty message", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: `A website for a rowing club ${HANG}` });
    const planId = created.body.plan.id;
    const before = hanging.length;
    await waitForPlan(app.url, cred(), planId, () => hanging.length > before);
    const request = hanging.at(-1)!;
    const client = createClient(ExecutionService, createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }));
    const answer = await client.deleteExecution({ id: planId }, { headers: { authorization: `Bearer ${account.apiKey}` } });
    expect(answer.$typeName).toBe("zero.v1.DeleteExecutionResponse");
    await request.aborted;
    expect((await getExecution(app.url, cred(), planId)).status).toBe(404);
    expect((await fetch(`${app.url}/api/execution?id=`, { method: "DELETE", headers: authHeaders(app.url, cred()) })).status).toBe(400);
    expect((await deleteExecution(undefined, planId)).status).toBe(401);
  });
});

// A publish that loses its lease (a cancel or a delete while it copies) may still write some files: the stage's
// result is discarded, and its files must never be public. A site or book is served only while its plan shows
// it published; a preview only while its plan exists. Here the late writes are made through the store directly.
describe("files written after a plan stopped showing them", () => {
  it("are not served under a cancelled plan's address, nor under a deleted plan's", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred(), { goal: "A website for a lakeside rowing club" });
    const planId = created.body.plan.id;
    const atGate = await waitForPlan(app.url, cred(), planId, (p) => p.status === "awaiting_approval");
    const slug = atGate.project!.slug;
    const site = `${app.url}/sites/${slug}/`;
    expect(await statusOf(site)).toBe(404);
    await postExecution(app.url, cred(), { planId, cancel: true });
    // What a publish cut short by the cancel wrote.
    await app.artifacts.put(`sites/${slug}/index.html`, "<!DOCTYPE html><title>late</title>");
    expect(await statusOf(site)).toBe(404);
    expect(await statusOf(`${site}index.html`)).toBe(404);
    // The draft it was shown stays visible to whoever has its link until the plan is deleted; a revision's
    // preview that a build cut short by the cancel wrote is not one the plan lists.
    expect(await statusOf(atGate.previewUrl!)).toBe(200);
    await app.artifacts.put(`preview/${planId}-r1/index.html`, "<!DOCTYPE html><title>late</title>");
    expect(await statusOf(`${app.url}/preview/${planId}-r1/`)).toBe(404);

    expect((await deleteExecution(cred(), planId)).status).toBe(204);
    // What a build or publish still running at the delete wrote after the sweep.
    await app.artifacts.put(`preview/${planId}/index.html`, "<!DOCTYPE html><title>late</title>");
    await app.artifacts.put(`sites/${slug}/index.html`, "<!DOCTYPE html><title>late</title>");
    expect(await statusOf(atGate.previewUrl!)).toBe(404);
    expect(await statusOf(site)).toBe(404);
  });
});

// A stage still running at the delete stops within one lease (its lease is revoked), but may write files until
// then, or later if it is stuck in a write. (test/executions/delete-two-instances.test.ts: when the deleting
// instance stops at once.)
describe("the sweeps after a delete", () => {
  async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it("remove what a stage wrote after the delete, one lease later and again much later", async () => {
    const work = new HeldWork();
    // A lease long enough that the late write below comes before the first sweep, however loaded the machine.
    const lateApp = await startTestApp({ stageWork: work.resolver, env: { ZERO_STAGE_LEASE_MS: "2000" } });
    const { apiKey } = await createAccountWithKey(lateApp, ["build", "read"]);
    const created = await postExecution<{ plan: RestPlan }>(lateApp.url, { apiKey }, { goal: "A website for a night market" });
    const planId = created.body.plan.id;
    await work.next();
    const res = await fetch(`${lateApp.url}/api/execution?id=${planId}`, { method: "DELETE", headers: authHeaders(lateApp.url, { apiKey }) });
    expect(res.status).toBe(204);
    // What the stage, not yet stopped, wrote after the delete removed the plan's files.
    await lateApp.artifacts.put(`preview/${planId}/index.html`, "<!DOCTYPE html><title>late</title>");
    await until(async () => (await lateApp.artifacts.list(`preview/${planId}/`)).length === 0, "the late file to be removed");

    // A stage stuck in a write far longer than its lease (a store that does not answer) writes later still;
    // the later sweep is due an hour after the delete: the test brings it forward, once the first sweep has
    // recorded that (its files go before it does, and it would set the hour over the test's "now").
    const sweeps = async () => (await lateApp.store.db.selectFrom("deleted_plans").select("sweeps").where("plan_id", "=", planId).executeTakeFirst())?.sweeps;
    await until(async () => (await sweeps()) === 1, "the first sweep to be recorded");
    await lateApp.artifacts.put(`work/${planId}/late.json`, "{}");
    await sql`UPDATE deleted_plans SET sweep_at = now() WHERE plan_id = ${planId}`.execute(lateApp.store.db);
    await until(async () => (await lateApp.artifacts.list(`work/${planId}/`)).length === 0, "the later file to be removed");
    await lateApp.close();
  }, 60_000); // two sweeps' waits, each up to a lease or two on a loaded machine
});
