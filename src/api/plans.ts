/** Where a plan stands. */
export const PLAN_STATUSES = ["running", "awaiting_approval", "interrupted", "failed", "succeeded", "cancelled"] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];

/** Where one stage of a plan stands; `cancelled`: it had not finished when its plan was cancelled. */
export const STAGE_STATES = ["pending", "running", "awaiting_approval", "succeeded", "failed", "cancelled"] as const;
export type StageState = (typeof STAGE_STATES)[number];

/** Statuses a plan stays in until someone acts: a watch ends, a follower stops waiting. */
export const RESTING_STATUSES: ReadonlySet<PlanStatus> = new Set(["awaiting_approval", "interrupted", "failed", "succeeded", "cancelled"]);

/** True when a plan with this status does nothing until someone acts. */
export function isResting(status: string): boolean {
  return (RESTING_STATUSES as ReadonlySet<string>).has(status);
}

/**
 * The draft a plan shows now, as an approve's or a revision's `revision`
 * names it: its newest revision's number, 0 for the first draft.
 */
export function newestDraft(plan: { revisions: readonly { number: number }[] }): number {
  return plan.revisions.at(-1)?.number ?? 0;
}

/** What a plan's history records, one type per kind of change (`GET /api/execution/history`). */
export const PLAN_EVENT_TYPES = [
  "created",
  "stage_started",
  "stage_succeeded",
  "stage_failed",
  "stage_retrying",
  "stage_interrupted",
  "awaiting_approval",
  "approved",
  "revision_requested",
  "resumed",
  "cancelled",
] as const;
export type PlanEventType = (typeof PLAN_EVENT_TYPES)[number];
