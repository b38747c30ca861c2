import type { JsonValue } from "@bufbuild/protobuf";
import { APPROVAL_STAGE, OUTCOME_STAGES, type OutcomeId } from "../api/outcomes.js";
import type { StageErrorInfo, StageOutcome } from "../engine/stage-work.js";

import type { PlanEventType, PlanStatus, StageState } from "../api/plans.js";

export type { PlanStatus, StageState };

/** A plan as the state machine sees it. */
export interface PlanState {
  id: string;
  accountId: string;
  goal: string;
  outcome: OutcomeId;
  status: PlanStatus;
  progress: number;
  resumable: boolean;
  warning: string | null;
  previewUrl: string | null;
  publishedUrl: string | null;
  project: { id: string; name: string; slug: string } | null;
  approved: readonly string[];
  /** The revisions asked for at the gate, oldest first. */
  revisions: readonly PlanRevision[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
  stages: readonly StageRecord[];
}

/** A new draft asked for at the gate (`revisions` on the plan). */
export interface PlanRevision {
  number: number;
  feedback: string;
  /** ISO 8601. */
  createdAt: string;
  /** This revision's own preview, once built. */
  previewUrl: string | null;
  /** The outline of the draft it revises, handed to the writer with the feedback; never shown. */
  draft: JsonValue | null;
}

export interface StageRecord {
  position: number;
  id: string;
  title: string;
  state: StageState;
  attempts: number;
  error: StageErrorInfo | null;
  output: JsonValue | null;
  /** Partial progress while running, 0..1. */
  progress: number;
  /** The fencing token of the worker running it; null when nobody holds it. */
  leaseToken: number | null;
  /** Retries in place after transient errors since this run of the stage began; absent: 0. */
  retries?: number;
  /**
   * Set only by the transition that schedules a retry, for the write that
   * records it: the stage is claimable again `waitMs` after that write, and
   * the history says why. Never read back from the database.
   */
  retry?: { error: StageErrorInfo; waitMs: number };
}

/** The error a stage shows when its worker vanished mid-run. */
export const INTERRUPTED_ERROR: StageErrorInfo = {
  type: "interrupted",
  message: "the stage stopped because the worker running it went away; resume the plan to run it again",
};

/** The stages of a new plan: the first running with attempts 1, the rest pending. */
export function initialStages(outcome: OutcomeId): StageRecord[] {
  return OUTCOME_STAGES[outcome].map((definition, position) => ({
    position,
    id: definition.id,
    title: definition.title,
    state: position === 0 ? "running" : "pending",
    attempts: position === 0 ? 1 : 0,
    error: null,
    output: null,
    progress: 0,
    leaseToken: null,
  }));
}

/** A plan as it is created: running, nothing done yet, its first stage running. */
export function newPlanState(init: { id: string; accountId: string; goal: string; outcome: OutcomeId; createdAt: Date }): PlanState {
  return {
    id: init.id,
    accountId: init.accountId,
    goal: init.goal,
    outcome: init.outcome,
    status: "running",
    progress: 0,
    resumable: false,
    warning: null,
    previewUrl: null,
    publishedUrl: null,
    project: null,
    approved: [],
    revisions: [],
    version: 0,
    createdAt: init.createdAt,
    updatedAt: init.createdAt,
    stages: initialStages(init.outcome),
  };
}

/**
 * Percentage of the stages that succeeded, floor(100 × succeeded / all), as
 * the contract defines it: movement inside the running stage is shown by
 * `stageProgress`, never here, so 100 means every stage succeeded.
 */
export function planProgress(stages: readonly StageRecord[]): number {
  if (stages.length === 0) return 0;
  const done = stages.filter((stage) => stage.state === "succeeded").length;
  return Math.floor((100 * done) / stages.length);
}

/**
 * A stage's own completion as a percentage: 100 once succeeded, the partial
 * progress while running (at most 99, so 100 means done), 0 otherwise.
 * Rounded, not floored: the fraction is stored as a `real`, so 0.7 reads back
 * as 0.6999999881.
 */
export function stageProgress(stage: Pick<StageRecord, "state" | "progress">): number {
  if (stage.state === "succeeded") return 100;
  if (stage.state !== "running") return 0;
  return Math.min(99, Math.round(100 * Math.min(1, Math.max(0, stage.progress))));
}

/** True once a plan is over for good, succeeded or cancelled: nothing moves it any more. */
export function isOver(plan: Pick<PlanState, "status">): boolean {
  return plan.status === "succeeded" || plan.status === "cancelled";
}

/**
 * A run still holding a stage of a plan that is over. A cancel stops every
 * stage that had not succeeded, so there should be none; should one be left
 * all the same, nothing its run reports is kept (SPEC "Cancel"): the stage
 * is stopped as the cancel would have stopped it, its lease dropped, and
 * the plan stays as it is.
 */
export function strayRunStopped(plan: PlanState, position: number): PlanState {
  return settle({ ...plan, stages: replaceStage(plan.stages, position, { state: "cancelled", progress: 0, leaseToken: null }) });
}

/** The stage a worker ran returned: record it and move on to the next stage. */
export function stageSucceeded(plan: PlanState, position: number, outcome: StageOutcome): PlanState {
  const stages = replaceStage(plan.stages, position, {
    state: "succeeded",
    error: null,
    output: outcome.output ?? null,
    progress: 1,
    leaseToken: null,
  });
  const newest = plan.revisions.at(-1);
  const revisions =
    outcome.previewUrl && newest && newest.previewUrl === null
      ? [...plan.revisions.slice(0, -1), { ...newest, previewUrl: outcome.previewUrl }]
      : plan.revisions;
  return advance(
    {
      ...plan,
      revisions,
      project: outcome.project ? { id: outcome.project.id, name: outcome.project.name, slug: outcome.project.slug } : plan.project,
      previewUrl: outcome.previewUrl ?? plan.previewUrl,
      publishedUrl: outcome.publishedUrl ?? plan.publishedUrl,
      warning: outcome.warning ?? plan.warning,
      stages,
    },
    position,
  );
}

/** The stage's work failed: the plan stops, resumable, showing why. */
export function stageFailed(plan: PlanState, position: number, error: StageErrorInfo): PlanState {
  return settle({
    ...plan,
    status: "failed",
    resumable: true,
    stages: replaceStage(plan.stages, position, { state: "failed", error, progress: 0, leaseToken: null }),
  });
}

/**
 * The stage's work failed with a transient error and has tries left: it runs
 * again in place, attempts + 1, once the wait has passed. The plan keeps
 * running; a cancel meanwhile stops it like any waiting stage.
 */
export function stageRetrying(plan: PlanState, position: number, error: StageErrorInfo, waitMs: number): PlanState {
  const stage = plan.stages[position];
  if (!stage) return plan;
  const retry = { error: { type: error.type, message: error.message }, waitMs: Math.max(0, Math.floor(waitMs)) };
  return settle({
    ...plan,
    status: "running",
    resumable: false,
    stages: replaceStage(plan.stages, position, { ...startRun(stage), retries: (stage.retries ?? 0) + 1, retry }),
  });
}

/** The stage's worker died (its lease expired): the plan stops as interrupted, resumable. */
export function stageInterrupted(plan: PlanState, position: number): PlanState {
  return settle({
    ...plan,
    status: "interrupted",
    resumable: true,
    stages: replaceStage(plan.stages, position, { state: "failed", error: INTERRUPTED_ERROR, progress: 0, leaseToken: null }),
  });
}

/** Partial progress reported by a running stage. */
export function stageProgressed(plan: PlanState, position: number, fraction: number): PlanState {
  const progress = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
  return settle({ ...plan, stages: replaceStage(plan.stages, position, { progress }) });
}

/** A running stage handed back by a worker that is shutting down: waiting for the next worker. */
export function stageReleased(plan: PlanState, position: number): PlanState {
  return { ...plan, stages: replaceStage(plan.stages, position, { leaseToken: null }) };
}

/**
 * A resume with the given approvals. Known gate ids are remembered (also
 * before the gate is reached), unknown ones dropped. A plan at the gate passes
 * it when the gate is approved; a failed or interrupted plan runs its failed
 * stage again with attempts + 1; a running or succeeded plan is unchanged
 * (a running one only remembers the approvals, unless it is writing a revision).
 */
export function resumePlan(plan: PlanState, approve: readonly string[]): PlanState {
  if (isOver(plan)) return plan;
  // An approval that arrives while a revision is written was of the draft it replaces: dropped, so a
  // revise racing an approve ends as one of the two, never as a revision published unseen.
  if (plan.status === "running" && plan.revisions.length > 0) return plan;
  const gates = new Set(plan.stages.filter((s) => s.id === APPROVAL_STAGE).map((s) => s.id));
  const approved = [...new Set([...plan.approved, ...approve.filter((id) => gates.has(id))])];
  const next: PlanState = approved.length === plan.approved.length ? plan : { ...plan, approved };

  if (plan.status === "awaiting_approval") {
    const gate = plan.stages.find((s) => s.state === "awaiting_approval");
    if (!gate || !approved.includes(gate.id)) return next;
    return advance({ ...next, stages: replaceStage(next.stages, gate.position, { state: "succeeded", error: null, progress: 1 }) }, gate.position);
  }
  if (plan.status === "failed" || plan.status === "interrupted") {
    const failed = plan.stages.find((s) => s.state === "failed");
    if (!failed) return next;
    return settle({ ...next, status: "running", resumable: false, stages: replaceStage(next.stages, failed.position, startRun(failed)) });
  }
  return next;
}

/**
 * A cancel: the plan stops for good (not resumable) and every stage that had
 * not succeeded is `cancelled`, its lease dropped, so the worker running one
 * is fenced out: its next write or heartbeat finds the token gone. A
 * succeeded or already cancelled plan is unchanged; the caller tells them apart.
 */
export function cancelPlan(plan: PlanState): PlanState {
  if (isOver(plan)) return plan;
  const stages = plan.stages.map((stage) => (stage.state === "succeeded" ? stage : { ...stage, state: "cancelled" as const, progress: 0, leaseToken: null }));
  return settle({ ...plan, status: "cancelled", resumable: false, stages });
}

/** The first stage a revision writes again: the one after `understand`. */
const FIRST_DRAFT_POSITION = 1;

/**
 * A revision asked for at the gate: the stages after `understand` up to the
 * gate run again (the first now, attempts + 1; the others when reached), the
 * gate waits once more, and the revision is listed with the outline of the
 * draft it revises. Unchanged unless the plan waits at the gate.
 */
export function revisePlan(plan: PlanState, feedback: string, at: Date): PlanState {
  const gate = plan.stages.find((s) => s.state === "awaiting_approval");
  if (plan.status !== "awaiting_approval" || !gate || gate.position <= FIRST_DRAFT_POSITION) return plan;
  const outline = plan.stages[FIRST_DRAFT_POSITION]!;
  const revision: PlanRevision = {
    number: plan.revisions.length + 1,
    feedback,
    createdAt: at.toISOString(),
    previewUrl: null,
    draft: outline.output,
  };
  const stages = plan.stages.map((stage) => {
    if (stage.position === FIRST_DRAFT_POSITION) return { ...stage, ...startRun(stage) };
    if (stage.position > FIRST_DRAFT_POSITION && stage.position <= gate.position) return { ...stage, state: "pending" as const, error: null, progress: 0 };
    return stage;
  });
  return settle({ ...plan, status: "running", resumable: false, revisions: [...plan.revisions, revision], stages });
}

/** True when `after` asks a worker to run a stage that was not waiting before. */
export function startsWork(before: PlanState, after: PlanState): boolean {
  return after.stages.some((stage, i) => stage.state === "running" && stage.leaseToken === null && !sameRun(before.stages[i], stage));
}

function sameRun(before: StageRecord | undefined, after: StageRecord): boolean {
  return before !== undefined && before.state === after.state && before.attempts === after.attempts && before.leaseToken === after.leaseToken;
}

/**
 * Moves past `position`: the next stage runs, or waits at the gate (unless
 * the gate was approved beforehand), or the plan has succeeded.
 */
function advance(plan: PlanState, position: number): PlanState {
  const next = plan.stages[position + 1];
  if (!next) return settle({ ...plan, status: "succeeded", resumable: false });
  if (next.id === APPROVAL_STAGE) {
    if (plan.approved.includes(next.id)) {
      const stages = replaceStage(plan.stages, next.position, { state: "succeeded", attempts: next.attempts + 1, error: null, progress: 1 });
      return advance({ ...plan, stages }, next.position);
    }
    const stages = replaceStage(plan.stages, next.position, { state: "awaiting_approval", attempts: next.attempts + 1, error: null });
    return settle({ ...plan, status: "awaiting_approval", resumable: true, stages });
  }
  return settle({ ...plan, status: "running", resumable: false, stages: replaceStage(plan.stages, next.position, startRun(next)) });
}

function startRun(stage: StageRecord): Partial<StageRecord> {
  return { state: "running", attempts: stage.attempts + 1, error: null, progress: 0, leaseToken: null, retries: 0 };
}

function settle(plan: PlanState): PlanState {
  return { ...plan, progress: planProgress(plan.stages) };
}

function replaceStage(stages: readonly StageRecord[], position: number, patch: Partial<StageRecord>): StageRecord[] {
  return stages.map((stage) => (stage.position === position ? { ...stage, ...patch } : stage));
}

/** One history entry a transition records; the time is the database's, at the write. */
export interface PlanEvent {
  type: PlanEventType;
  stage: string | null;
  attempt: number | null;
  detail: JsonValue | null;
}

/** The history entries of a new plan: created, and its first stage started. */
export function creationEvents(plan: Pick<PlanState, "stages">): PlanEvent[] {
  return [{ type: "created", stage: null, attempt: null, detail: null }, ...stageEvents(plan, undefined)];
}

/** The history entries for the change from `before` to `after`, in the order they happened. */
export function transitionEvents(before: PlanState, after: PlanState): PlanEvent[] {
  const events: PlanEvent[] = [];
  if ((before.status === "failed" || before.status === "interrupted") && after.status === "running") {
    events.push({ type: "resumed", stage: null, attempt: null, detail: null });
  }
  // A cancel is one event for the whole plan, not one per stage it stopped.
  if (after.status === "cancelled") {
    if (before.status !== "cancelled") events.push({ type: "cancelled", stage: null, attempt: null, detail: { from: before.status } });
    return events;
  }
  const revision = after.revisions.length > before.revisions.length ? after.revisions.at(-1) : undefined;
  if (revision) events.push({ type: "revision_requested", stage: null, attempt: null, detail: { feedback: revision.feedback } });
  events.push(...stageEvents(after, before));
  return events;
}

function stageEvents(after: Pick<PlanState, "stages">, before: PlanState | undefined): PlanEvent[] {
  const events: PlanEvent[] = [];
  for (const stage of after.stages) {
    const old = before?.stages[stage.position];
    if (old && old.state === stage.state && old.attempts === stage.attempts) continue;
    const at = { stage: stage.id, attempt: stage.attempts };
    switch (stage.state) {
      case "running":
        // A retry is recorded against the attempt that failed; the next attempt starts when its wait is over.
        if (stage.retry)
          events.push({
            type: "stage_retrying",
            stage: stage.id,
            attempt: stage.attempts - 1,
            detail: { error: { type: stage.retry.error.type, message: stage.retry.error.message }, waitMs: stage.retry.waitMs },
          });
        else events.push({ type: "stage_started", ...at, detail: null });
        break;
      case "succeeded":
        if (old?.state === "awaiting_approval" || (stage.id === APPROVAL_STAGE && old?.state === "pending")) {
          events.push({ type: "approved", ...at, detail: null });
        } else events.push({ type: "stage_succeeded", ...at, detail: null });
        break;
      case "failed": {
        const error = stage.error ? { type: stage.error.type, message: stage.error.message } : null;
        const type = stage.error?.type === INTERRUPTED_ERROR.type ? "stage_interrupted" : "stage_failed";
        events.push({ type, ...at, detail: error === null ? null : { error } });
        break;
      }
      case "awaiting_approval":
        events.push({ type: "awaiting_approval", ...at, detail: null });
        break;
      case "pending":
      case "cancelled":
        break;
    }
  }
  return events;
}
