import type { JsonValue } from "@bufbuild/protobuf";

/** The newest revision of a plan: what the person asked to change in the draft before it. */
export interface StageRevision {
  /** 1 for the first revision. */
  number: number;
  feedback: string;
  /**
   * The feedback of the revisions before this one, oldest first. The draft
   * being revised already carries their changes, and this one keeps them.
   */
  earlier?: readonly string[];
  /** The outline of the draft being revised, as its stage stored it. */
  draft: JsonValue | null;
}

/** What the engine hands a stage function when it runs one stage of a plan. */
export interface StageInput {
  planId: string;
  accountId: string;
  outcome: string;
  goal: string;
  stageId: string;
  attempt: number;
  /** Outputs of the stages of this plan that already succeeded, by stage id. */
  previous: Readonly<Record<string, JsonValue>>;
  /** Set once a revision was asked for: later drafts, their preview and what is published follow it. */
  revision?: StageRevision;
  /** Aborted when the lease is lost or the instance shuts down: stop and throw. */
  signal: AbortSignal;
  /** Partial progress of this stage, 0..1 (e.g. chapters written); shown as the stage's `progress`. */
  progress(fraction: number): Promise<void>;
}

/** What a stage function returns when its stage succeeded. */
export interface StageOutcome {
  /** Stored with the stage and handed to later stages in `previous`. */
  output?: JsonValue;
  project?: { id: string; name: string; slug: string };
  previewUrl?: string;
  publishedUrl?: string;
  warning?: string;
}

/** The work of one stage. */
export type StageWork = (input: StageInput) => Promise<StageOutcome>;
/**
 * Picks the work for a stage; only stages the store queues are asked for (a
 * plan's approval gate is held by the plan state machine and never queued).
 * Work for an outcome it does not know fails the stage with a StageFailure.
 */
export type StageWorkResolver = (outcome: string, stageId: string) => StageWork;
/** Thrown by stage work to fail the stage with a clear `{type, message}` shown on the plan. */
export class StageFailure extends Error {
  /** How long the failed service asked to be left alone (an upstream's Retry-After); a retry waits at least this, up to a minute. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly type: string,
    message: string,
    options: { retryAfterMs?: number } = {},
  ) {
    super(message);
    this.name = "StageFailure";
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** What a failed stage shows on its plan. */
export interface StageErrorInfo {
  type: string;
  message: string;
}

/** The error a stage shows when its work threw something other than a StageFailure. */
export const GENERIC_STAGE_ERROR: StageErrorInfo = {
  type: "stage_failed",
  message: "the stage failed unexpectedly; resume the plan to try again",
};
