import type { JsonValue } from "@bufbuild/protobuf";
import { sql, type Kysely, type Transaction } from "kysely";
import { jsonArrayFrom } from "kysely/helpers/postgres";
import type { Database } from "../db/schema.js";
import type { PlanRow, PlanStageRow } from "../db/tables/executions.table.js";
import { isOutcomeId, DEFAULT_OUTCOME } from "../api/outcomes.js";
import {
  creationEvents,
  transitionEvents,
  type PlanEvent,
  type PlanRevision,
  type PlanState,
  type PlanStatus,
  type StageRecord,
  type StageState,
} from "./plan-transitions.js";
import { resetSeconds, windowStart, type GenerationWindow } from "./generation-limit.js";

/** NOTIFY channel: a plan changed; the payload is its id. Watchers listen. */
export const PLAN_CHANGED_CHANNEL = "zero_plan_changed";
/** NOTIFY channel: a stage is waiting for a worker. Engines listen. */
export const STAGE_READY_CHANNEL = "zero_stage_ready";
/** NOTIFY channel: a run's lease was taken away (its plan was cancelled); the payload is the fencing token. Engines listen. */
export const STAGE_REVOKED_CHANNEL = "zero_stage_revoked";

type Executor = Kysely<Database> | Transaction<Database>;

/** Raised inside a write whose fencing token no longer matches: the transaction must roll back. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

/** Plans with their stages in position order, in one query (the stages as a JSON array). */
function selectPlansWithStages(db: Executor) {
  return db
    .selectFrom("plans as p")
    .selectAll("p")
    .select((eb) =>
      jsonArrayFrom(
        eb
          .selectFrom("plan_stages as s")
          .select([
            // The stage columns; also in PlanRowWithStages, savePlan, claimStages (stage-queue.ts) and RUN_WRITES_SQL (run-writes.ts).
            "s.position",
            "s.stage_id",
            "s.title",
            "s.state",
            "s.attempts",
            "s.error_type",
            "s.error_message",
            "s.output",
            "s.progress",
            "s.lease_token",
            "s.retries",
          ])
          .whereRef("s.plan_id", "=", "p.id")
          .orderBy("s.position"),
      ).as("stages"),
    );
}

/**
 * Reads a plan with its stages in one query. With `accountId`, a plan of
 * another account is not found, exactly like a missing one. With `forUpdate`
 * (inside a transaction) the plan row stays locked until commit: every write
 * to a plan or its stages takes this lock first, so they never interleave
 * and never deadlock.
 */
export async function loadPlan(db: Executor, id: string, options: { accountId?: string; forUpdate?: boolean } = {}): Promise<PlanState | undefined> {
  // The lock is taken in a statement of its own, and the plan read in the next. A statement that waits
  // for a row lock re-reads, once it has it, only the locked row: a subquery of the same statement (the
  // stages) still sees the snapshot from before the wait, without what the holder committed meanwhile,
  // and a cancel read that way left the stages a revision had just started running.
  if (options.forUpdate && !(await lockPlan(db, id, options.accountId))) return undefined;
  let query = selectPlansWithStages(db).where("p.id", "=", id);
  if (options.accountId !== undefined) query = query.where("p.account_id", "=", options.accountId);
  const row = await query.executeTakeFirst();
  return row ? toPlanState(row) : undefined;
}

/** Locks the plan's row until the transaction ends; false when there is no such plan (of that account). */
async function lockPlan(db: Executor, id: string, accountId: string | undefined): Promise<boolean> {
  let query = db.selectFrom("plans").select("id").where("id", "=", id);
  if (accountId !== undefined) query = query.where("account_id", "=", accountId);
  return (await query.forUpdate().executeTakeFirst()) !== undefined;
}

