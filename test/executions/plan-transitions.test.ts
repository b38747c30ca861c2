import { describe, expect, it } from "vitest";
import {
  cancelPlan,
  newPlanState,
  planProgress,
  resumePlan,
  revisePlan,
  stageFailed,
  stageInterrupted,
  stageProgress,
  stageProgressed,
  stageReleased,
  stageSucceeded,
  startsWork,
  transitionEvents,
  type PlanState,
} from "../../src/executions/plan-transitions.js";

function newPlan(outcome: "website" | "ebook" = "website"): PlanState {
  return newPlanState({ id: "pln_test", accountId: "acc_test", goal: "A site for my bakery", outcome, createdAt: new Date() });
}

const states = (plan: PlanState) => plan.stages.map((s) => `${s.id}:${s.state}:${s.attempts}`);

describe("plan transitions (SPEC.md)", () => {
  it("starts with the first stage running, attempts 1, the others pending", () => {
    expect(states(newPlan())).toEqual([
      "understand:running:1",
      "outline:pending:0",
      "write:pending:0",
      "build:pending:0",
      "review:pending:0",
      "publish:pending:0",
    ]);
    expect(newPlan("ebook").stages.map((s) => s.id)).toEqual(["understand", "outline", "write", "assemble", "review", "publish"]);
  });

  it("cancels: unfinished stages cancelled with their leases dropped, one plan event; succeeded and cancelled plans unchanged", () => {
    let plan = stageSucceeded(newPlan(), 0, {});
    plan = { ...plan, stages: plan.stages.map((s) => (s.position === 1 ? { ...s, leaseToken: 42 } : s)) };
    const cancelled = cancelPlan(plan);
    expect(cancelled).toMatchObject({ status: "cancelled", resumable: false });
    expect(states(cancelled)).toEqual([
      "understand:succeeded:1",
      "outline:cancelled:1",
      "write:cancelled:0",
      "build:cancelled:0",
      "review:cancelled:0",
      "publish:cancelled:0",
    ]);
    expect(cancelled.stages.every((s) => s.leaseToken === null)).toBe(true);
    expect(transitionEvents(plan, cancelled)).toEqual([{ type: "cancelled", stage: null, attempt: null, detail: { from: "running" } }]);
    expect(cancelPlan(cancelled)).toBe(cancelled);
    expect(resumePlan(cancelled, ["review"])).toBe(cancelled);
    const succeeded = { ...plan, status: "succeeded" as const };
    expect(cancelPlan(succeeded)).toBe(succeeded);
  });

  it("runs stage after stage to the gate, where it waits, resumable", () => {
    let plan = newPlan();
    plan = stageSucceeded(plan, 0, { output: { a: 1 }, project: { id: "prj_1", name: "Bakery", slug: "bakery" } });
    expect(plan).toMatchObject({ status: "running", progress: 16, project: { slug: "bakery" } });
    expect(plan.stages[1]).toMatchObject({ state: "running", attempts: 1 });
    plan = stageSucceeded(plan, 1, {});
    plan = stageSucceeded(plan, 2, {});
    plan = stageSucceeded(plan, 3, { previewUrl: "/preview/x/" });
    expect(plan).toMatchObject({ status: "awaiting_approval", resumable: true, progress: 66, previewUrl: "/preview/x/" });
    expect(plan.stages[4]).toMatchObject({ state: "awaiting_approval", attempts: 1 });
  });

  it("drops an approval that arrives while a revision is written: it was of the draft the revision replaces", () => {
    let plan = newPlan();
    for (let i = 0; i < 4; i++) plan = stageSucceeded(plan, i, {});
    const revising = revisePlan(plan, "warmer colours", new Date());
    expect(revising).toMatchObject({ status: "running", revisions: [{ number: 1 }] });
    expect(resumePlan(revising, ["review"])).toBe(revising);
  });

  it("passes the gate only when approved; unknown ids are dropped", () => {
    let plan = newPlan();
    for (let i = 0; i < 4; i++) plan = stageSucceeded(plan, i, {});
    expect(resumePlan(plan, [])).toBe(plan);
    const unknown = resumePlan(plan, ["publish", "nope"]);
    expect(unknown).toBe(plan);
    const approved = resumePlan(plan, ["nope", "review"]);
    expect(approved.approved).toEqual(["review"]);
    expect(approved).toMatchObject({ status: "running", resumable: false, progress: 83 });
    expect(states(approved).slice(4)).toEqual(["review:succeeded:1", "publish:running:1"]);
    expect(startsWork(plan, approved)).toBe(true);
    const done = stageSucceeded(approved, 5, { publishedUrl: "/sites/x/", warning: "offline" });
    expect(done).toMatchObject({ status: "succeeded", progress: 100, resumable: false, publishedUrl: "/sites/x/", warning: "offline" });
    expect(resumePlan(done, ["review"])).toBe(done);
  });

  it("remembers an approval given before the gate, and then does not stop there", () => {
    let plan = resumePlan(newPlan(), ["review", "bogus"]);
    expect(plan.approved).toEqual(["review"]);
    expect(plan.status).toBe("running");
    for (let i = 0; i < 4; i++) plan = stageSucceeded(plan, i, {});
    expect(plan.status).toBe("running");
    expect(states(plan).slice(4)).toEqual(["review:succeeded:1", "publish:running:1"]);
  });

  it("fails the plan on a failed stage; resume retries it with attempts + 1", () => {
    let plan = stageSucceeded(newPlan(), 0, {});
    plan = stageFailed(plan, 1, { type: "writer_error", message: "no" });
    expect(plan).toMatchObject({ status: "failed", resumable: true, progress: 16 });
    expect(plan.stages[1]).toMatchObject({ state: "failed", attempts: 1, error: { type: "writer_error" } });
    const resumed = resumePlan(plan, []);
    expect(resumed).toMatchObject({ status: "running", resumable: false });
    expect(resumed.stages[1]).toMatchObject({ state: "running", attempts: 2, error: null });
    expect(startsWork(plan, resumed)).toBe(true);
  });

  it("interrupts the plan when a lease expires; resume re-runs the stage", () => {
    const plan = stageInterrupted(newPlan(), 0);
    expect(plan).toMatchObject({ status: "interrupted", resumable: true });
    expect(plan.stages[0]).toMatchObject({ state: "failed", error: { type: "interrupted" } });
    expect(resumePlan(plan, []).stages[0]).toMatchObject({ state: "running", attempts: 2, error: null });
  });

  it("leaves a running plan as it is on resume, apart from remembering approvals", () => {
    const plan = newPlan();
    expect(resumePlan(plan, [])).toBe(plan);
    expect(startsWork(plan, resumePlan(plan, ["review"]))).toBe(false);
  });

  it("counts only succeeded stages in plan progress; the running stage's partial progress is its own", () => {
    const plan = stageProgressed(stageSucceeded(newPlan(), 0, {}), 1, 0.5);
    expect(plan.progress).toBe(16);
    expect(plan.stages.map(stageProgress)).toEqual([100, 50, 0, 0, 0, 0]);
    expect(stageProgressed(plan, 1, 7).stages[1]!.progress).toBe(1);
    expect(stageProgressed(plan, 1, Number.NaN).stages[1]!.progress).toBe(0);
    // A stage that says it is done is not done until it succeeded: 99, and the plan still counts 5 of 6.
    const nearlyDone = newPlan().stages.map((s, i) => ({ ...s, state: i < 5 ? ("succeeded" as const) : ("running" as const), progress: 1 }));
    expect(planProgress(nearlyDone)).toBe(83);
    expect(stageProgress(nearlyDone[5]!)).toBe(99);
    expect(planProgress(nearlyDone.map((s) => ({ ...s, state: "succeeded" as const })))).toBe(100);
    // floor(100 × succeeded / all), whatever the running stage reports.
    for (let done = 0; done < 6; done++) {
      const stages = newPlan().stages.map((s, i) => ({
        ...s,
        state: i < done ? ("succeeded" as const) : i === done ? ("running" as const) : ("pending" as const),
        progress: i === done ? 0.75 : 0,
      }));
      expect(planProgress(stages)).toBe(Math.floor((100 * done) / 6));
    }
    // A fraction read back from a `real` column is not exact: 0.7 is 70, not 69.
    expect(stageProgress({ state: "running", progress: Math.fround(0.7) })).toBe(70);
    // Only a running stage shows partial progress; a failed, waiting or cancelled one shows 0.
    for (const state of ["pending", "awaiting_approval", "failed", "cancelled"] as const) expect(stageProgress({ state, progress: 0.5 })).toBe(0);
  });

  it("hands a stage back without changing its attempts", () => {
    const claimed = { ...newPlan(), stages: newPlan().stages.map((s, i) => (i === 0 ? { ...s, leaseToken: 7 } : s)) };
    const released = stageReleased(claimed, 0);
    expect(released.stages[0]).toMatchObject({ state: "running", attempts: 1, leaseToken: null });
    expect(startsWork(claimed, released)).toBe(true);
  });
});
