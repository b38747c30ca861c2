import type { JsonValue } from "@bufbuild/protobuf";
import type { Kysely } from "kysely";
import type { Store } from "../db/database.js";
import type { Database } from "../db/schema.js";
import { LeaseLostError, loadPlan, savePlan, STAGE_READY_CHANNEL, type SaveResult } from "../executions/plan-repository.js";
import type { Logger } from "../observability/logger.js";
import { isOutcomeId } from "../api/outcomes.js";
import { isDatabaseDown } from "../db/errors.js";
import {
  GENERIC_STAGE_ERROR,
  stageFailed,
  stageInterrupted,
  stageProgressed,
  stageReleased,
  stageSucceeded,
  type PlanState,
  type StageErrorInfo,
} from "./plan-transitions.js";
import type { Notifier } from "./notifier.js";
import { claimStages, findExpiredLeases, pruneGenerationCounts, renewLeases, type ClaimedStage } from "./stage-queue.js";
import { StageFailure, type StageOutcome, type StageWorkResolver } from "./stage-work.js";
import type { Metrics } from "../observability/metrics.js";
import { endSpan, type Tracing } from "../observability/tracing.js";

export interface StageEngineOptions {
  store: Store;
  logger: Logger;
  /** This instance's id, recorded as the lease owner. */
  instanceId: string;
  resolveWork: StageWorkResolver;
  /** Announces committed changes to watchers and other engines. */
  notifier: Notifier;
  /** Stages this instance runs at once; 0 runs none (an API-only instance). */
  concurrency: number;
  /** How long a claim holds without a heartbeat; heartbeats come three times per lease. */
  leaseMs: number;
  /** Fallback polling for ready stages and expired leases when no NOTIFY arrives. Default: min(1 s, lease / 2). */
  pollMs?: number;
  /** How long `stop` waits for running work to notice its abort signal. */
  stopGraceMs?: number;
  metrics?: Pick<Metrics, "stageDuration" | "stageRuns" | "runningLeases">;
  tracing?: Tracing;
}

/** Why a run's signal was aborted. */
type StopReason = "lost" | "shutdown";

interface Run {
  claim: ClaimedStage;
  controller: AbortController;
  stopReason: StopReason | undefined;
  /** Local time of the last successful lease renewal (or the claim). */
  renewedAt: number;
  /** Progress writes, in order; the result waits for them. */
  writes: Promise<void>;
  /** The plan as this worker last wrote it, for a write without a prior locked read. */
  cached: PlanState | undefined;
  done: Promise<void>;
}

/**
 * Runs plan stages from the shared queue in Postgres. Any number of instances
 * run side by side: a stage is claimed with `FOR UPDATE SKIP LOCKED` under a
 * lease renewed by heartbeat and fenced by a token, so a worker that lost its
 * lease cannot write, and no stage runs twice at once. NOTIFY wakes idle
 * workers; polling covers missed notifications and finds leases whose worker
 * died, which interrupt their plan. `stop` hands held stages back so another
 * instance continues them at once.
 */
export class StageEngine {
  readonly #options: Required<Omit<StageEngineOptions, "metrics" | "tracing">> & Pick<StageEngineOptions, "metrics" | "tracing">;
  readonly #db: Kysely<Database>;
  readonly #log: Logger;
  readonly #runs = new Map<number, Run>();
  #wanted = false;
  #filling: Promise<void> | undefined;
  #reaping: Promise<void> | undefined;
  #renewing: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  #unlisten: (() => Promise<void>) | undefined;
  #stopping = false;
  #lastPrune = 0;