/** The account's most recent plans, newest first. */
export async function listRecentPlans(db: Executor, accountId: string, limit: number, beforeId?: string): Promise<PlanState[]> {
  let query = selectPlansWithStages(db).where("p.account_id", "=", accountId);
  // Older than the cursor plan, in the list's (created_at, id) order; compared in SQL, as a
  // JavaScript Date would drop the microseconds Postgres keeps and skip plans of the same millisecond.
  if (beforeId !== undefined) query = query.where(sql<boolean>`(p.created_at, p.id) < (select c.created_at, c.id from plans c where c.id = ${beforeId})`);
  const rows = await query.orderBy("p.created_at", "desc").orderBy("p.id", "desc").limit(limit).execute();
  return rows.map(toPlanState);
}

export interface WriteFence {
  /** The stage whose lease the writer holds. */
  position: number;
  /** Its lease must not have expired (a worker writing its result); the reaper writes expired ones. */
  live: boolean;
}

/** Who claims a stage that a write makes ready. */
export interface ClaimFor {
  owner: string;
  leaseMs: number;
}

export interface SaveOptions {
  fence?: WriteFence;
  /**
   * A worker finishing a stage: if this write makes the next stage ready, the
   * worker claims it in the same statement instead of queueing it, saving
   * the queue round trip (and the NOTIFY) for a plan it is already working on.
   */
  claimFor?: ClaimFor;
}

export interface SaveResult {
  plan: PlanState;
  /** A stage became ready for any worker: the caller notifies engines once committed (see Notifier). */
  wake: boolean;
  /** The stage claimed for `claimFor`, with its new fencing token. */
  claimed?: { position: number; leaseToken: number };
}

/** One changed stage as a write presents it: its new values, the token it expects to replace, and what it does to the queue. */
export interface StageRowWrite {
  position: number;
  state: StageState;
  attempts: number;
  errorType: string | null;
  errorMessage: string | null;
  /** JSON text. */
  output: string | null;
  progress: number;
  newToken: number | null;
  oldToken: number | null;
  /** Queued for any worker (ready_at = now + waitMs). */
  ready: boolean;
  /** Claimed for `claimFor` in the same write. */
  claim: boolean;
  fenced: "live" | "expired" | null;
  waitMs: number;
  retries: number;
}

/** The stage rows a change from `before` to `after` writes, which stage it claims for `claimFor`, and whether engines must be woken. */
export function stageRowWrites(
  before: PlanState,
  after: PlanState,
  options: SaveOptions,
): { rows: StageRowWrite[]; claimPosition: number | undefined; wake: boolean } {
  const { fence, claimFor } = options;
  let claimPosition: number | undefined;
  let wake = false;
  const rows: StageRowWrite[] = [];
  for (const stage of after.stages) {
    const old = before.stages[stage.position];
    if (old === undefined || sameStage(old, stage)) continue;
    const ready = stage.state === "running" && stage.leaseToken === null && isNewRun(old, stage);
    // A retry waits out its backoff: nobody claims it now, and the engines' polling finds it when it is due.
    const waitMs = ready && stage.retry ? stage.retry.waitMs : 0;
    const claim = ready && waitMs === 0 && claimFor !== undefined && claimPosition === undefined;
    if (claim) claimPosition = stage.position;
    wake ||= ready && !claim && waitMs === 0;
    rows.push({
      position: stage.position,
      state: stage.state,
      attempts: stage.attempts,
      errorType: stage.error?.type ?? null,
      errorMessage: stage.error?.message ?? null,
      output: stage.output === null ? null : JSON.stringify(stage.output),
      progress: stage.progress,
      newToken: stage.leaseToken,
      oldToken: old.leaseToken,
      ready: ready && !claim,
      claim,
      fenced: fence?.position === stage.position ? (fence.live ? "live" : "expired") : null,
      waitMs,
      retries: stage.retries ?? 0,
    });
  }
  return { rows, claimPosition, wake };
}

