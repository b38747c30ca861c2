import type { JsonValue } from "@bufbuild/protobuf";
import type { StageErrorInfo, StageOutcome, StageRevision } from "./stage-work.js";

/** A stage an engine holds under a lease, with what its work needs to run. */
export interface StageClaim {
  /** The fencing token: unique per claim, and every later write about this run presents it. */
  readonly leaseToken: number;
  readonly planId: string;
  /** The stage's place in its plan. */
  readonly position: number;
  readonly stageId: string;
  /** 1 on the first run of this stage, +1 on each resume or retry. */
  readonly attempts: number;
  /** Retries in place after transient errors since this run of the stage began (a resume starts again at 0); absent: 0. */
  readonly retries?: number;
  readonly accountId: string;
  readonly goal: string;
  readonly outcome: string;
  /** Outputs of the plan's succeeded stages, by stage id. */
  readonly previous: Readonly<Record<string, JsonValue>>;
  /** The plan's newest revision, if any. */
  readonly revision?: StageRevision;
}

/** What a run reports about its stage. */
export type StageChange =
  | { kind: "progress"; fraction: number }
  | { kind: "succeeded"; outcome: StageOutcome }
  | { kind: "failed"; error: StageErrorInfo }
  /** A transient failure: the stage runs again, attempts + 1, once `waitMs` has passed (a time kept by the store). */
  | { kind: "retrying"; error: StageErrorInfo; waitMs: number }
  /** The instance is stopping: the stage goes back to the queue for another instance. */
  | { kind: "released" };

/**
 * How a write went: applied, a no-op, refused because the lease is no longer
 * this run's, or applied together with a claim on the stage it made ready.
 */
export type StageWrite = "written" | "unchanged" | "lost" | { next: StageClaim };

/** A stage whose lease ran out and whose plan the store interrupted. */
export interface InterruptedStage {
  planId: string;
  position: number;
  stageId: string;
  outcome: string;
}

/**
 * Where stages wait, are leased and report back. The engine decides when to
 * claim, renew, reap and write; the store decides how, and what a change
 * means for the plan around the stage. Writes are fenced: a claim whose
 * token is no longer current answers "lost" and changes nothing.
 */
export interface StageStore {
  /** Calls `onReady` when a stage may be waiting; answers a function that stops listening. */
  listenForReady(onReady: () => void): Promise<() => Promise<void>>;
  /**
   * Calls `onRevoked` with fencing tokens the store took away from their runs
   * (the work is no longer wanted); answers a function that stops listening.
   * Optional: without it, a revoked run learns at its next heartbeat, when
   * `renew` no longer answers its token.
   */
  listenForRevoked?(onRevoked: (leaseTokens: readonly number[]) => void): Promise<() => Promise<void>>;
  /** Leases up to `limit` waiting stages to `owner`, oldest first, never one another owner holds nor one still waiting out a retry's backoff. */
  claim(owner: string, limit: number, leaseMs: number): Promise<StageClaim[]>;
  /** Extends the live leases among `tokens`; answers the tokens still held. An expired lease is never extended. */
  renew(tokens: readonly number[], leaseMs: number): Promise<ReadonlySet<number>>;
  /**
   * Applies a run's change under its fencing token. With `chainFor`, a stage
   * the change makes ready is leased to that owner in the same write.
   */
  record(claim: StageClaim, change: StageChange, options?: { chainFor?: { owner: string; leaseMs: number } }): Promise<StageWrite>;
  /**
   * Interrupts up to `limit` stages whose lease expired: their worker died.
   * Called at every poll on every instance, so a store may do its periodic
   * housekeeping here too.
   */
  interruptExpired(limit: number): Promise<InterruptedStage[]>;
  /** True for errors that mean the store is away for now (worth retrying), not that a write is wrong. */
  isUnavailable(error: unknown): boolean;
  /** True for errors that mean a write's own values cannot be stored (text the store refuses): sent again, they would fail again. */
  isUnstorable(error: unknown): boolean;
  /** Waits until announcements of what was written have gone out. */
  flush(): Promise<void>;
}