  constructor(options: StageEngineOptions) {
    this.#options = {
      pollMs: Math.min(1000, Math.floor(options.leaseMs / 2)),
      stopGraceMs: 5000,
      ...options,
    };
    this.#db = options.store.db;
    this.#log = options.logger.child({ component: "stage-engine" });
  }

  /** Starts listening, polling and heartbeating. */
  async start(): Promise<void> {
    const { store, pollMs, leaseMs, concurrency } = this.#options;
    // An instance that runs no stages (API only) still reaps expired leases, but has nothing to wake.
    if (concurrency > 0) this.#unlisten = await store.listen(STAGE_READY_CHANNEL, () => this.#wake());
    this.#timers.push(
      setInterval(() => {
        this.#wake();
        this.#reap();
      }, pollMs),
      setInterval(() => this.#renew(), Math.max(50, Math.floor(leaseMs / 3))),
    );
    for (const timer of this.#timers) timer.unref();
    this.#wake();
    this.#reap();
  }

  /**
   * Stops claiming, asks running work to stop, and hands its stages back to
   * the queue so another instance picks them up at once. Work that ignores
   * its signal past the grace period keeps its lease, which then expires:
   * handing it back would let a second worker run it beside the first.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const timer of this.#timers) clearInterval(timer);
    await this.#unlisten?.().catch(() => {});
    await this.#filling;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), this.#options.stopGraceMs)));
    // A run finishing right now may chain into the next stage: wait until none is left.
    while (this.#runs.size > 0) {
      for (const run of this.#runs.values()) abort(run, "shutdown");
      const settled = Promise.allSettled([...this.#runs.values()].map((r) => r.done));
      if ((await Promise.race([settled, grace])) === "timeout") break;
    }
    clearTimeout(timer);
    if (this.#runs.size > 0) this.#log.warn({ stages: this.#runs.size }, "stage work did not stop in time; its leases will expire");
    await Promise.allSettled([this.#reaping, this.#renewing]);
    await this.#options.notifier.flush();
  }

  /** Stages this instance is running now. */
  get activeCount(): number {
    return this.#runs.size;
  }

  #wake(): void {
    if (this.#stopping) return;
    this.#wanted = true;
    this.#filling ??= this.#fill().finally(() => (this.#filling = undefined));
  }

  async #fill(): Promise<void> {
    const { concurrency, instanceId, leaseMs } = this.#options;
    try {
      while (this.#wanted && !this.#stopping) {
        this.#wanted = false;
        const free = concurrency - this.#runs.size;
        // When a slot frees up, the finishing run wakes us again.
        if (free <= 0) return;
        const claims = await claimStages(this.#db, instanceId, free, leaseMs);
        for (const claim of claims) this.#launch(claim);
        if (claims.length === free) this.#wanted = true;
      }
    } catch (error) {
      // The next poll tries again.
      this.#log.warn({ err: error }, "claiming stages failed");
    }
  }

  #launch(claim: ClaimedStage, cached?: PlanState): void {
    const run: Run = {
      claim,
      cached,
      controller: new AbortController(),
      stopReason: undefined,
      renewedAt: performance.now(),
      writes: Promise.resolve(),
      done: Promise.resolve(),
    };
    this.#runs.set(claim.leaseToken, run);
    this.#options.metrics?.runningLeases.set(this.#runs.size);
    if (this.#stopping) abort(run, "shutdown");
    run.done = this.#execute(run)
      .catch((error: unknown) => this.#log.error({ err: error, planId: claim.planId, stage: claim.stageId }, "stage bookkeeping failed"))
      .finally(() => {
        this.#runs.delete(claim.leaseToken);
        this.#options.metrics?.runningLeases.set(this.#runs.size);
        this.#wake();
      });
  }

  async #execute(run: Run): Promise<void> {
    const { claim, controller } = run;
    let result: { ok: true; outcome: StageOutcome } | { ok: false; error: unknown };
    const started = performance.now();
    const span = this.#options.tracing?.start(`stage ${claim.stageId}`, "internal", {
      "zero.plan_id": claim.planId,
      "zero.outcome": claim.outcome,
      "zero.stage": claim.stageId,
      "zero.attempt": claim.attempts,
    });
    const record = (outcome: "succeeded" | "failed" | "lost" | "handed_back") => {
      endSpan(span, { "zero.result": outcome }, outcome === "failed" || outcome === "lost");
      const labels = { outcome: claim.outcome, stage: claim.stageId, result: outcome };
      this.#options.metrics?.stageRuns.inc(labels);
      this.#options.metrics?.stageDuration.observe(labels, (performance.now() - started) / 1000);
    };
    try {
      if (!isOutcomeId(claim.outcome)) throw new StageFailure("stage_failed", `unknown outcome ${claim.outcome}`);
      if (controller.signal.aborted) throw controller.signal.reason;
      const work = this.#options.resolveWork(claim.outcome, claim.stageId);
      const outcome = await work({
        planId: claim.planId,
        accountId: claim.accountId,
        outcome: claim.outcome,
        goal: claim.goal,
        stageId: claim.stageId,
        attempt: claim.attempts,
        previous: claim.previous,
        signal: controller.signal,
        progress: (fraction) => this.#progress(run, fraction),
      });
      result = { ok: true, outcome };
    } catch (error) {
      result = { ok: false, error };
    }
    await run.writes.catch(() => {});

    if (run.stopReason === "lost") {
      this.#log.warn({ planId: claim.planId, stage: claim.stageId }, "lease lost; the stage's result is discarded");
      record("lost");
      return;
    }
    if (!result.ok && run.stopReason === "shutdown") {
      // Only a live lease is handed back; an expired one belongs to the reaper.
      await this.#writeResult(run, (plan) => stageReleased(plan, claim.position), true);
      record("handed_back");
      return;
    }
    record(result.ok ? "succeeded" : "failed");
    if (result.ok) {
      const written = await this.#writeResult(run, (plan) => stageSucceeded(plan, claim.position, result.outcome), true, !this.#stopping);
      // The next stage of this plan, claimed in the same statement: run it on this slot at once.
      if (typeof written === "object" && written.claimed) this.#launch(nextClaim(claim, written.plan, written.claimed), written.plan);
    } else {
      const error = stageError(result.error);
      if (!(result.error instanceof StageFailure)) {
        this.#log.error({ err: result.error, planId: claim.planId, stage: claim.stageId }, "stage work threw");
      }
      await this.#writeResult(run, (plan) => stageFailed(plan, claim.position, error), true);
    }
  }

  /**
   * The write that ends a run. While the database is away it is retried, and
   * the run stays in `#runs` so its lease keeps being renewed once the
   * database is back: a stage that finished during a short outage keeps its
   * result instead of being interrupted when its abandoned lease expires.
   * It gives up when the lease is lost (renewals failed for a whole lease).
   */
  async #writeResult(
    run: Run,
    transition: (plan: PlanState) => PlanState,
    live: boolean,
    chain = false,
  ): Promise<SaveResult | "unchanged" | "lost"> {
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      try {
        return await this.#write(run, transition, live, chain);
      } catch (error) {
        if (!isDatabaseDown(error)) throw error;
        if (run.stopReason === "lost") return "lost";
        // What was cached may or may not have been written: read the plan afresh next time.
        run.cached = undefined;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  #progress(run: Run, fraction: number): Promise<void> {
    const write = run.writes.then(async () => {
      if (run.stopReason === "lost") throw new LeaseLostError("the lease on this stage was lost");
      let changed: SaveResult | "unchanged" | "lost";
      try {
        changed = await this.#write(run, (plan) => {
          const next = stageProgressed(plan, run.claim.position, fraction);
          // Only whole percentage points are worth a write and a notification.
          return next.progress === plan.progress ? plan : next;
        }, true);
      } catch (error) {
        // Progress is only shown to watchers: a database outage must not fail the stage's work over it.
        if (!isDatabaseDown(error)) throw error;
        run.cached = undefined;
        return;
      }
      if (changed === "lost") throw new LeaseLostError("the lease on this stage was lost");
    });
    run.writes = write.catch(() => {});
    return write;
  }

  /**
   * Applies a transition to the plan of a run, under the plan's lock and the
   * run's fencing token. Answers "lost" when the lease is no longer ours.
   * With `chain`, a stage the transition makes ready is claimed for this
   * instance in the same write.
   */
  async #write(
    run: Run,
    transition: (plan: PlanState) => PlanState,
    live: boolean,
    chain = false,
  ): Promise<SaveResult | "unchanged" | "lost"> {
    const { claim } = run;
    const { instanceId: owner, leaseMs } = this.#options;
    const options = { fence: { position: claim.position, live }, claimFor: chain ? { owner, leaseMs } : undefined };
    try {
      // The common case, one statement: nothing else touched the plan since this worker last wrote it.
      if (run.cached && live) {
        const after = transition(run.cached);
        if (after === run.cached) return "unchanged";
        const saved = await savePlan(this.#db, run.cached, after, { ...options, optimistic: true });
        if (saved) {
          run.cached = saved.plan;
          this.#announce(saved);
          return saved;
        }
      }
      const saved = await this.#db.transaction().execute(async (trx) => {
        const before = await loadPlan(trx, claim.planId, { forUpdate: true });
        const stage = before?.stages[claim.position];
        if (!before || stage?.leaseToken !== claim.leaseToken) throw new LeaseLostError("lease lost");
        const after = transition(before);
        if (after === before) return "unchanged";
        return savePlan(trx, before, after, options);
      });
      run.cached = saved === "unchanged" ? undefined : saved.plan;
      if (saved !== "unchanged") this.#announce(saved);
      return saved;
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error;
      abort(run, "lost");
      return "lost";
    }
  }

  #announce(saved: SaveResult): void {
    this.#options.notifier.planChanged(saved.plan.id);
    if (saved.wake) this.#options.notifier.stageReady();
  }

  /** Extends this instance's leases; a run whose lease is gone (or unconfirmed for a whole lease) is told to stop. */
  #renew(): void {
    if (this.#renewing || this.#runs.size === 0) return;
    const runs = [...this.#runs.values()];
    this.#renewing = renewLeases(this.#db, runs.map((r) => r.claim.leaseToken), this.#options.leaseMs)
      .then((valid) => {
        const now = performance.now();
        for (const run of runs) {
          if (valid.has(run.claim.leaseToken)) run.renewedAt = now;
          else if (this.#runs.has(run.claim.leaseToken)) abort(run, "lost");
        }
      })
      .catch((error: unknown) => {
        this.#log.warn({ err: error }, "renewing stage leases failed");
        const now = performance.now();
        for (const run of runs) if (now - run.renewedAt > this.#options.leaseMs) abort(run, "lost");
      })
      .finally(() => (this.#renewing = undefined));
  }

  /** Interrupts the plans of stages whose lease expired: their worker died. */
  #reap(): void {
    if (this.#reaping || this.#stopping) return;
    this.#reaping = (async () => {
      const expired = await findExpiredLeases(this.#db, 100);
      for (const lease of expired) {
        const interrupted = await this.#db
          .transaction()
          .execute(async (trx) => {
            const before = await loadPlan(trx, lease.planId, { forUpdate: true });
            const stage = before?.stages[lease.position];
            if (!before || stage?.leaseToken !== lease.leaseToken || stage.state !== "running") return undefined;
            const saved = await savePlan(trx, before, stageInterrupted(before, lease.position), { fence: { position: lease.position, live: false } });
            return saved;
          })
          .catch((error: unknown) => {
            if (error instanceof LeaseLostError) return undefined;
            throw error;
          });
        if (interrupted) {
          this.#announce(interrupted);
          this.#log.warn({ planId: lease.planId, position: lease.position }, "stage lease expired; plan interrupted");
          const { plan } = interrupted;
          this.#options.metrics?.stageRuns.inc({ outcome: plan.outcome, stage: plan.stages[lease.position]?.id ?? "", result: "interrupted" });
        }
      }
      if (Date.now() - this.#lastPrune > 3600_000) {
        this.#lastPrune = Date.now();
        await pruneGenerationCounts(this.#db);
      }
    })()
      .catch((error: unknown) => this.#log.warn({ err: error }, "checking for expired leases failed"))
      .finally(() => (this.#reaping = undefined));
  }
}

/** The run of the stage `claimed` in the same write that finished `previous`. */
function nextClaim(previous: ClaimedStage, plan: PlanState, claimed: { position: number; leaseToken: number }): ClaimedStage {
  const stage = plan.stages[claimed.position]!;
  const outputs: Record<string, JsonValue> = {};
  for (const s of plan.stages) if (s.state === "succeeded" && s.output !== null) outputs[s.id] = s.output;
  return { ...previous, position: stage.position, stageId: stage.id, attempts: stage.attempts, leaseToken: claimed.leaseToken, previous: outputs };
}

function abort(run: Run, reason: StopReason): void {
  if (run.stopReason) return;
  run.stopReason = reason;
  run.controller.abort(new Error(reason === "lost" ? "the lease on this stage was lost" : "the service is shutting down"));
}

/** What a failed stage shows: a StageFailure's own words, otherwise a generic message. */
function stageError(error: unknown): StageErrorInfo {
  if (error instanceof StageFailure) return { type: error.type, message: error.message };
  return GENERIC_STAGE_ERROR;
}
