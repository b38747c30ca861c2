import { CompiledQuery, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { transitionEvents, type PlanEvent, type PlanState } from "./plan-transitions.js";
import { type ClaimFor, type SaveResult, savedPlan, STAGE_ROW_SET, type StageRowWrite, stageRowWrites } from "./plan-repository.js";

/** A worker's change to its plan, written without a locked read: `before` is the plan as that worker last wrote or read it. */
export interface RunWrite {
  before: PlanState;
  after: PlanState;
  /** The stage whose live lease the worker holds. */
  position: number;
  claimFor?: ClaimFor;
}

/**
 * How a run write went: written; "moved" when the plan is no longer at
 * `before.version` or the lease is no longer live (nothing was written, and
 * the caller takes the locked path); "lost" when the plan was written but a
 * stage row no longer matched its token.
 */
export type RunWriteResult = SaveResult | "moved" | "lost";

/**
 * Writes the changes of many runs, of any plans, in one statement: the
 * group commit of stage results. Each plan is written only if it is still at
 * the version its worker last saw and that worker's lease is live; the
 * plans' rows are locked in id order, so two such statements never wait on
 * each other in a cycle. The statement's text never changes (every value
 * travels in an array parameter), so each connection prepares it once and
 * Postgres reuses its plan.
 */
export async function saveRunWrites(db: Kysely<Database>, writes: readonly RunWrite[]): Promise<RunWriteResult[]> {
  const plan = new PlanColumns();
  const stage = new StageColumns();
  const event = new EventColumns();
  const prepared = writes.map((write) => {
    const { before, after, position, claimFor } = write;
    const { rows, claimPosition, wake } = stageRowWrites(before, after, { fence: { position, live: true }, claimFor });
    plan.add(write);
    for (const row of rows) stage.add(after.id, row, claimFor);
    for (const e of transitionEvents(before, after)) event.add(after.id, e);
    return { rows: rows.length, claimPosition, wake };
  });
  const { rows } = await db.executeQuery<{ id: string; version: number; updated_at: Date; stage_rows: number; claimed_token: number | null }>(
    CompiledQuery.raw(RUN_WRITES_SQL, [...plan.parameters(), ...stage.parameters(), ...event.parameters()]),
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return writes.map(({ after }, i): RunWriteResult => {
    const row = byId.get(after.id);
    if (!row) return "moved";
    const { rows: stageRows, claimPosition, wake } = prepared[i]!;
    if (Number(row.stage_rows) !== stageRows) return "lost";
    return savedPlan(after, row, claimPosition, wake);
  });
}

class PlanColumns {
  readonly id: string[] = [];
  readonly version: number[] = [];
  readonly fencePosition: number[] = [];
  readonly fenceToken: (number | null)[] = [];
  readonly status: string[] = [];
  readonly progress: number[] = [];
  readonly resumable: boolean[] = [];
  readonly warning: (string | null)[] = [];
  readonly previewUrl: (string | null)[] = [];
  readonly publishedUrl: (string | null)[] = [];
  readonly project: (string | null)[] = [];
  readonly approved: string[] = [];
  /** Null: unchanged. */
  readonly revisions: (string | null)[] = [];

  add({ before, after, position }: RunWrite): void {
    this.id.push(after.id);
    this.version.push(before.version);
    this.fencePosition.push(position);
    this.fenceToken.push(before.stages[position]?.leaseToken ?? null);
    this.status.push(after.status);
    this.progress.push(after.progress);
    this.resumable.push(after.resumable);
    this.warning.push(after.warning);
    this.previewUrl.push(after.previewUrl);
    this.publishedUrl.push(after.publishedUrl);
    this.project.push(after.project === null ? null : JSON.stringify(after.project));
    this.approved.push(JSON.stringify(after.approved));
    this.revisions.push(after.revisions === before.revisions ? null : JSON.stringify(after.revisions));
  }

  parameters(): unknown[] {
    return [
      this.id,
      this.version,
      this.fencePosition,
      this.fenceToken,
      this.status,
      this.progress,
      this.resumable,
      this.warning,
      this.previewUrl,
      this.publishedUrl,
      this.project,
      this.approved,
      this.revisions,
    ];
  }
}

class StageColumns {
  readonly columns = {
    planId: [] as string[],
    position: [] as number[],
    state: [] as string[],
    attempts: [] as number[],
    errorType: [] as (string | null)[],
    errorMessage: [] as (string | null)[],
    output: [] as (string | null)[],
    progress: [] as number[],
    newToken: [] as (number | null)[],
    oldToken: [] as (number | null)[],
    ready: [] as boolean[],
    claim: [] as boolean[],
    waitMs: [] as number[],
    retries: [] as number[],
    claimOwner: [] as (string | null)[],
    claimSeconds: [] as number[],
  };

  add(planId: string, row: StageRowWrite, claimFor: ClaimFor | undefined): void {
    const c = this.columns;
    c.planId.push(planId);
    c.position.push(row.position);
    c.state.push(row.state);
    c.attempts.push(row.attempts);
    c.errorType.push(row.errorType);
    c.errorMessage.push(row.errorMessage);
    c.output.push(row.output);
    c.progress.push(row.progress);
    c.newToken.push(row.newToken);
    c.oldToken.push(row.oldToken);
    c.ready.push(row.ready);
    c.claim.push(row.claim);
    c.waitMs.push(row.waitMs);
    c.retries.push(row.retries);
    c.claimOwner.push(claimFor?.owner ?? null);
    c.claimSeconds.push((claimFor?.leaseMs ?? 0) / 1000);
  }

  parameters(): unknown[] {
    return Object.values(this.columns);
  }
}

class EventColumns {
  readonly planId: string[] = [];
  readonly type: string[] = [];
  readonly stage: (string | null)[] = [];
  readonly attempt: (number | null)[] = [];
  readonly detail: (string | null)[] = [];

  add(planId: string, event: PlanEvent): void {
    this.planId.push(planId);
    this.type.push(event.type);
    this.stage.push(event.stage);
    this.attempt.push(event.attempt);
    this.detail.push(event.detail === null ? null : JSON.stringify(event.detail));
  }

  parameters(): unknown[] {
    return [this.planId, this.type, this.stage, this.attempt, this.detail];
  }
}

// The fenced stage is the writer's own, so its lease must still be live; the
// other changed stages (the next one, made ready or claimed) match on their token.
// `plans.id = ANY($1)` repeats the join's condition for the planner: without
// it the generic plan hashed the whole plans table for a handful of rows
// (auto_explain in engine-peers: a 0.1 ms seq scan of a 0.57 ms statement at
// 1,000 plans); with it the plans are read through the primary key.
// The stage columns also in selectPlansWithStages, PlanRowWithStages, savePlan (plan-repository.ts) and claimStages.
const RUN_WRITES_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::smallint[], $4::bigint[], $5::text[], $6::real[], $7::boolean[],
    $8::text[], $9::text[], $10::text[], $11::jsonb[], $12::jsonb[], $13::jsonb[])
    AS i(id, version, fence_position, fence_token, status, progress, resumable, warning, preview_url, published_url, project, approved, revisions)
),
p AS (
  SELECT plans.id FROM plans JOIN input i ON plans.id = i.id AND plans.version = i.version
  WHERE plans.id = ANY($1::text[]) AND EXISTS (SELECT 1 FROM plan_stages f WHERE f.plan_id = i.id AND f.position = i.fence_position
    AND f.lease_token = i.fence_token AND f.lease_expires_at > now())
  ORDER BY plans.id
  FOR UPDATE OF plans
),
v AS (
  SELECT * FROM unnest($14::text[], $15::smallint[], $16::text[], $17::int[], $18::text[], $19::text[], $20::jsonb[], $21::real[],
    $22::bigint[], $23::bigint[], $24::boolean[], $25::boolean[], $26::int[], $27::int[], $28::text[], $29::float8[])
    AS v(plan_id, position, state, attempts, error_type, error_message, output, progress,
      new_token, old_token, ready, claim, wait_ms, retries, claim_owner, claim_seconds)
),
stages AS (
  UPDATE plan_stages AS s SET ${STAGE_ROW_SET}
  FROM v
  WHERE s.plan_id = v.plan_id AND s.position = v.position AND s.lease_token IS NOT DISTINCT FROM v.old_token
    AND v.plan_id IN (SELECT id FROM p)
  RETURNING s.plan_id, s.lease_token, v.claim
),
events AS (
  INSERT INTO plan_events (plan_id, type, stage, attempt, detail)
  SELECT e.plan_id, e.type, e.stage, e.attempt, e.detail::jsonb
  FROM unnest($30::text[], $31::text[], $32::text[], $33::int[], $34::text[]) WITH ORDINALITY AS e(plan_id, type, stage, attempt, detail, n)
  WHERE e.plan_id IN (SELECT id FROM p)
  ORDER BY e.n
),
updated AS (
  UPDATE plans SET
    status = i.status, progress = i.progress, resumable = i.resumable, warning = i.warning,
    preview_url = i.preview_url, published_url = i.published_url, project = i.project,
    approved = ARRAY(SELECT jsonb_array_elements_text(i.approved)),
    revisions = COALESCE(i.revisions, plans.revisions),
    version = plans.version + 1, updated_at = now()
  FROM input i
  WHERE plans.id = i.id AND plans.id IN (SELECT id FROM p)
  RETURNING plans.id, plans.version, plans.updated_at
)
SELECT u.id, u.version, u.updated_at,
  (SELECT count(*) FROM stages s WHERE s.plan_id = u.id)::int AS stage_rows,
  (SELECT s.lease_token FROM stages s WHERE s.plan_id = u.id AND s.claim) AS claimed_token
FROM updated u`;
