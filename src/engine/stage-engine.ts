import { RepeatingFailure } from "../observability/repeating-failure.js";
import { EventEmitter } from "node:events";
import type { Logger } from "../observability/logger.js";
import type { InterruptedStage, StageChange, StageClaim, StageStore, StageWrite } from "./stage-store.js";
import { GENERIC_STAGE_ERROR, StageFailure, type StageErrorInfo, type StageOutcome, type StageWorkResolver } from "./stage-work.js";

export interface StageEngineOptions {
  /** Where stages wait and report back. */
  store: StageStore;
  logger: Logger;
  /** This instance's id, recorded as the lease owner. */
  instanceId: string;
  resolveWork: StageWorkResolver;
  /** Stages this instance runs at once; 0 runs none (an API-only instance). */
  concurrency: number;
  /** How long a claim holds without a heartbeat; heartbeats come three times per lease. */
  leaseMs: number;
  /** Fallback polling for ready stages and expired leases when no wake-up arrives. Default: min(1 s, lease / 2). */
  pollMs?: number;
  /** How long `stop` waits for running work to notice its abort signal. */
  stopGraceMs?: number;
  /** Retries in place of stages failing with a transient error; without it every failure fails the stage. */
  retry?: StageRetryPolicy;
}

/** How a stage failing with a transient error is tried again before it fails. */
export interface StageRetryPolicy {
  /** Tries of a stage in one run, the first included (a resume starts a new run); the last failure fails the stage. */
  maxAttempts: number;
  /** The backoff before the first retry; it doubles with each attempt, up to `capMs`. */
  baseMs: number;
  capMs: number;
  /** True for error types worth trying again shortly. */
  isTransient(type: string): boolean;
  /** 0 ≤ x < 1; the jitter's source, replaceable in tests. Default Math.random. */
  random?: () => number;
}

/**
 * The wait before retrying a stage whose try `attempt` (of this run) failed: "full
 * jitter", uniform in [0, min(cap, base · 2^(attempt-1))], so instances that
 * failed together against the same upstream do not come back together.
 */
export function retryWaitMs(policy: StageRetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.floor((policy.random ?? Math.random)() * (ceiling + 1));
}

const MAX_ASKED_WAIT_MS = 60_000;

/** The wait before a retry that a failure asked for (a StageFailure's `retryAfterMs`), at most a minute; 0 when it asked for none. */
function askedWaitMs(error: unknown): number {
  if (!(error instanceof StageFailure) || error.retryAfterMs === undefined) return 0;
  return Math.min(MAX_ASKED_WAIT_MS, Math.max(0, error.retryAfterMs));
}

/** How one run of a stage ended, as far as this instance is concerned ("retrying": it failed and is tried again). */
export type StageRunResult = "succeeded" | "retrying" | "failed" | "lost" | "handed_back";

/**
 * What the engine tells observers, as graphile-worker's event map does:
 * metrics, traces and tests subscribe, the engine imports none of them.
 */
export interface StageEngineEvents {
  "stage:start": [claim: StageClaim];
  "stage:end": [claim: StageClaim, result: StageRunResult, durationMs: number];
  "stage:interrupted": [stage: InterruptedStage];
  "runs:changed": [running: number];
}

/** How a run's work ended, as written by #endRun. */
type RunEnd = Extract<StageChange, { kind: "succeeded" | "failed" | "retrying" }>;

/** Why a run's signal was aborted. */
type StopReason = "lost" | "revoked" | "shutdown";

interface Run {
  claim: StageClaim;
  controller: AbortController;
  stopReason: StopReason | undefined;
  /** Local time of the last successful lease renewal (or the claim). */
  renewedAt: number;
  /** Progress writes, in order; the result waits for them. */
  writes: Promise<void>;
  done: Promise<void>;
  /** `stop` gave up waiting for it: its lease is no longer renewed, and the store may be closed under it. */
  givenUp: boolean;
}

/**
 * Runs stages from a shared store. Any number of instances run side by side:
 * a stage is claimed under a lease renewed by heartbeat and fenced by a
 * token, so a worker that lost its lease cannot write, and no stage runs
 * twice at once. The store's wake-ups start idle workers; polling covers
 * missed ones and finds leases whose worker died, which the store
 * interrupts. `stop` hands held stages back so another instance continues
 * them at once.
 */
