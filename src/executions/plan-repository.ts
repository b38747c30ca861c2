import type { JsonValue } from "@bufbuild/protobuf";
import { sql, type Kysely, type Transaction } from "kysely";
import { jsonArrayFrom } from "kysely/helpers/postgres";
import type { Database } from "../db/schema.js";
import { isOutcomeId, DEFAULT_OUTCOME } from "../outcomes/catalog.js";
import type { PlanState, PlanStatus, StageRecord, StageState } from "../engine/plan-transitions.js";

/** NOTIFY channel: a plan changed; the payload is its id. Watchers listen. */
export const PLAN_CHANGED_CHANNEL = "zero_plan_changed";
/** NOTIFY channel: a stage is waiting for a worker. Engines listen. */
export const STAGE_READY_CHANNEL = "zero_stage_ready";

type Executor = Kysely<Database> | Transaction<Database>;

/** Raised inside a write whose fencing token no longer matches: the transaction must roll back. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

/**
 * Reads a plan with its stages in one query. With `accountId`, a plan of
 * another account is not found, exactly like a missing one. With `forUpdate`
 * (inside a transaction) the plan row stays locked until commit: every write
 * to a plan or its stages takes this lock first, so they never interleave
 * and never deadlock.
 */
export async function loadPlan(
  db: Executor,
  id: string,
  options: { accountId?: string; forUpdate?: boolean } = {},
): Promise<PlanState | undefined> {
  let query = db
    .selectFrom("plans as p")
    .selectAll("p")
    .select((eb) =>
      jsonArrayFrom(
        eb
          .selectFrom("plan_stages as s")
          .select(["s.position", "s.stage_id", "s.title", "s.state", "s.attempts", "s.error_type", "s.error_message", "s.output", "s.progress", "s.lease_token"])
          .whereRef("s.plan_id", "=", "p.id")
          .orderBy("s.position"),
      ).as("stages"),
    )
    .where("p.id", "=", id);
  if (options.accountId !== undefined) query = query.where("p.account_id", "=", options.accountId);
  if (options.forUpdate) query = query.forUpdate("p");
  const row = await query.executeTakeFirst();
  return row ? toPlanState(row) : undefined;
}

/** The account's most recent plans, newest first. */
export async function listRecentPlans(db: Executor, accountId: string, limit: number): Promise<PlanState[]> {
  const rows = await db
    .selectFrom("plans as p")
    .selectAll("p")
    .select((eb) =>
      jsonArrayFrom(
        eb
          .selectFrom("plan_stages as s")
          .select(["s.position", "s.stage_id", "s.title", "s.state", "s.attempts", "s.error_type", "s.error_message", "s.output", "s.progress", "s.lease_token"])
          .whereRef("s.plan_id", "=", "p.id")
          .orderBy("s.position"),
      ).as("stages"),
    )
    .where("p.account_id", "=", accountId)
    .orderBy("p.created_at", "desc")
    .orderBy("p.id", "desc")
    .limit(limit)
    .execute();
  return rows.map(toPlanState);
}

/** The current version of a plan, for watchers deciding whether to read it again. */
export async function planVersion(db: Executor, id: string): Promise<number | undefined> {
  const row = await db.selectFrom("plans").select("version").where("id", "=", id).executeTakeFirst();
  return row?.version;
}

export interface WriteFence {
  /** The stage whose lease the writer holds. */
  position: number;
  /** Its lease must not have expired (a worker writing its result); the reaper writes expired ones. */
  live: boolean;
}

/**
 * Writes what changed between `before` (loaded with `forUpdate` in this
 * transaction) and `after`, bumps the plan's version and notifies watchers,
 * and engines when a stage became ready to run. Each stage write presents the
 * lease token it was loaded with; when it no longer matches (or, with a live
 * fence, the lease expired) this throws LeaseLostError and nothing is written.
 */
export async function savePlan(trx: Transaction<Database>, before: PlanState, after: PlanState, fence?: WriteFence): Promise<PlanState> {
  let wakeEngines = false;
  for (const stage of after.stages) {
    const old = before.stages[stage.position];
    if (!old || sameStage(old, stage)) continue;
    const becameReady = stage.state === "running" && stage.leaseToken === null && (old.state !== "running" || old.attempts !== stage.attempts || old.leaseToken !== null);
    wakeEngines ||= becameReady;
    let update = trx
      .updateTable("plan_stages")
      .set({
        state: stage.state,
        attempts: stage.attempts,
        error_type: stage.error?.type ?? null,
        error_message: stage.error?.message ?? null,
        output: stage.output === null ? null : JSON.stringify(stage.output),
        progress: stage.progress,
        lease_token: stage.leaseToken,
        updated_at: sql<Date>`now()`,
        ...(stage.leaseToken === null ? { lease_owner: null, lease_expires_at: null } : {}),
        ...(becameReady ? { ready_at: sql<Date>`now()` } : {}),
      })
      .where("plan_id", "=", after.id)
      .where("position", "=", stage.position)
      .where("lease_token", "is not distinct from", old.leaseToken);
    if (fence?.position === stage.position) {
      update = update.where("lease_expires_at", fence.live ? ">" : "<=", sql<Date>`now()`);
    }
    const result = await update.executeTakeFirst();
    if (result.numUpdatedRows !== 1n) throw new LeaseLostError(`stage ${stage.id} of ${after.id} is no longer held`);
  }

  const row = await trx
    .updateTable("plans")
    .set({
      status: after.status,
      progress: after.progress,
      resumable: after.resumable,
      warning: after.warning,
      preview_url: after.previewUrl,
      published_url: after.publishedUrl,
      project: after.project === null ? null : JSON.stringify(after.project),
      approved: [...after.approved],
      version: sql<number>`version + 1`,
      updated_at: sql<Date>`now()`,
    })
    .where("id", "=", after.id)
    .returning(["version", "updated_at"])
    .returning(sql<string>`pg_notify(${PLAN_CHANGED_CHANNEL}, id)::text`.as("notified"))
    .$if(wakeEngines, (qb) => qb.returning(sql<string>`pg_notify(${STAGE_READY_CHANNEL}, '')::text`.as("woke")))
    .executeTakeFirstOrThrow();
  return { ...after, version: row.version, updatedAt: row.updated_at };
}