/** The plan as a write left it: `after` with the database's version and time, and the claimed stage's new token. */
export function savedPlan(
  after: PlanState,
  row: { version: number | string; updated_at: Date | string; claimed_token: number | string | null },
  claimPosition: number | undefined,
  wake: boolean,
): SaveResult {
  const claimed = claimPosition !== undefined && row.claimed_token !== null ? { position: claimPosition, leaseToken: Number(row.claimed_token) } : undefined;
  const stages = after.stages.map(({ retry: _written, ...s }) => (s.position === claimed?.position ? { ...s, leaseToken: claimed.leaseToken } : s));
  return { plan: { ...after, stages, version: Number(row.version), updatedAt: new Date(row.updated_at) }, claimed, wake };
}

/**
 * How a changed stage row is written, from its row `v` of the statement's
 * input (`claim_owner` and `claim_seconds` for a stage claimed in the same
 * write): one text for both writers of stages, savePlan and RUN_WRITES_SQL
 * (run-writes.ts), which fence their writes each its own way.
 */
export const STAGE_ROW_SET = `
  state = v.state, attempts = v.attempts, error_type = v.error_type, error_message = v.error_message,
  output = v.output, progress = v.progress, retries = v.retries,
  lease_token = CASE WHEN v.claim THEN nextval('plan_stage_lease_tokens') ELSE v.new_token END,
  lease_owner = CASE WHEN v.claim THEN v.claim_owner WHEN v.new_token IS NULL THEN NULL ELSE s.lease_owner END,
  lease_expires_at = CASE WHEN v.claim THEN now() + make_interval(secs => v.claim_seconds)
    WHEN v.new_token IS NULL THEN NULL ELSE s.lease_expires_at END,
  ready_at = CASE WHEN v.ready THEN now() + make_interval(secs => v.wait_ms / 1000.0) ELSE s.ready_at END,
  updated_at = now()`;

/**
 * Writes what changed between `before` (loaded with `forUpdate` in this
 * transaction) and `after` in one statement: the changed stages and the plan
 * with its version bumped. The caller announces the change once committed
 * (Notifier): to watchers, and to engines when `wake` says a stage became
 * ready. Each stage write presents the lease token
 * it was loaded with (and, with a fence, the state of its lease); when one no
 * longer matches this throws LeaseLostError, and the caller's transaction
 * rolls back, so nothing is written. (A worker writing without a locked read
 * uses `saveRunWrites`, which checks the plan's version instead.)
 */
