import type { JsonValue } from "@bufbuild/protobuf";
import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { StageClaim } from "../engine/stage-store.js";
import type { StageRevision } from "../engine/stage-work.js";
import type { PlanRevision } from "./plan-transitions.js";

/**
 * Claims up to `limit` stages waiting for a worker, oldest first; a stage
 * retried after a transient error waits until its `ready_at`, a time in the
 * database, so the backoff survives a restart. Rows other
 * workers are claiming right now are skipped, not waited for, so any number
 * of instances claim side by side and never the same stage. One statement:
 * the lease, a fresh fencing token and what the work needs, in one round trip.
 */
export async function claimStages(db: Kysely<Database>, owner: string, limit: number, leaseMs: number): Promise<StageClaim[]> {
  const { rows } = await sql<{
    plan_id: string;
    position: number;
    stage_id: string;
    attempts: number;
    retries: number;
    lease_token: number;
    account_id: string;
    goal: string;
    outcome: string;
    previous: Record<string, JsonValue> | null;
    revision: PlanRevision | null;
  }>`
    WITH picked AS (
      SELECT plan_id, position FROM plan_stages
      WHERE state = 'running' AND lease_token IS NULL AND ready_at <= now()
      ORDER BY ready_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    UPDATE plan_stages AS s
    SET lease_owner = ${owner},
        lease_token = nextval('plan_stage_lease_tokens'),
        lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}::float8),
        updated_at = now()
    FROM picked, plans AS p
    WHERE s.plan_id = picked.plan_id AND s.position = picked.position AND p.id = s.plan_id
    RETURNING s.plan_id, s.position, s.stage_id, s.attempts, s.retries, s.lease_token, p.account_id, p.goal, p.outcome, p.revisions -> -1 AS revision,
      (SELECT jsonb_object_agg(x.stage_id, x.output) FROM plan_stages AS x
        WHERE x.plan_id = s.plan_id AND x.state = 'succeeded' AND x.output IS NOT NULL) AS previous
  `.execute(db);
  return rows.map((row) => ({
    planId: row.plan_id,
    position: Number(row.position),
    stageId: row.stage_id,
    attempts: Number(row.attempts),
    retries: Number(row.retries),
    leaseToken: Number(row.lease_token),
    accountId: row.account_id,
    goal: row.goal,
    outcome: row.outcome,
    previous: row.previous ?? {},
    ...(row.revision ? { revision: stageRevision(row.revision) } : {}),
  }));
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

/** Forgets generation counts of windows long past; the longest window is 31 days. */
export async function pruneGenerationCounts(db: Kysely<Database>): Promise<void> {
  await db.deleteFrom("generation_counts").where("window_start", "<", sql<Date>`now() - interval '32 days'`).execute();
}

/** What a stage is told of a plan's newest revision. */
export function stageRevision(revision: PlanRevision): StageRevision {
  return { number: revision.number, feedback: revision.feedback, draft: revision.draft };
}
