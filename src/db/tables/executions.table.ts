import type { ColumnType, Generated, Selectable } from "kysely";
import type { OutcomeId } from "../../api/outcomes.js";
import type { PlanEventType, PlanStatus, StageState } from "../../api/plans.js";

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: written as a JSON string, read back parsed. */
type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;

/** One execution: a goal, its outcome and where it stands. Stages live in `plan_stages`. */
export interface PlanTable {
  /** `pln_…` */
  id: string;
  account_id: string;
  goal: string;
  outcome: OutcomeId;
  status: PlanStatus;
  /** 0–100. */
  progress: number;
  resumable: boolean;
  warning: string | null;
  preview_url: string | null;
  published_url: string | null;
  /** `{id, name, slug}` once the `understand` stage has named it. */
  project: NullableJson<{ id: string; name: string; slug: string }>;
  /** Gate ids approved so far, including those approved before the gate was reached. */
  approved: ColumnType<string[], string[] | undefined, string[]>;
  /** The revisions asked for at the gate, oldest first (`PlanRevision`); `[]` for a plan never revised. */
  revisions: ColumnType<unknown, string | undefined, string>;
  /** Bumped on every change; watchers compare it to know whether to send again. */
  version: Generated<number>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

/**
 * One stage of a plan, and the engine's work queue: a stage with state
 * `running` and no lease is waiting for a worker; a leased one is being run by
 * the worker holding `lease_token` until `lease_expires_at`.
 */
export interface PlanStageTable {
  plan_id: string;
  /** 0-based order within the plan. */
  position: number;
  stage_id: string;
  title: string;
  state: StageState;
  attempts: number;
  error_type: string | null;
  error_message: string | null;
  /** What the stage work returned, handed to later stages. */
  output: NullableJson<unknown>;
  /** Partial progress of a running stage, 0..1. */
  progress: ColumnType<number, number | undefined, number>;
  /** Since when a running stage waits for a worker: the claim order; in the future while a retry waits out its backoff. */
  ready_at: NullableTimestamp;
  /** Retries in place after transient errors since the stage's run began. */
  retries: ColumnType<number, number | undefined, number>;
  /** The instance holding the lease (diagnostics only; the token is what fences). */
  lease_owner: string | null;
  /** Fencing token of the current claim, from `plan_stage_lease_tokens`; a write must present it. */
  lease_token: number | null;
  lease_expires_at: NullableTimestamp;
  updated_at: UpdatedAt;
}

/** New executions per account in fixed windows, shared by every instance. */
export interface GenerationCountTable {
  account_id: string;
  window_start: ColumnType<Date, Date | string, never>;
  count: number;
  /** What the last statement that wrote this row added to `count`. */
  granted: ColumnType<number, number | undefined, number>;
}

/** One entry of a plan's history, written in the same statement as the change it records. */
export interface PlanEventTable {
  id: Generated<string>;
  plan_id: string;
  at: CreatedAt;
  type: PlanEventType;
  stage: string | null;
  attempt: number | null;
  detail: NullableJson<unknown>;
}

/**
 * A deleted plan whose files are still to be swept (`DeletedPlanSweeper`): the delete removes them at once, and
 * whichever instance comes first sweeps again at `sweep_at`, once a stage still writing them has stopped.
 */
export interface DeletedPlanTable {
  plan_id: string;
  /** The slug the plan showed, for its published site. */
  slug: string | null;
  /** How many revisions it had: each has a preview of its own. */
  revisions: number;
  deleted_at: CreatedAt;
  /** Sweeps done since the delete's own. */
  sweeps: ColumnType<number, number | undefined, number>;
  sweep_at: ColumnType<Date, Date | string, Date | string>;
}

export type PlanRow = Selectable<PlanTable>;
export type PlanStageRow = Selectable<PlanStageTable>;

export interface ExecutionTables {
  plans: PlanTable;
  plan_stages: PlanStageTable;
  generation_counts: GenerationCountTable;
  plan_events: PlanEventTable;
  deleted_plans: DeletedPlanTable;
}