export async function savePlan(trx: Transaction<Database>, before: PlanState, after: PlanState, options: SaveOptions = {}): Promise<SaveResult> {
  const { claimFor } = options;
  const { rows, claimPosition, wake } = stageRowWrites(before, after, options);
  // The columns also in selectPlansWithStages, PlanRowWithStages, claimStages and RUN_WRITES_SQL (run-writes.ts).
  const claimOwner = claimFor?.owner ?? null;
  const claimSeconds = (claimFor?.leaseMs ?? 0) / 1000;
  const values = rows.map(
    (r) => sql`(${r.position}::smallint, ${r.state}::text, ${r.attempts}::int, ${r.errorType}::text,
      ${r.errorMessage}::text, ${r.output}::jsonb, ${r.progress}::real,
      ${r.newToken}::bigint, ${r.oldToken}::bigint, ${r.ready}::boolean, ${r.claim}::boolean, ${r.fenced}::text, ${r.waitMs}::int, ${r.retries}::int,
      ${claimOwner}::text, ${claimSeconds}::float8)`,
  );
  const stagesCte =
    values.length === 0
      ? sql`stages AS (SELECT NULL::smallint AS position, NULL::bigint AS lease_token, false AS claim WHERE false)`
      : sql`v (position, state, attempts, error_type, error_message, output, progress, new_token, old_token, ready, claim, fenced, wait_ms, retries,
          claim_owner, claim_seconds) AS (
        VALUES ${sql.join(values)}
      ),
      stages AS (
        UPDATE plan_stages AS s SET ${sql.raw(STAGE_ROW_SET)}
        FROM v
        WHERE s.plan_id = ${after.id} AND s.position = v.position AND s.lease_token IS NOT DISTINCT FROM v.old_token
          AND (v.fenced IS NULL OR (v.fenced = 'live' AND s.lease_expires_at > now()) OR (v.fenced = 'expired' AND s.lease_expires_at <= now()))
        RETURNING s.position, s.lease_token, v.claim
      )`;

  const events = transitionEvents(before, after);
  const eventsCte = events.length === 0 ? sql`` : sql`, events AS (${insertEvents(after.id, events)})`;

  const { rows: result } = await sql<{ version: number; updated_at: Date; stage_rows: number; claimed_token: number | null }>`
    WITH ${stagesCte} ${eventsCte}
    UPDATE plans SET
      status = ${after.status}, progress = ${after.progress}, resumable = ${after.resumable}, warning = ${after.warning},
      preview_url = ${after.previewUrl}, published_url = ${after.publishedUrl},
      project = ${after.project === null ? null : JSON.stringify(after.project)}::jsonb, approved = ${[...after.approved]}::text[],
      ${after.revisions === before.revisions ? sql`` : sql`revisions = ${JSON.stringify(after.revisions)}::jsonb,`}
      version = version + 1, updated_at = now()
    WHERE id = ${after.id}
    RETURNING version, updated_at,
      (SELECT count(*) FROM stages)::int AS stage_rows,
      (SELECT lease_token FROM stages WHERE claim) AS claimed_token
  `.execute(trx);
  const row = result[0];
  if (!row || Number(row.stage_rows) !== rows.length) throw new LeaseLostError(`a stage of ${after.id} is no longer held`);
  return savedPlan(after, row, claimPosition, wake);
}

/**
 * The INSERT of a plan's history entries, kept in their order; part of the
 * statement that writes the change they record, so both land or neither.
 */
function insertEvents(planId: string, events: readonly PlanEvent[]) {
  return sql`INSERT INTO plan_events (plan_id, type, stage, attempt, detail)
    SELECT ${planId}::text, e.type, e.stage, e.attempt, e.detail::jsonb
    FROM unnest(
      ${events.map((e) => e.type)}::text[], ${events.map((e) => e.stage)}::text[], ${events.map((e) => e.attempt)}::int[],
      ${events.map((e) => (e.detail === null ? null : JSON.stringify(e.detail)))}::text[]
    ) WITH ORDINALITY AS e(type, stage, attempt, detail, n)
    ORDER BY e.n`;
}

function isNewRun(old: StageRecord, stage: StageRecord): boolean {
  return old.state !== "running" || old.attempts !== stage.attempts || old.leaseToken !== null;
}