export class StageEngine {
  /** Observers' view of the engine's work; see StageEngineEvents. */
  readonly events = new EventEmitter<StageEngineEvents>();
  readonly #options: Required<Omit<StageEngineOptions, "retry">> & Pick<StageEngineOptions, "retry">;
  readonly #store: StageStore;
  readonly #log: Logger;
  readonly #claimFailures: RepeatingFailure;
  readonly #renewFailures: RepeatingFailure;
  readonly #reapFailures: RepeatingFailure;
  readonly #runs = new Map<number, Run>();
  #wanted = false;
  #filling: Promise<void> | undefined;
  #reaping: Promise<void> | undefined;
  #renewing: Promise<void> | undefined;
  #polling: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #unlistenRevoked: (() => Promise<void>) | undefined;
  #stopping = false;

  constructor(options: StageEngineOptions) {
    this.#options = {
      pollMs: Math.min(1000, Math.floor(options.leaseMs / 2)),
      stopGraceMs: 5000,
      ...options,
    };
    this.#store = options.store;
    this.#log = options.logger.child({ component: "stage-engine" });
    this.#claimFailures = new RepeatingFailure(this.#log, "claiming stages");
    this.#renewFailures = new RepeatingFailure(this.#log, "renewing stage leases");
    this.#reapFailures = new RepeatingFailure(this.#log, "checking for expired leases");
  }

  /** Starts listening, polling and heartbeating. */
  async start(): Promise<void> {
    const { pollMs, leaseMs, concurrency } = this.#options;
    // An instance that runs no stages (API only) still reaps expired leases, but has nothing to wake.
    if (concurrency > 0) {
      this.#unlisten = await this.#store.listenForReady(() => this.#wake());
      // A revoked run stops at once; without the wake-up, at its next heartbeat (renew no longer answers its token).
      this.#unlistenRevoked = await this.#store.listenForRevoked?.((tokens) => this.#revoke(tokens));
    }
    this.#polling = setInterval(() => {
      this.#wake();
      this.#reap();
    }, pollMs).unref();
    this.#heartbeat = setInterval(() => this.#renew(), Math.max(50, Math.floor(leaseMs / 3))).unref();
    this.#wake();
    this.#reap();
  }

  /**
   * Stops claiming, asks running work to stop, and hands its stages back to
   * the queue so another instance picks them up at once. Leases are renewed
   * meanwhile, so a lease shorter than the grace period does not expire
   * under work that is still stopping. Work that ignores its signal past the
   * grace period keeps its lease, which then expires: handing it back would
   * let a second worker run it beside the first.
   */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    clearInterval(this.#polling);
    await this.#unlisten?.().catch(() => {});
    await this.#unlistenRevoked?.().catch(() => {});
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
    clearInterval(this.#heartbeat);
    if (this.#runs.size > 0) this.#log.warn({ stages: this.#runs.size }, "stage work did not stop in time; its leases will expire");
    for (const run of this.#runs.values()) run.givenUp = true;
    await Promise.allSettled([this.#reaping, this.#renewing]);
    await this.#store.flush();
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
        const claims = await this.#store.claim(instanceId, free, leaseMs);
        this.#claimFailures.succeeded();
        for (const claim of claims) this.#launch(claim);
        if (claims.length === free) this.#wanted = true;
      }
    } catch (error) {
      // The next poll tries again.
      this.#claimFailures.failed(error);
    }
  }

  #launch(claim: StageClaim): void {
    const run: Run = {
      claim,
      controller: new AbortController(),
      stopReason: undefined,
      renewedAt: performance.now(),
      writes: Promise.resolve(),
      done: Promise.resolve(),
      givenUp: false,
    };
    this.#runs.set(claim.leaseToken, run);
    this.events.emit("runs:changed", this.#runs.size);
    if (this.#stopping) abort(run, "shutdown");
    run.done = this.#execute(run)
      .catch((error: unknown) => {
        const where = { err: error, planId: claim.planId, stage: claim.stageId };
        // The instance went on closing without it (the database, say): expected, and already warned of.
        if (run.givenUp) this.#log.info(where, "stage work ended after the shutdown gave up on it; its result is not written");
        else this.#log.error(where, "stage bookkeeping failed");
      })
      .finally(() => {
        this.#runs.delete(claim.leaseToken);
        this.events.emit("runs:changed", this.#runs.size);
        this.#wake();
      });
  }

  async #execute(run: Run): Promise<void> {
    const { claim, controller } = run;
    let result: { ok: true; outcome: StageOutcome } | { ok: false; error: unknown };
    const started = performance.now();
    this.events.emit("stage:start", claim);
    const ended = (how: StageRunResult) => this.events.emit("stage:end", claim, how, performance.now() - started);
    try {
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
        ...(claim.revision ? { revision: claim.revision } : {}),
        signal: controller.signal,
        progress: (fraction) => this.#progress(run, fraction),
      });
      result = { ok: true, outcome };
    } catch (error) {
      result = { ok: false, error };
    }
    await run.writes.catch(() => {});

    if (leaseGone(run)) {
      this.#log.warn({ planId: claim.planId, stage: claim.stageId, reason: run.stopReason }, "lease lost; the stage's result is discarded");
      ended("lost");
      return;
    }
    if (!result.ok && run.stopReason === "shutdown") {
      // Only a live lease is handed back; an expired one belongs to the reaper.
      await this.#writeResult(run, { kind: "released" });
      ended("handed_back");
      return;
    }
    // The run's time is its work's; the write that ends it is left out.
    const workMs = performance.now() - started;
    if (result.ok) {
      const written = await this.#endRun(run, { kind: "succeeded", outcome: result.outcome }, workMs, !this.#stopping);
      // The next stage of this plan, claimed in the same write: run it on this slot at once.
      if (typeof written === "object") this.#launch(written.next);
    } else {
      // Work that lost the database (a restart, a failover) met an outage, not a fault of its own: tried again like one.
      const storeAway = !(result.error instanceof StageFailure) && this.#store.isUnavailable(result.error);
      // Anything else that is not a StageFailure is a bug: logged with its stack.
      const thrown = storeAway || result.error instanceof StageFailure ? undefined : result.error;
      const error = storeAway ? STORE_AWAY : stageError(result.error);
      const retry = this.#options.retry;
      const tries = (claim.retries ?? 0) + 1;
      const retrying = retry !== undefined && tries < retry.maxAttempts && retry.isTransient(error.type);
      // One line per try that failed: why, and what happens next.
      const where = { planId: claim.planId, stage: claim.stageId, attempt: claim.attempts, error, ...(thrown === undefined ? {} : { err: thrown }) };
      if (retrying) {
        const waitMs = Math.max(retryWaitMs(retry, tries), askedWaitMs(result.error));
        if (storeAway) this.#log.warn({ ...where, err: result.error, waitMs }, "stage work lost the database; it is tried again");
        else this.#log[thrown === undefined ? "info" : "error"]({ ...where, waitMs }, "stage try failed; it is tried again");
        await this.#endRun(run, { kind: "retrying", error, waitMs }, workMs);
      } else {
        if (thrown === undefined) this.#log.warn(where, "stage failed");
        else this.#log.error(where, "stage work threw; the stage failed");
        await this.#endRun(run, { kind: "failed", error }, workMs);
      }
    }
  }

  /**
   * Writes how a run's work ended (#writeResult), then tells observers, as
   * written: a result the store cannot hold fails the stage, saying so,
   * rather than leaving its lease to expire as if the worker had died, and
   * the run counts as failed.
   */
  async #endRun(run: Run, change: RunEnd, workMs: number, chain = false): Promise<StageWrite> {
    let how: StageRunResult = change.kind;
    try {
      return await this.#writeResult(run, change, chain);
    } catch (error) {
      if (!this.#store.isUnstorable(error)) throw error;
      const { planId, stageId: stage } = run.claim;
      this.#log.error({ err: error, planId, stage, change: change.kind }, "the store refused the stage's result; the stage failed");
      how = "failed";
      return await this.#writeResult(run, { kind: "failed", error: UNSTORABLE_RESULT });
    } finally {
      this.events.emit("stage:end", run.claim, how, workMs);
    }
  }

  /**
   * The write that ends a run. While the store is away it is retried, and
   * the run stays in `#runs` so its lease keeps being renewed once the store
   * is back: a stage that finished during a short outage keeps its result
   * instead of being interrupted when its abandoned lease expires. It gives
   * up when the lease is lost (renewals failed for a whole lease).
   */
  async #writeResult(run: Run, change: StageChange, chain = false): Promise<StageWrite> {
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      try {
        return await this.#write(run, change, chain);
      } catch (error) {
        if (!this.#store.isUnavailable(error)) throw error;
        // Nothing renews a given-up run's lease: waiting for the store would outlast it.
        if (leaseGone(run) || run.givenUp) return "lost";
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  #progress(run: Run, fraction: number): Promise<void> {
    const write = run.writes.then(async () => {
      if (leaseGone(run)) throw new ProgressAfterLeaseLostError();
      let written: StageWrite;
      try {
        written = await this.#write(run, { kind: "progress", fraction });
      } catch (error) {
        // Progress is only shown to watchers: an outage of the store must not fail the stage's work over it.
        if (!this.#store.isUnavailable(error)) throw error;
        return;
      }
      if (written === "lost") throw new ProgressAfterLeaseLostError();
    });
    run.writes = write.catch(() => {});
    return write;
  }

  /** Records a change of a run; a write refused for a lost lease tells the run to stop. */
  async #write(run: Run, change: StageChange, chain = false): Promise<StageWrite> {
    const { instanceId: owner, leaseMs } = this.#options;
    const written = await this.#store.record(run.claim, change, chain ? { chainFor: { owner, leaseMs } } : undefined);
    if (written === "lost") abort(run, "lost");
    return written;
  }

  /** Extends this instance's leases; a run whose lease is gone (or unconfirmed for a whole lease) is told to stop. */
  #renew(): void {
    if (this.#renewing || this.#runs.size === 0) return;
    const runs = [...this.#runs.values()];
    this.#renewing = this.#store
      .renew(
        runs.map((r) => r.claim.leaseToken),
        this.#options.leaseMs,
      )
      .then((valid) => {
        this.#renewFailures.succeeded();
        const now = performance.now();
        for (const run of runs) {
          if (valid.has(run.claim.leaseToken)) run.renewedAt = now;
          else if (this.#runs.has(run.claim.leaseToken)) abort(run, "lost");
        }
      })
      .catch((error: unknown) => {
        this.#renewFailures.failed(error);
        const now = performance.now();
        for (const run of runs) if (now - run.renewedAt > this.#options.leaseMs) abort(run, "lost");
      })
      .finally(() => (this.#renewing = undefined));
  }

  /** The store took these tokens away: their runs stop, and whatever they still write is refused by the fence. */
  #revoke(tokens: readonly number[]): void {
    for (const token of tokens) {
      const run = this.#runs.get(token);
      if (run) abort(run, "revoked");
    }
  }

  /** Has the store interrupt the stages whose lease expired: their worker died. */
  #reap(): void {
    if (this.#reaping || this.#stopping) return;
    this.#reaping = this.#store
      .interruptExpired(100)
      .then((interrupted) => {
        this.#reapFailures.succeeded();
        for (const stage of interrupted) {
          this.#log.warn({ planId: stage.planId, position: stage.position }, "stage lease expired; plan interrupted");
          this.events.emit("stage:interrupted", stage);
        }
      })
      .catch((error: unknown) => this.#reapFailures.failed(error))
      .finally(() => (this.#reaping = undefined));
  }
}

/** Thrown to stage work that reports progress after its lease was lost. */
class ProgressAfterLeaseLostError extends Error {
  override name = "ProgressAfterLeaseLostError";
  constructor() {
    super("the lease on this stage was lost");
  }
}

const STOP_MESSAGES: Record<StopReason, string> = {
  lost: "the lease on this stage was lost",
  revoked: "the store revoked this run (its work was cancelled)",
  shutdown: "the service is shutting down",
};

/** True once the run's lease is no longer its own (lost, or revoked by the store): nothing it writes is kept. */
function leaseGone(run: Run): boolean {
  return run.stopReason === "lost" || run.stopReason === "revoked";
}

function abort(run: Run, reason: StopReason): void {
  if (run.stopReason) return;
  run.stopReason = reason;
  run.controller.abort(new Error(STOP_MESSAGES[reason]));
}

const STORE_AWAY: StageErrorInfo = { type: "unavailable", message: "the database was unreachable while the stage ran" };

const UNSTORABLE_RESULT: StageErrorInfo = {
  type: "stage_failed",
  message: "the stage's result could not be stored: it holds text the database refuses (a NUL character, say); resume the plan to try again",
};

/** What a failed stage shows: a StageFailure's own words, otherwise a generic message. */
function stageError(error: unknown): StageErrorInfo {
  if (error instanceof StageFailure) return { type: error.type, message: error.message };
  return GENERIC_STAGE_ERROR;
}
