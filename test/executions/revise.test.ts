import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { restApi, rpcApi, type ExecutionApi } from "../support/execution-api.js";
import { postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { ScriptedWork } from "../support/stage-work.js";

// Revise at the gate: `feedback` on a resume. The flow runs the real website
// stages with the offline writer, so previews are real files; the refusals
// run on scripted stages, where a plan can be held running or made to fail.
const api = restApi;
const TRANSPORTS = [
  { name: "REST", make: (url: string) => restApi(url) },
  { name: "Connect RPC", make: (url: string) => rpcApi(url, "connect") },
  { name: "gRPC", make: (url: string) => rpcApi(url, "grpc") },
];

const GOAL = 'A website for "Rosa Bakery", a small bakery in Lyon selling sourdough bread';
const atGate = (p: RestPlan) => p.status === "awaiting_approval";
const key = (account: TestAccount): Credential => ({ apiKey: account.apiKey });

let app: TestApp;
let scripted: TestApp;
/** Generation limit 2 per window, scripted stages. */
let limited: TestApp;
const work = new ScriptedWork();

beforeAll(async () => {
  [app, scripted, limited] = await Promise.all([
    startTestApp(),
    startTestApp({ stageWork: work.resolver }),
    startTestApp({ stageWork: work.resolver, env: { ZERO_GENERATION_LIMIT: "2" } }),
  ]);
}, 60_000);
afterAll(() => Promise.all([app, scripted, limited].map((a) => a?.close())));

async function page(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

describe.each(TRANSPORTS)("revising over $name", ({ make }) => {
  let api: ExecutionApi;
  let owner: TestAccount;
  beforeAll(async () => {
    api = make(app.url);
    owner = await createAccountWithKey(app, ["build", "read"]);
  });

  it("runs outline, write and build again with the feedback, stops at the gate, and keeps every revision's preview", async () => {
    const created = await api.create(key(owner), { goal: GOAL });
    expect(created.status).toBe(202);
    expect(created.plan!.revisions).toEqual([]);
    const first = await waitForPlan(app.url, key(owner), created.plan!.id, atGate, 30_000);
    expect(first.revisions).toEqual([]);
    const firstPreview = await page(first.previewUrl!);
    expect(firstPreview.text).toContain("Rosa Bakery");

    const revised = await api.resume(key(owner), { planId: first.id, feedback: 'Call it "Maison Lumière" and drop the about page' });
    expect(revised, JSON.stringify(revised)).toMatchObject({ status: 202 });
    expect(revised.plan!.status).toBe("running");
    expect(revised.plan!.revisions).toEqual([
      { number: 1, feedback: 'Call it "Maison Lumière" and drop the about page', createdAt: expect.any(String), previewUrl: null },
    ]);
    expect(revised.plan!.stages.map((s) => [s.id, s.state, s.attempts])).toEqual([
      ["understand", "succeeded", 1],
      ["outline", "running", 2],
      ["write", "pending", 1],
      ["build", "pending", 1],
      ["review", "pending", 1],
      ["publish", "pending", 0],
    ]);

    const second = await waitForPlan(app.url, key(owner), first.id, atGate, 30_000);
    expect(second.stages.map((s) => [s.id, s.state, s.attempts])).toEqual([
      ["understand", "succeeded", 1],
      ["outline", "succeeded", 2],
      ["write", "succeeded", 2],
      ["build", "succeeded", 2],
      ["review", "awaiting_approval", 2],
      ["publish", "pending", 0],
    ]);
    expect(second.revisions).toHaveLength(1);
    const revisionUrl = second.revisions[0]!.previewUrl!;
    expect(revisionUrl).not.toBe(first.previewUrl);
    expect(second.previewUrl).toBe(revisionUrl);

    // Each revision's preview serves its own draft: the first keeps the old name and its about page.
    const newPreview = await page(revisionUrl);
    expect(newPreview.status).toBe(200);
    expect(newPreview.text).toContain("Maison Lumière");
    expect(newPreview.text).not.toContain("Rosa Bakery");
    expect((await page(`${revisionUrl}about.html`)).status).toBe(404);
    expect((await page(first.previewUrl!)).text).toBe(firstPreview.text);
    expect((await page(`${first.previewUrl!}about.html`)).status).toBe(200);

    // Approving publishes the newest revision.
    const approved = await api.resume(key(owner), { planId: first.id, approve: ["review"] });
    expect(approved.status).toBe(202);
    const done = await waitForPlan(app.url, key(owner), first.id, (p) => p.status === "succeeded", 30_000);
    const published = await page(done.publishedUrl!);
    expect(published.text).toContain("Maison Lumière");
    expect(published.text).not.toContain("Rosa Bakery");
    expect(done.revisions).toHaveLength(1);
  }, 90_000);
});

describe("revision history and the offline writer's warning", () => {
  it("records revision_requested with the feedback, and warns about what the offline writer could not apply", async () => {
    const owner = await createAccountWithKey(app, ["build", "read"]);
    const created = await postExecution<{ plan: RestPlan }>(app.url, key(owner), { goal: GOAL });
    const planId = created.body.plan.id;
    await waitForPlan(app.url, key(owner), planId, atGate, 30_000);
    const feedback = "Make it calmer. Add a photo gallery of our cakes";
    const revised = await postExecution<{ plan: RestPlan }>(app.url, key(owner), { planId, feedback });
    expect(revised.status).toBe(202);
    const back = await waitForPlan(app.url, key(owner), planId, atGate, 30_000);
    expect(back.warning).toContain('"Add a photo gallery of our cakes"');
    expect(back.warning).not.toContain('"Make it calmer"');

    const res = await fetch(`${app.url}/api/execution/history?id=${planId}`, { headers: { authorization: `Bearer ${owner.apiKey}` } });
    const { events } = (await res.json()) as { events: { type: string; stage: string | null; attempt: number | null; detail: unknown }[] };
    const at = events.findIndex((e) => e.type === "revision_requested");
    expect(events[at - 1]).toMatchObject({ type: "awaiting_approval", stage: "review", attempt: 1 });
    expect(events[at]).toMatchObject({ stage: null, attempt: null, detail: { feedback } });
    expect(events[at + 1]).toMatchObject({ type: "stage_started", stage: "outline", attempt: 2 });
    expect(events.at(-1)).toMatchObject({ type: "awaiting_approval", stage: "review", attempt: 2 });
  }, 60_000);
});

describe.each(TRANSPORTS)("refusing a revision over $name", ({ make }) => {
  let api: ExecutionApi;
  let owner: TestAccount;
  beforeAll(async () => {
    api = make(scripted.url);
    owner = await createAccountWithKey(scripted, ["build", "read"]);
  });
  const gatePlan = async () => {
    const created = await api.create(key(owner), { goal: "A site for my bakery" });
    return waitForPlan(scripted.url, key(owner), created.plan!.id, atGate);
  };

  it("answers 409 conflict to a plan that is running, failed or succeeded, and changes nothing", async () => {
    const running = (await api.create(key(owner), { goal: "A site for my bakery hold@understand" })).plan!;
    const failed = await waitForPlan(
      scripted.url,
      key(owner),
      (await api.create(key(owner), { goal: "A site for my bakery fail@outline" })).plan!.id,
      (p) => p.status === "failed",
    );
    const succeeded = await gatePlan();
    await api.resume(key(owner), { planId: succeeded.id, approve: ["review"] });
    await waitForPlan(scripted.url, key(owner), succeeded.id, (p) => p.status === "succeeded");
    for (const plan of [running, failed, succeeded]) {
      const before = (await api.get(key(owner), plan.id)).plan!;
      const answer = await api.resume(key(owner), { planId: plan.id, feedback: "Make it warmer" });
      expect(answer, plan.goal).toMatchObject({ status: 409, errorType: "conflict" });
      // Said in words a person reads, not as a status value ("is succeeded").
      expect(answer.errorMessage).toContain({ running: "is still running", failed: "has failed", succeeded: "has already succeeded" }[before.status]);
      const after = (await api.get(key(owner), plan.id)).plan!;
      expect(after.revisions).toEqual([]);
      expect(after.status).toBe(before.status);
    }
  });

  it("answers 400 to feedback of 0 or 2001 code points, or with approve; 2000 emoji are accepted", async () => {
    const plan = await gatePlan();
    for (const feedback of ["", "   \n ", "x".repeat(2001), "🙂".repeat(2001)]) {
      const answer = await api.resume(key(owner), { planId: plan.id, feedback });
      expect(answer, JSON.stringify(feedback.slice(0, 10))).toMatchObject({ status: 400, errorType: "invalid_request" });
      expect(answer.errorMessage).toContain("feedback");
    }
    const both = await api.resume(key(owner), { planId: plan.id, feedback: "Make it warmer", approve: ["review"] });
    expect(both).toMatchObject({ status: 400, errorType: "invalid_request" });
    expect((await api.get(key(owner), plan.id)).plan).toMatchObject({ status: "awaiting_approval", revisions: [] });

    const ok = await api.resume(key(owner), { planId: plan.id, feedback: "🙂".repeat(2000) });
    expect(ok.status).toBe(202);
    expect(ok.plan!.revisions[0]!.feedback).toBe("🙂".repeat(2000));
  });

  it("takes an approve or feedback naming a draft only while that draft is the newest (0 before any revision): else 409, and nothing changes", async () => {
    const plan = await gatePlan();
    const early = await api.resume(key(owner), { planId: plan.id, approve: ["review"], revision: 1 });
    expect(early).toMatchObject({ status: 409, errorType: "conflict" });
    expect(early.errorMessage).toContain("is the first draft, not revision 1's draft");
    expect((await api.get(key(owner), plan.id)).plan).toMatchObject({ status: "awaiting_approval", revisions: [] });

    expect(await api.resume(key(owner), { planId: plan.id, feedback: "Make it warmer", revision: 0 })).toMatchObject({ status: 202 });
    await waitForPlan(scripted.url, key(owner), plan.id, (p) => atGate(p) && p.revisions.length === 1);
    // Sent by someone who saw only the first draft: neither may act on revision 1's.
    const staleApprove = await api.resume(key(owner), { planId: plan.id, approve: ["review"], revision: 0 });
    expect(staleApprove).toMatchObject({ status: 409, errorType: "conflict" });
    expect(staleApprove.errorMessage).toContain("is revision 1's draft, not the first draft");
    expect(await api.resume(key(owner), { planId: plan.id, feedback: "Make it cooler", revision: 0 })).toMatchObject({ status: 409, errorType: "conflict" });
    const unchanged = (await api.get(key(owner), plan.id)).plan!;
    expect(unchanged.status).toBe("awaiting_approval");
    expect(unchanged.revisions.map((r) => r.feedback)).toEqual(["Make it warmer"]);

    expect(await api.resume(key(owner), { planId: plan.id, approve: ["review"], revision: 1 })).toMatchObject({ status: 202 });
    await waitForPlan(scripted.url, key(owner), plan.id, (p) => p.status === "succeeded");
    // A retry of that approval is answered with the plan as it stands, not refused.
    expect(await api.resume(key(owner), { planId: plan.id, approve: ["review"], revision: 1 })).toMatchObject({ status: 202 });
  });

  it("answers 400 to a revision with neither approve nor feedback", async () => {
    const plan = await gatePlan();
    const answer = await api.resume(key(owner), { planId: plan.id, revision: 0 });
    expect(answer).toMatchObject({ status: 400, errorType: "invalid_request" });
    expect(answer.errorMessage).toContain("revision");
  });

  it("answers 404 for another account's plan, like a missing one", async () => {
    const plan = await gatePlan();
    const stranger = await createAccountWithKey(scripted, ["build", "read"]);
    expect(await api.resume(key(stranger), { planId: plan.id, feedback: "Make it warmer" })).toMatchObject({ status: 404, errorType: "not_found" });
    expect(await api.resume(key(owner), { planId: "pln_missing", feedback: "Make it warmer" })).toMatchObject({ status: 404, errorType: "not_found" });
  });
});

describe("feedback with text the database cannot hold, over REST", () => {
  it("answers 400 to a NUL or half a surrogate pair, and nothing changes", async () => {
    const rest = restApi(scripted.url);
    const owner = await createAccountWithKey(scripted, ["build", "read"]);
    const created = await rest.create(key(owner), { goal: "A site for my bakery" });
    const plan = await waitForPlan(scripted.url, key(owner), created.plan!.id, atGate);
    // A NUL reaches the database, which refuses it; half a pair is refused as the request is read.
    for (const feedback of ["Make it \u0000 warmer", "Make it warmer \ud800", "Make it \udc00 warmer"]) {
      const answer = await rest.resume(key(owner), { planId: plan.id, feedback });
      expect(answer, JSON.stringify(feedback)).toMatchObject({ status: 400, errorType: "invalid_request" });
    }
    expect((await rest.get(key(owner), plan.id)).plan).toMatchObject({ status: "awaiting_approval", revisions: [] });
  });
});

describe("a revision number over REST", () => {
  it("must be a whole number of at least 0, sent with a planId, and not with cancel", async () => {
    const owner = await createAccountWithKey(scripted, ["build", "read"]);
    const created = await postExecution(scripted.url, key(owner), { goal: "A site for my bakery" });
    const plan = await waitForPlan(scripted.url, key(owner), (created.body.plan as RestPlan).id, atGate);
    // A string holds a number only as JSON writes one (ProtoJSON's rule): not hexadecimal, binary, signed or padded.
    for (const revision of [-1, 1.5, "one", true, [0], "0x1", "0b1", "0o1", "+1", " 1", "1 ", ".5e1", "1.", "Infinity", ""]) {
      const answer = await postExecution(scripted.url, key(owner), { planId: plan.id, approve: ["review"], revision });
      expect(answer.status, JSON.stringify(revision)).toBe(400);
      expect(answer.body.error, JSON.stringify(revision)).toEqual({ type: "invalid_request", message: expect.stringContaining("revision") });
    }
    // ProtoJSON reads a uint32 from a number or a string, exponent included: these name revision 1, not the first draft.
    for (const revision of ["1", "1e0", "10e-1", 1]) {
      const answer = await postExecution(scripted.url, key(owner), { planId: plan.id, approve: ["review"], revision });
      expect(answer.status, JSON.stringify(revision)).toBe(409);
      expect(answer.body.error, JSON.stringify(revision)).toMatchObject({ type: "conflict", message: expect.stringContaining("not revision 1's draft") });
    }
    const withoutPlan = await postExecution(scripted.url, key(owner), { goal: "A site for my bakery", revision: 0 });
    expect(withoutPlan.status).toBe(400);
    expect(withoutPlan.body.error).toEqual({ type: "invalid_request", message: expect.stringContaining("planId") });
    const withCancel = await postExecution(scripted.url, key(owner), { planId: plan.id, cancel: true, revision: 0 });
    expect(withCancel.status).toBe(400);
    expect(withCancel.body.error).toEqual({ type: "invalid_request", message: expect.stringContaining("revision") });
    expect((await api(scripted.url).get(key(owner), plan.id)).plan).toMatchObject({ status: "awaiting_approval", revisions: [] });
  });
});

describe("the generation limit", () => {
  it("counts a revision like a create: with a limit of 2, one create and one revision leave nothing (429)", async () => {
    const owner = await createAccountWithKey(limited, ["build", "read"]);
    const created = await postExecution<{ plan: RestPlan }>(limited.url, key(owner), { goal: "A site for my bakery" });
    expect(created.headers.get("ratelimit-remaining")).toBe("1");
    const planId = created.body.plan.id;
    await waitForPlan(limited.url, key(owner), planId, atGate);

    const first = await postExecution<{ plan: RestPlan }>(limited.url, key(owner), { planId, feedback: "Make it warmer" });
    expect(first.status).toBe(202);
    expect(first.headers.get("ratelimit-remaining")).toBe("0");
    await waitForPlan(limited.url, key(owner), planId, atGate);

    const refused = await postExecution<{ error: { type: string } }>(limited.url, key(owner), { planId, feedback: "Make it bolder" });
    expect(refused.status).toBe(429);
    expect(refused.body.error.type).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const plan = await waitForPlan(limited.url, key(owner), planId, atGate);
    expect(plan.revisions).toHaveLength(1);
    // A create is refused too: the revision spent the unit.
    expect((await postExecution(limited.url, key(owner), { goal: "Another site for my bakery" })).status).toBe(429);
  });
});