export interface NewPlan {
  id: string;
  accountId: string;
  goal: string;
  outcome: string;
  stages: readonly StageRecord[];
  /**
   * The `Idempotency-Key` the create came with, claimed (in flight) by this
   * request: the statement that writes the plan records it as the key's
   * result, so no failure after it can leave the key to make a second plan.
   */
  idempotencyKey?: string;
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
 * Counts one generation per plan for its account in the current window and,
 * only if that stays within the limit, inserts the plan and its stages — in
 * one statement, so one atomic step on every instance, and one round trip.
 * The window is fixed and aligned on the database clock. The plans may be of
 * one account or many: each account's plans, in the order given, take what
 * is left of its limit, and the rest are refused, exactly as if each had come
 * alone. Results come in the order of `plans`. The counters are locked in
 * account order, so two of these statements running at once cannot deadlock.
 */
export async function insertPlansWithinLimit(db: Executor, plans: readonly NewPlan[], window: GenerationWindow): Promise<InsertResult[]> {
  const stages = plans.flatMap((p) => p.stages.map((stage) => ({ planId: p.id, ...stage })));
  const events = plans.flatMap((p) => creationEvents({ stages: p.stages }).map((event) => ({ planId: p.id, ...event })));
  const keyed = plans.filter((p) => p.idempotencyKey !== undefined);
  // `wanted`: how many each account asks for. The counter row grants
  // min(wanted, what is left); `granted` keeps that beside the new count
  // (an upsert's RETURNING sees only the new row; SET sees the old one).
  // A plan is inserted when its rank among its account's plans is within it.
  const { rows } = await sql<{ id: string; count: number | null; granted: number | null; rank: number; created_at: Date | null; reset_seconds: number }>`
    WITH win AS (SELECT ${windowStart(window)} AS start),
    input AS (
      SELECT i.*, row_number() OVER (PARTITION BY i.account_id ORDER BY i.n)::int AS rank FROM unnest(
        ${plans.map((p) => p.id)}::text[], ${plans.map((p) => p.accountId)}::text[],
        ${plans.map((p) => p.goal)}::text[], ${plans.map((p) => p.outcome)}::text[]
      ) WITH ORDINALITY AS i(id, account_id, goal, outcome, n)
    ),
    wanted AS (
      SELECT account_id, least(count(*), ${window.limit}::int)::int AS k FROM input GROUP BY account_id
    ),
    counter AS (
      INSERT INTO generation_counts AS c (account_id, window_start, count, granted)
      SELECT wanted.account_id, win.start, wanted.k, wanted.k FROM wanted, win WHERE ${window.limit}::int > 0 ORDER BY wanted.account_id
      ON CONFLICT (account_id, window_start) DO UPDATE
        SET count = least(c.count + excluded.count, ${window.limit}::int),
            granted = least(c.count + excluded.count, ${window.limit}::int) - c.count
        WHERE c.count < ${window.limit}::int
      RETURNING account_id, count, granted
    ),
    plan AS (
      INSERT INTO plans (id, account_id, goal, outcome, status, progress, resumable)
      SELECT input.id, input.account_id, input.goal, input.outcome, 'running', 0, false
      FROM input JOIN counter USING (account_id) WHERE input.rank <= counter.granted
      ORDER BY input.n
      RETURNING id, created_at
    ),
    stages AS (
      INSERT INTO plan_stages (plan_id, position, stage_id, title, state, attempts, ready_at)
      SELECT s.plan_id, s.position, s.stage_id, s.title, s.state, s.attempts, CASE WHEN s.state = 'running' THEN now() END
      FROM unnest(
        ${stages.map((s) => s.planId)}::text[], ${stages.map((s) => s.position)}::smallint[], ${stages.map((s) => s.id)}::text[],
        ${stages.map((s) => s.title)}::text[], ${stages.map((s) => s.state)}::text[], ${stages.map((s) => s.attempts)}::int[]
      ) AS s(plan_id, position, stage_id, title, state, attempts)
      JOIN plan ON plan.id = s.plan_id
    ),
    events AS (
      INSERT INTO plan_events (plan_id, type, stage, attempt, detail)
      SELECT e.plan_id, e.type, e.stage, e.attempt, NULL
      FROM unnest(
        ${events.map((e) => e.planId)}::text[], ${events.map((e) => e.type)}::text[], ${events.map((e) => e.stage)}::text[],
        ${events.map((e) => e.attempt)}::int[]
      ) WITH ORDINALITY AS e(plan_id, type, stage, attempt, n)
      JOIN plan ON plan.id = e.plan_id
      ORDER BY e.n
    ),
    keys AS (
      UPDATE chat_idempotency_keys AS k SET state = 'done', response = plan.id
      FROM unnest(${keyed.map((p) => p.id)}::text[], ${keyed.map((p) => p.idempotencyKey)}::text[]) AS ik(plan_id, key)
      JOIN plan ON plan.id = ik.plan_id JOIN input ON input.id = ik.plan_id
      WHERE k.account_id = input.account_id AND k.key = ik.key AND k.state = 'in_flight'
    )
    SELECT
      input.id,
      input.rank,
      counter.count,
      counter.granted,
      plan.created_at,
      ${resetSeconds(window, sql`win.start`)} AS reset_seconds
    FROM input CROSS JOIN win LEFT JOIN counter USING (account_id) LEFT JOIN plan USING (id)
  `.execute(db);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return plans.map((plan) => {
    const row = byId.get(plan.id)!;
    const inserted = row.created_at !== null;
    return {
      createdAt: inserted ? new Date(row.created_at!) : undefined,
      // As if alone: the count this plan's own create brought the counter to.
      used: inserted ? row.count! - row.granted! + Number(row.rank) : window.limit,
      resetSeconds: Math.max(0, Number(row.reset_seconds)),
    };
  });
}

/** A plans row with its stages as JSON, as `selectPlansWithStages` and the `json_agg` of claimStages return them. */
export type PlanRowWithStages = PlanRow & {
  // The stage columns; also in selectPlansWithStages, savePlan, claimStages (stage-queue.ts) and RUN_WRITES_SQL (run-writes.ts).
  stages: (Pick<
    PlanStageRow,
    "position" | "stage_id" | "title" | "state" | "attempts" | "error_type" | "error_message" | "progress" | "lease_token" | "retries"
  > & {
    output: unknown;
  })[];
};

export function toPlanState(row: PlanRowWithStages): PlanState {
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
    revisions: Array.isArray(row.revisions) ? (row.revisions as PlanRevision[]) : [],
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
      retries: Number(s.retries ?? 0),
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
    a.leaseToken === b.leaseToken &&
    (a.retries ?? 0) === (b.retries ?? 0)
  );
}

