import type { OutcomeId } from "../../api/outcomes.js";
import type { PlanEventType, PlanStatus, StageState } from "../../api/plans.js";

/** Every status, state and outcome has its words here: adding one to the contract fails the type check until it does. */
const STATUS_LABELS: Readonly<Record<PlanStatus, string>> = {
  running: "Running",
  awaiting_approval: "Waiting for approval",
  interrupted: "Interrupted",
  failed: "Failed",
  succeeded: "Succeeded",
  cancelled: "Cancelled",
};

/** How a plan stands, to end a sentence ("… and was cancelled"). */
const STATUS_IN_WORDS: Readonly<Record<PlanStatus, string>> = {
  running: "is running",
  awaiting_approval: "is waiting for approval",
  interrupted: "was interrupted",
  failed: "has failed",
  succeeded: "has succeeded",
  cancelled: "was cancelled",
};

const STATE_LABELS: Readonly<Record<StageState, string>> = {
  pending: "pending",
  running: "running",
  awaiting_approval: "waiting for approval",
  succeeded: "done",
  failed: "failed",
  cancelled: "cancelled",
};

const EVENT_LABELS: Readonly<Record<PlanEventType, string>> = {
  created: "Created",
  stage_started: "Started",
  stage_succeeded: "Done",
  stage_failed: "Failed",
  stage_retrying: "Retrying",
  stage_interrupted: "Interrupted",
  awaiting_approval: "Waiting for approval",
  approved: "Approved",
  revision_requested: "Changes asked for",
  resumed: "Resumed",
  cancelled: "Cancelled",
};

const OUTCOME_LABELS: Readonly<Record<OutcomeId, string>> = { website: "Website", ebook: "Ebook" };

/** A newer server may send values this Console does not know: those show as sent. */
function lookup(labels: Readonly<Record<string, string>>, value: string): string {
  return Object.hasOwn(labels, value) ? labels[value]! : value;
}

export const statusLabel = (status: string): string => lookup(STATUS_LABELS, status);
export const statusInWords = (status: string): string => (Object.hasOwn(STATUS_IN_WORDS, status) ? STATUS_IN_WORDS[status as PlanStatus] : `is ${status}`);
export const stageStateLabel = (state: string): string => lookup(STATE_LABELS, state);
export const outcomeLabel = (outcome: string): string => lookup(OUTCOME_LABELS, outcome);
export const eventLabel = (type: string): string => lookup(EVENT_LABELS, type);
