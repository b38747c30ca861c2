import type { JsonValue } from "@bufbuild/protobuf";
import { sql, type Kysely } from "kysely";
import { OUTCOME_IDS } from "../api/outcomes.js";
import type { Database } from "../db/schema.js";
import type { StageClaim } from "../engine/stage-store.js";
import type { StageRevision } from "../engine/stage-work.js";
import { type PlanRowWithStages, toPlanState } from "./plan-repository.js";
import type { PlanRevision, PlanState } from "./plan-transitions.js";

/** A stage a worker may take now: running, unleased, and past any retry's backoff. */
const RUNNABLE = sql`state = 'running' AND lease_token IS NULL AND ready_at <= now()`;

/** How many stages wait for a worker now (the queue depth operators see); those still in a retry's backoff are not counted. */
export async function countRunnableStages(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ waiting: string }>`SELECT count(*) AS waiting FROM plan_stages WHERE ${RUNNABLE}`.execute(db);
  return Number(rows[0]!.waiting);
}

/**
 * Claims up to `limit` stages waiting for a worker, oldest first; a stage
 * retried after a transient error waits until its `ready_at`, a time in the
 * database, so the backoff survives a restart. Rows other
 * workers are claiming right now are skipped, not waited for, so any number
 * of instances claim side by side and never the same stage. One statement:
 * the lease, a fresh fencing token, and each claimed stage's plan as it
 * stands (so the run's first write needs no read of its own).
 */
export async function claimStages(db: Kysely<Database>, owner: string, limit: number, leaseMs: number): Promise<{ claim: StageClaim; plan: PlanState }[]> {
  // The stage columns of the json_agg; also in selectPlansWithStages, PlanRowWithStages, savePlan (plan-repository.ts) and RUN_WRITES_SQL (run-writes.ts).
  const { rows } = await sql<PlanRowWithStages & { claimed_position: number; claimed_token: number; claimed_attempts: number; claimed_retries: number }>`
    WITH picked AS (
      SELECT plan_id, position FROM plan_stages
      WHERE ${RUNNABLE}
        -- A plan of an outcome this version does not have (a newer one wrote it) is left to an instance that has it.
        AND EXISTS (SELECT 1 FROM plans WHERE plans.id = plan_stages.plan_id AND plans.outcome = ANY(${OUTCOME_IDS}::text[]))
      ORDER BY ready_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    claimed AS (
      UPDATE plan_stages AS s
      SET lease_owner = ${owner},
          lease_token = nextval('plan_stage_lease_tokens'),
          lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}::float8),
          updated_at = now()
      FROM picked
      WHERE s.plan_id = picked.plan_id AND s.position = picked.position
      RETURNING s.plan_id, s.position, s.lease_token, s.attempts, s.retries
    )
    SELECT p.*, c.position AS claimed_position, c.lease_token AS claimed_token, c.attempts AS claimed_attempts, c.retries AS claimed_retries,
      (SELECT coalesce(json_agg(x ORDER BY x.position), '[]') FROM (
        SELECT position, stage_id, title, state, attempts, error_type, error_message, output, progress, lease_token, retries
        FROM plan_stages WHERE plan_id = p.id) AS x) AS stages
    FROM claimed AS c JOIN plans AS p ON p.id = c.plan_id
  `.execute(db);
  return rows.map((row) => {
    const position = Number(row.claimed_position);
    const leaseToken = Number(row.claimed_token);
    const read = toPlanState(row);
    // The plan and its stages are read as the statement began: the claimed stage as the claim left it
    // comes from the update itself. (Should the plan have moved on meanwhile, its version says so and
    // the run's first write takes the locked path.)
    const claimed = { leaseToken, attempts: Number(row.claimed_attempts), retries: Number(row.claimed_retries) };
    const plan = { ...read, stages: read.stages.map((s) => (s.position === position ? { ...s, ...claimed } : s)) };
    return { claim: claimOf(plan, position, leaseToken), plan };
  });
}

/** A run's claim on stage `position` of `plan` under `leaseToken`, with what its work needs: the outputs before it and the newest revision. */
export function claimOf(plan: PlanState, position: number, leaseToken: number): StageClaim {
  const stage = plan.stages[position]!;
  const previous: Record<string, JsonValue> = {};
  for (const s of plan.stages) if (s.state === "succeeded" && s.output !== null) previous[s.id] = s.output;
  return {
    planId: plan.id,
    position,
    stageId: stage.id,
    attempts: stage.attempts,
    retries: stage.retries ?? 0,
    leaseToken,
    accountId: plan.accountId,
    goal: plan.goal,
    outcome: plan.outcome,
    previous,
    ...(plan.revisions.length > 0 ? { revision: stageRevision(plan.revisions) } : {}),
  };
}

/**
 * Extends the leases this instance still holds and answers which tokens are
 * still valid. A lease that already expired is never extended: once expired,
 * the stage belongs to the reaper.
 */
export async function renewLeases(db: Kysely<Database>, tokens: readonly number[], leaseMs: number): Promise<Set<number>> {
  if (tokens.length === 0) return new Set();
  const rows = await db
    .updateTable("plan_stages")
    .set({ lease_expires_at: sql<Date>`now() + make_interval(secs => ${leaseMs / 1000}::float8)` })
    .where("lease_token", "in", [...tokens])
    .where("state", "=", "running")
    .where("lease_expires_at", ">", sql<Date>`now()`)
    .returning("lease_token")
    .execute();
  return new Set(rows.map((r) => Number(r.lease_token)));
}

/** Stages whose lease expired: their worker died or lost the database for longer than a lease. */
export async function findExpiredLeases(db: Kysely<Database>, limit: number): Promise<{ planId: string; position: number; leaseToken: number }[]> {
  const rows = await db
    .selectFrom("plan_stages")
    .select(["plan_id", "position", "lease_token"])
    .where("lease_token", "is not", null)
    .where("lease_expires_at", "<=", sql<Date>`now()`)
    .orderBy("lease_expires_at")
    .limit(limit)
    .execute();
  return rows.map((r) => ({ planId: r.plan_id, position: Number(r.position), leaseToken: Number(r.lease_token) }));
}

/**
 * Ends every live lease now, so that the reaper interrupts their stages at
 * once rather than when each lease runs out: for a database this process
 * alone opens (Store.exclusive), whose leases at start are a dead process's.
 * Answers how many.
 */
export async function endLeasesOfTheDead(db: Kysely<Database>): Promise<number> {
  const result = await db
    .updateTable("plan_stages")
    .set({ lease_expires_at: sql<Date>`now()` })
    .where("lease_token", "is not", null)
    .where("lease_expires_at", ">", sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** What a stage is told of a plan's newest revision (the last of `revisions`, oldest first), with the feedback of those before it. */
export function stageRevision(revisions: readonly PlanRevision[]): StageRevision {
  const newest = revisions.at(-1)!;
  const earlier = revisions.slice(0, -1).map((r) => r.feedback);
  return { number: newest.number, feedback: newest.feedback, earlier, draft: newest.draft };
}