/** True when `id` is one of the account's plans, so a page of the list can start after it. */
export async function isOwnPlan(db: Executor, accountId: string, id: string): Promise<boolean> {
  const row = await db.selectFrom("plans").select("id").where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
  return row !== undefined;
}

/**
 * What a plan shows of its artifacts, undefined once it is deleted: the
 * names of the previews it has built (its first draft's, `planId`, once its
 * `previewUrl` is set, and each revision's whose `previewUrl` is, each set
 * in the fenced write of the stage that built it) and, once `publish`
 * succeeded, its site or book. A stage's files written after it lost its
 * lease are in none.
 */
export async function shownArtifacts(db: Executor, planId: string): Promise<{ previews: string[]; published: boolean } | undefined> {
  const row = await db.selectFrom("plans").select(["preview_url", "published_url", "revisions"]).where("id", "=", planId).executeTakeFirst();
  if (!row) return undefined;
  const previews = row.preview_url === null ? [] : [planId];
  for (const revision of Array.isArray(row.revisions) ? (row.revisions as { previewUrl?: unknown }[]) : []) {
    if (typeof revision.previewUrl === "string") previews.push(decodeURIComponent(new URL(revision.previewUrl).pathname.split("/").at(-2) ?? ""));
  }
  return { previews, published: row.published_url !== null };
}

/** A plan's history, oldest first; undefined when the plan is missing or another account's. */
export async function loadPlanHistory(
  db: Executor,
  planId: string,
  accountId: string,
): Promise<{ at: Date; type: string; stage: string | null; attempt: number | null; detail: unknown }[] | undefined> {
  const plan = await db.selectFrom("plans").select("id").where("id", "=", planId).where("account_id", "=", accountId).executeTakeFirst();
  if (!plan) return undefined;
  const rows = await db.selectFrom("plan_events").select(["at", "type", "stage", "attempt", "detail"]).where("plan_id", "=", planId).orderBy("id").execute();
  return rows.map((row) => ({ ...row, at: new Date(row.at) }));
}

/** Removes a plan; its stages and history go with it (ON DELETE CASCADE). Call with the plan locked. */
export async function deletePlan(trx: Transaction<Database>, planId: string): Promise<void> {
  await trx.deleteFrom("plans").where("id", "=", planId).execute();
}
