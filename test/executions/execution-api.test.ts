import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimStages } from "../../src/executions/stage-queue.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { restApi, rpcApi, type ApiAnswer, type ExecutionApi } from "../support/execution-api.js";
import { waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { wellInsideWindow } from "../support/limit-windows.js";
import { ScriptedWork } from "../support/stage-work.js";

// The same scenarios run through every transport: REST, Connect and gRPC
// share one service function per RPC, so they must answer alike.
const TRANSPORTS = [
  { name: "REST", make: (url: string) => restApi(url) },
  { name: "Connect RPC", make: (url: string) => rpcApi(url, "connect") },
  { name: "gRPC", make: (url: string) => rpcApi(url, "grpc") },
];

const WEBSITE_STAGES = ["understand", "outline", "write", "build", "review", "publish"];

const work = new ScriptedWork();
let app: TestApp;
/** Generation limit 2 per window. */
let limitedApp: TestApp;
/** Neither an upstream nor the offline writer: no outcome can run. */
let noWriterApp: TestApp;
/** Runs no stages itself and leases for 300 ms: a test plays the worker that dies. */
let idleApp: TestApp;

beforeAll(async () => {
  [app, limitedApp, noWriterApp, idleApp] = await Promise.all([
    startTestApp({ stageWork: work.resolver, env: { ZERO_WORKER_CONCURRENCY: "8" } }),
    startTestApp({ stageWork: work.resolver, env: { ZERO_GENERATION_LIMIT: "2" } }),
    startTestApp({ stageWork: work.resolver, env: { ZERO_OFFLINE_WRITER: "off" } }),
    startTestApp({ stageWork: work.resolver, env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_STAGE_LEASE_MS: "300" } }),
  ]);
});
afterAll(() => Promise.all([app, limitedApp, noWriterApp, idleApp].map((a) => a?.close())));

const key = (account: TestAccount): Credential => ({ apiKey: account.apiKey });

function expectCreated(answer: ApiAnswer): RestPlan {
  expect(answer, JSON.stringify(answer)).toMatchObject({ status: 202 });
  return answer.plan!;
}