export interface NewPlan {
  id: string;
  accountId: string;
  goal: string;
  outcome: string;
  stages: readonly StageRecord[];
}

export interface GenerationWindow {
  limit: number;
  windowSeconds: number;
}

export interface InsertResult {
  /** Undefined when the account's limit for the window is reached (nothing was written). */
  createdAt: Date | undefined;
  /** Creations counted in the current window, this one included. */
  used: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/**
 * Counts one generation for the account in the current window and, only if
 * that stays within the limit, inserts the plan and its stages — in one
 * statement, so one atomic step on every instance, and one round trip. The
 * window is fixed and aligned on the database clock.
 */
export async function insertPlanWithinLimit(db: Executor, plan: NewPlan, window: GenerationWindow): Promise<InsertResult> {
  const stages = plan.stages;
  const { rows } = await sql<{ count: number | null; created_at: Date | null; reset_seconds: number; notified: string | null }>`
    WITH win AS (
      SELECT to_timestamp(floor(extract(epoch FROM now()) / ${window.windowSeconds}) * ${window.windowSeconds}) AS start
    ),
    counter AS (
      INSERT INTO generation_counts (account_id, window_start, count)
      SELECT ${plan.accountId}, win.start, 1 FROM win WHERE ${window.limit}::int > 0
      ON CONFLICT (account_id, window_start) DO UPDATE SET count = generation_counts.count + 1
        WHERE generation_counts.count < ${window.limit}::int
      RETURNING count
    ),
    plan AS (
      INSERT INTO plans (id, account_id, goal, outcome, status, progress, resumable)
      SELECT ${plan.id}, ${plan.accountId}, ${plan.goal}, ${plan.outcome}, 'running', 0, false FROM counter
      RETURNING created_at
    ),
    stages AS (
      INSERT INTO plan_stages (plan_id, position, stage_id, title, state, attempts, ready_at)
      SELECT ${plan.id}, s.position, s.stage_id, s.title, s.state, s.attempts, CASE WHEN s.state = 'running' THEN now() END
      FROM plan, unnest(
        ${stages.map((s) => s.position)}::smallint[], ${stages.map((s) => s.id)}::text[], ${stages.map((s) => s.title)}::text[],
        ${stages.map((s) => s.state)}::text[], ${stages.map((s) => s.attempts)}::int[]
      ) AS s(position, stage_id, title, state, attempts)
    )
    SELECT
      (SELECT count FROM counter) AS count,
      (SELECT created_at FROM plan) AS created_at,
      extract(epoch FROM win.start + make_interval(secs => ${window.windowSeconds}) - now())::float8 AS reset_seconds,
      (SELECT pg_notify(${STAGE_READY_CHANNEL}, '')::text FROM plan) AS notified
    FROM win
  `.execute(db);
  const row = rows[0]!;
  const createdAt = row.created_at === null ? undefined : new Date(row.created_at);
  return {
    createdAt,
    used: row.count ?? window.limit,
    resetSeconds: Math.max(0, Number(row.reset_seconds)),
  };
}

interface PlanRowWithStages {
  id: string;
  account_id: string;
  goal: string;
  outcome: string;
  status: string;
  progress: number;
  resumable: boolean;
  warning: string | null;
  preview_url: string | null;
  published_url: string | null;
  project: { id: string; name: string; slug: string } | null;
  approved: string[];
  version: number;
  created_at: Date;
  updated_at: Date;
  stages: {
    position: number;
    stage_id: string;
    title: string;
    state: string;
    attempts: number;
    error_type: string | null;
    error_message: string | null;
    output: unknown;
    progress: number;
    lease_token: number | null;
  }[];
}

function toPlanState(row: PlanRowWithStages): PlanState {
  return {
    id: row.id,
    accountId: row.account_id,
    goal: row.goal,
    outcome: isOutcomeId(row.outcome) ? row.outcome : DEFAULT_OUTCOME,
    status: row.status as PlanStatus,
    progress: row.progress,
    resumable: row.resumable,
    warning: row.warning,
    previewUrl: row.preview_url,
    publishedUrl: row.published_url,
    project: row.project,
    approved: row.approved,
    version: row.version,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    stages: row.stages.map((s) => ({
      position: Number(s.position),
      id: s.stage_id,
      title: s.title,
      state: s.state as StageState,
      attempts: Number(s.attempts),
      error: s.error_type === null ? null : { type: s.error_type, message: s.error_message ?? "" },
      output: (s.output ?? null) as JsonValue | null,
      progress: Number(s.progress),
      // Through json_agg a bigint arrives as a JSON number; tokens stay far below 2^53.
      leaseToken: s.lease_token === null ? null : Number(s.lease_token),
    })),
  };
}

function sameStage(a: StageRecord, b: StageRecord): boolean {
  return (
    a.state === b.state &&
    a.attempts === b.attempts &&
    a.error?.type === b.error?.type &&
    a.error?.message === b.error?.message &&
    a.output === b.output &&
    a.progress === b.progress &&
    a.leaseToken === b.leaseToken
  );
}