describe.each(TRANSPORTS)("executions over $name", ({ make }) => {
  let api: ExecutionApi;
  let owner: TestAccount;
  let stranger: TestAccount;
  beforeAll(async () => {
    api = make(app.url);
    [owner, stranger] = await Promise.all([createAccountWithKey(app, ["build", "read"]), createAccountWithKey(app, ["build", "read"])]);
  });

  describe("creating (POST /api/execution, CreateExecution)", () => {
    it("answers 202 with the new plan before any stage finishes, readable at once", async () => {
      const answer = await api.create(key(owner), { goal: "A site for my bakery hold@understand" });
      const plan = expectCreated(answer);
      expect(answer.unavailable).toEqual(["ebook"]);
      expect(plan).toMatchObject({
        goal: "A site for my bakery hold@understand",
        outcome: "website",
        status: "running",
        progress: 0,
        resumable: false,
        project: null,
        warning: null,
        previewUrl: null,
        publishedUrl: null,
      });
      expect(plan.id).toMatch(/^pln_[0-9A-Za-z]+$/);
      expect(plan.stages.map((s) => s.id)).toEqual(WEBSITE_STAGES);
      expect(plan.stages[0]).toEqual({ id: "understand", title: "Understand the goal", state: "running", attempts: 1, error: null, progress: 0 });
      for (const stage of plan.stages.slice(1)) expect(stage).toMatchObject({ state: "pending", attempts: 0, error: null, progress: 0 });
      expect(answer.headers.get("ratelimit-limit")).toBe("20");
      expect(Number(answer.headers.get("ratelimit-remaining"))).toBeLessThan(20);
      expect(Number(answer.headers.get("ratelimit-reset"))).toBeGreaterThan(0);

      const read = await api.get(key(owner), plan.id);
      expect(read.status).toBe(200);
      expect(read.plan).toMatchObject({ id: plan.id, status: "running", progress: 0 });
      (await work.held(plan.id, "understand")).succeed();
    });

    it("counts the goal in code points after trimming: 8 to 2000", async () => {
      for (const goal of ["", "   seven  ", "1234567", " \n\t 1234567 \t", "x".repeat(2001), "🙂".repeat(2001)]) {
        const answer = await api.create(key(owner), { goal });
        expect(answer, `goal of ${[...goal.trim()].length} code points`).toMatchObject({ status: 400, errorType: "invalid_request" });
      }
      const padded = expectCreated(await api.create(key(owner), { goal: "   12345678 \n" }));
      expect(padded.goal).toBe("12345678");
      // 2000 emoji are 4000 UTF-16 units but 2000 code points.
      expectCreated(await api.create(key(owner), { goal: "🙂".repeat(2000) }));
      expectCreated(await api.create(key(owner), { goal: "é".repeat(8) }));
    });

    it("falls back to website for an unrecognised outcome", async () => {
      const plan = expectCreated(await api.create(key(owner), { goal: "A portfolio for a painter", outcome: "pdf" }));
      expect(plan.outcome).toBe("website");
      expect(plan.stages.map((s) => s.id)).toEqual(WEBSITE_STAGES);
    });

    it("refuses an outcome that cannot run here with 503 naming outcomes, never a credential", async () => {
      const answer = await api.create(key(owner), { goal: "A cookbook of family recipes", outcome: "ebook" });
      expect(answer).toMatchObject({ status: 503, errorType: "outcome_unavailable", unavailable: ["ebook"] });
      expect(answer.errorMessage).not.toMatch(/upstream|key|credential|token/i);

      const none = await createAccountWithKey(noWriterApp, ["build", "read"]);
      const website = await make(noWriterApp.url).create(key(none), { goal: "A site for my bakery" });
      expect(website).toMatchObject({ status: 503, errorType: "outcome_unavailable", unavailable: ["website", "ebook"] });
      expect((await make(noWriterApp.url).list(key(none))).plans).toEqual([]);
    });

    it("answers 401 without credentials or with an unknown key, and 403 to a key without build", async () => {
      expect(await api.create(undefined, { goal: "A site for my bakery" })).toMatchObject({ status: 401, errorType: "unauthenticated" });
      const unknown = { apiKey: `zk_${"a".repeat(40)}` };
      expect(await api.create(unknown, { goal: "A site for my bakery" })).toMatchObject({ status: 401, errorType: "unauthenticated" });
      const reader = await createAccountWithKey(app, ["read"]);
      expect(await api.create(key(reader), { goal: "A site for my bakery" })).toMatchObject({ status: 403, errorType: "permission_denied" });
      expect((await api.list(key(reader))).plans).toEqual([]);
    });
  });

  describe("the generation limit", () => {
    it("answers 429 with Retry-After and RateLimit-* once the window's limit is reached; resumes are not counted", async () => {
      // The window is the clock's hour (the default): the creates below must fall in one.
      await wellInsideWindow(3600);
      const limited = make(limitedApp.url);
      const [user, neighbour] = await Promise.all([createAccountWithKey(limitedApp, ["build", "read"]), createAccountWithKey(limitedApp, ["build", "read"])]);
      const first = await limited.create(key(user), { goal: "First site of the window" });
      expectCreated(first);
      expect([first.headers.get("ratelimit-limit"), first.headers.get("ratelimit-remaining")]).toEqual(["2", "1"]);
      const second = await limited.create(key(user), { goal: "Second site of the window" });
      expect(second.headers.get("ratelimit-remaining")).toBe("0");
      const third = await limited.create(key(user), { goal: "Third site of the window" });
      expect(third).toMatchObject({ status: 429, errorType: "rate_limited" });
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(third.headers.get("ratelimit-limit")).toBe("2");
      expect(third.headers.get("ratelimit-remaining")).toBe("0");
      expect(Number(third.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
      expect((await limited.list(key(user))).plans).toHaveLength(2);

      const resumed = await limited.resume(key(user), { planId: first.plan!.id, approve: ["review"] });
      expect(resumed.status).toBe(202);
      expect(resumed.headers.get("ratelimit-remaining")).toBe("0");
      expect((await limited.create(key(user), { goal: "Still refused after a resume" })).status).toBe(429);
      // Per account: another account has its own window.
      expectCreated(await limited.create(key(neighbour), { goal: "The neighbour's site" }));
    });
  });

  describe("reading (GET /api/execution, GetExecution, ListExecutions)", () => {
    it("lists the caller's ten most recent plans, newest first", async () => {
      const lister = await createAccountWithKey(app, ["build", "read"]);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(expectCreated(await api.create(key(lister), { goal: `Plan number ${i} hold@understand` })).id);
      const answer = await api.list(key(lister));
      expect(answer.status).toBe(200);
      expect(answer.plans!.map((p) => p.id)).toEqual([...ids].reverse().slice(0, 10));
      expect(answer.plans![0]!.stages).toHaveLength(6);
      for (const id of ids) (await work.held(id, "understand")).succeed();
    });

    it("reads one plan; another account's plan is indistinguishable from a missing one", async () => {
      const plan = expectCreated(await api.create(key(owner), { goal: "A site for a running club" }));
      const mine = await api.get(key(owner), plan.id);
      expect(mine).toMatchObject({ status: 200, plan: { id: plan.id } });
      expect(mine.plan).toHaveProperty("status");
      expect(mine.plan).toHaveProperty("progress");
      expect(mine.plan).toHaveProperty("stages");

      const theirs = await api.get(key(stranger), plan.id);
      const missing = await api.get(key(stranger), "pln_doesnotexist0000000");
      expect(theirs).toMatchObject({ status: 404, errorType: "not_found" });
      expect([theirs.errorType, theirs.errorMessage]).toEqual([missing.errorType, missing.errorMessage]);
      expect(await api.get(undefined, plan.id)).toMatchObject({ status: 401 });

      const resumeTheirs = await api.resume(key(stranger), { planId: plan.id, approve: ["review"] });
      const resumeMissing = await api.resume(key(stranger), { planId: "pln_doesnotexist0000000" });
      expect(resumeTheirs).toMatchObject({ status: 404, errorType: "not_found" });
      expect([resumeTheirs.errorType, resumeTheirs.errorMessage]).toEqual([resumeMissing.errorType, resumeMissing.errorMessage]);
    });

    it("asks for the read scope to read", async () => {
      const builder = await createAccountWithKey(app, ["build"]);
      expect(await api.list(key(builder))).toMatchObject({ status: 403, errorType: "permission_denied" });
    });
  });

  describe("state transitions (SPEC.md)", () => {
    it("stops at the gate, stays there without approval, passes with it, and succeeds", async () => {
      const created = expectCreated(await api.create(key(owner), { goal: "A site for my bakery" }));
      const gated = await waitForPlan(app.url, key(owner), created.id, (p) => p.status !== "running");
      expect(gated).toMatchObject({ status: "awaiting_approval", resumable: true, progress: 66 });
      expect(gated.stages.map((s) => s.state)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded", "awaiting_approval", "pending"]);
      expect(gated.project).toEqual({ id: expect.any(String), name: "Test project", slug: "test-project" });
      expect(gated.previewUrl).toBe(`/preview/${created.id}/`);
      expect(gated.publishedUrl).toBeNull();

      const unapproved = await api.resume(key(owner), { planId: created.id, approve: [] });
      expect(unapproved).toMatchObject({ status: 202, plan: { status: "awaiting_approval", resumable: true } });
      const wrongIds = await api.resume(key(owner), { planId: created.id, approve: ["publish", "bogus"] });
      expect(wrongIds.plan!.status).toBe("awaiting_approval");

      const approved = await api.resume(key(owner), { planId: created.id, approve: ["bogus", "review"] });
      expect(approved.status).toBe(202);
      expect(approved.unavailable).toEqual(["ebook"]);
      expect(approved.plan!.stages[4]).toMatchObject({ id: "review", state: "succeeded" });
      expect(approved.plan!.stages[5]).toMatchObject({ id: "publish", state: "running", attempts: 1 });
      expect(approved.plan).toMatchObject({ status: "running", resumable: false });

      const done = await waitForPlan(app.url, key(owner), created.id, (p) => p.status !== "running");
      expect(done).toMatchObject({ status: "succeeded", progress: 100, resumable: false, publishedUrl: `/sites/${created.id}/`, warning: null });
      expect(done.stages.every((s) => s.state === "succeeded" && s.error === null)).toBe(true);

      const again = await api.resume(key(owner), { planId: created.id, approve: ["review"] });
      expect(again).toMatchObject({ status: 202, plan: { status: "succeeded", progress: 100 } });
      expect(work.runs(created.id, "publish")).toBe(1);
    });

    it("remembers a gate approved before it is reached, and passes it without stopping", async () => {
      const created = expectCreated(await api.create(key(owner), { goal: "A site for a choir hold@understand" }));
      const early = await api.resume(key(owner), { planId: created.id, approve: ["review", "nope"] });
      expect(early).toMatchObject({ status: 202, plan: { status: "running", progress: 0 } });
      expect(early.plan!.stages[0]).toMatchObject({ state: "running", attempts: 1 });
      (await work.held(created.id, "understand")).succeed();
      const done = await waitForPlan(app.url, key(owner), created.id, (p) => p.status !== "running");
      expect(done.status).toBe("succeeded");
      expect(done.stages[4]).toMatchObject({ id: "review", state: "succeeded", attempts: 1 });
    });

    it("fails the plan when a stage fails, resumable; a resume retries that stage with attempts + 1", async () => {
      const created = expectCreated(await api.create(key(owner), { goal: "A site for a bike shop fail@outline" }));
      const failed = await waitForPlan(app.url, key(owner), created.id, (p) => p.status !== "running");
      expect(failed).toMatchObject({ status: "failed", resumable: true, progress: 16 });
      expect(failed.stages[1]).toEqual({
        id: "outline",
        title: "Outline the site",
        state: "failed",
        attempts: 1,
        error: { type: "writer_error", message: "the writer could not finish the outline stage" },
        progress: 0,
      });
      expect(failed.stages[2]).toMatchObject({ state: "pending", attempts: 0 });

      const resumed = await api.resume(key(owner), { planId: created.id });
      expect(resumed.plan).toMatchObject({ status: "running", resumable: false });
      expect(resumed.plan!.stages[1]).toMatchObject({ state: "running", attempts: 2, error: null });
      const gated = await waitForPlan(app.url, key(owner), created.id, (p) => p.status !== "running");
      expect(gated.status).toBe("awaiting_approval");
      expect(gated.stages[1]).toMatchObject({ state: "succeeded", attempts: 2, error: null });
      expect(work.runs(created.id, "outline")).toBe(2);
      expect(work.runs(created.id, "understand")).toBe(1);
    });

    it("shows a generic error when stage work throws unexpectedly, never its internals", async () => {
      const created = expectCreated(await api.create(key(owner), { goal: "A site for a florist throw@write" }));
      const failed = await waitForPlan(app.url, key(owner), created.id, (p) => p.status !== "running");
      expect(failed).toMatchObject({ status: "failed", resumable: true });
      expect(failed.stages[2]!.error).toEqual({ type: "stage_failed", message: expect.any(String) });
      expect(JSON.stringify(failed)).not.toMatch(/hunter2|10\.0\.0\.7|password/);
      expect(app.logs.some((line) => line.includes(created.id) && line.includes("stage work threw"))).toBe(true);
    });

    it("returns a running plan as it is on resume", async () => {
      const created = expectCreated(await api.create(key(owner), { goal: "A site for a bakery hold@outline" }));
      const held = await work.held(created.id, "outline");
      const resumed = await api.resume(key(owner), { planId: created.id });
      expect(resumed).toMatchObject({ status: 202, plan: { status: "running", resumable: false } });
      expect(resumed.plan!.stages[1]).toMatchObject({ state: "running", attempts: 1 });
      held.succeed();
      expect(work.runs(created.id, "outline")).toBe(1);
    });

    it("counts succeeded stages in plan progress and shows a running stage's partial progress on the stage; reports a warning", async () => {
      const created = expectCreated(await api.create(key(owner), { goal: "A site for a baker half@outline warn" }));
      await waitForPlan(app.url, key(owner), created.id, (p) => (p.stages[1]?.progress ?? 0) > 0);
      const halfway = (await api.get(key(owner), created.id)).plan!;
      // SPEC: succeeded stages over all stages, floor(100 × 1 / 6); the half-written outline is not counted.
      expect(halfway).toMatchObject({ status: "running", progress: 16 });
      expect(halfway.stages.map((s) => [s.id, s.state, s.progress])).toEqual([
        ["understand", "succeeded", 100],
        ["outline", "running", 50],
        ["write", "pending", 0],
        ["build", "pending", 0],
        ["review", "pending", 0],
        ["publish", "pending", 0],
      ]);
      (await work.held(created.id, "outline")).succeed();
      const next = await waitForPlan(app.url, key(owner), created.id, (p) => p.stages[1]?.state === "succeeded");
      expect(next.progress).toBeGreaterThanOrEqual(33);
      expect(next.stages[1]!.progress).toBe(100);
      await waitForPlan(app.url, key(owner), created.id, (p) => p.status === "awaiting_approval");
      await api.resume(key(owner), { planId: created.id, approve: ["review"] });
      const done = await waitForPlan(app.url, key(owner), created.id, (p) => p.status === "succeeded");
      expect(done.warning).toBe("written by the offline writer");
    });

    it("interrupts the plan when a worker's lease expires; a resume runs the stage again with attempts + 1", async () => {
      const idle = make(idleApp.url);
      const user = await createAccountWithKey(idleApp, ["build", "read"]);
      const created = expectCreated(await idle.create(key(user), { goal: "A site for a lighthouse" }));
      // A worker of another instance claims the stage, then dies: nobody renews its lease.
      const [claim] = (await claimStages(idleApp.store.db, "ins_dead", 1, 300)).map((c) => c.claim);
      expect(claim).toMatchObject({ planId: created.id, stageId: "understand" });
      const interrupted = await waitForPlan(idleApp.url, key(user), created.id, (p) => p.status !== "running");
      expect(interrupted).toMatchObject({ status: "interrupted", resumable: true, progress: 0 });
      expect(interrupted.stages[0]).toMatchObject({ state: "failed", attempts: 1, error: { type: "interrupted" } });

      const resumed = await idle.resume(key(user), { planId: created.id });
      expect(resumed.plan).toMatchObject({ status: "running", resumable: false });
      expect(resumed.plan!.stages[0]).toEqual({ id: "understand", title: "Understand the goal", state: "running", attempts: 2, error: null, progress: 0 });
      const [again] = (await claimStages(idleApp.store.db, "ins_next", 1, 60_000)).map((c) => c.claim);
      expect(again).toMatchObject({ planId: created.id, stageId: "understand", attempts: 2 });
      expect(again!.leaseToken).toBeGreaterThan(claim!.leaseToken);
    });
  });
});
