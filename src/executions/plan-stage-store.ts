import type { Kysely } from "kysely";
import type { Store } from "../db/database.js";
import { isConflict, isDatabaseDown, isUnstorableText } from "../db/errors.js";
import type { Database } from "../db/schema.js";
import type { InterruptedStage, StageChange, StageClaim, StageStore, StageWrite } from "../engine/stage-store.js";
import type { Notifier } from "./notifier.js";
import { StatementBatcher, type StatementObserver } from "../db/statement-batcher.js";
import { type ClaimFor, LeaseLostError, loadPlan, savePlan, STAGE_READY_CHANNEL, STAGE_REVOKED_CHANNEL, type SaveResult } from "./plan-repository.js";
import {
  isOver,
  stageFailed,
  stageInterrupted,
  stageProgress,
  stageProgressed,
  stageReleased,
  stageRetrying,
  stageSucceeded,
  strayRunStopped,
  type PlanState,
} from "./plan-transitions.js";
import { type RunWrite, type RunWriteResult, saveRunWrites } from "./run-writes.js";
import { claimOf, claimStages, findExpiredLeases, renewLeases } from "./stage-queue.js";
import { pruneGenerationCounts } from "./generation-limit.js";

/**
 * The stage engine's store for plans in Postgres: a stage is claimed with
 * `FOR UPDATE SKIP LOCKED`, and each change a run reports becomes a plan
 * transition, written under the plan's lock and the run's fencing token and
 * announced (Notifier) once committed.
 */
export class PlanStageStore implements StageStore {
  readonly #store: Store;
  readonly #db: Kysely<Database>;
  readonly #notifier: Notifier;
  /**
   * The plan as each run last wrote it, so the next write of that run can
   * skip the locked read when nothing else touched the plan meanwhile.
   */
  readonly #written = new WeakMap<StageClaim, PlanState>();
  /** Runs' writes without a locked read, group-committed: those arriving while statements are in flight share the next. */
  readonly #runWrites: StatementBatcher<RunWrite, RunWriteResult | FailedRunWrite>;
  #lastPrune = 0;

  constructor(store: Store, notifier: Notifier, observeRunWrites?: StatementObserver) {
    this.#store = store;
    this.#db = store.db;
    this.#notifier = notifier;
    // One statement in flight: results that finish meanwhile wait for it and share the next. In engine-peers
    // this beat two in flight in each of three paired runs (2,180-2,597 against 1,886-2,105 jobs/s).
    this.#runWrites = new StatementBatcher((writes) => writeOncePerPlan(this.#db, writes), { maxInFlight: 1, observe: observeRunWrites });
  }

  /** Statements the group-committed run writes took so far (tests check that concurrent writes share them). */
  get runWriteStatements(): number {
    return this.#runWrites.statements;
  }

  /** Ready stages announced by this instance are told in process at once; only other instances' NOTIFYs are acted on. */
  async listenForReady(onReady: () => void): Promise<() => Promise<void>> {
    const stopHere = this.#notifier.onStageReadyHere(onReady);
    try {
      const unlisten = await this.#store.listen(STAGE_READY_CHANNEL, (sender) => {
        if (!this.#notifier.sentHere(sender)) onReady();
      });
      return async () => {
        stopHere();
        await unlisten();
      };
    } catch (error) {
      stopHere();
      throw error;
    }
  }

  /** A cancel drops a running stage's lease and announces its token (Notifier.stageRevoked) once committed. */
  listenForRevoked(onRevoked: (leaseTokens: readonly number[]) => void): Promise<() => Promise<void>> {
    return this.#store.listen(STAGE_REVOKED_CHANNEL, (payload) => {
      const token = Number(payload);
      if (Number.isSafeInteger(token)) onRevoked([token]);
    });
  }

  async claim(owner: string, limit: number, leaseMs: number): Promise<StageClaim[]> {
    const claimed = await claimStages(this.#db, owner, limit, leaseMs);
    // The plan as claimed: each run's first write is the shared one-statement write, not a locked read and write.
    for (const { claim, plan } of claimed) this.#written.set(claim, plan);
    return claimed.map(({ claim }) => claim);
  }

  renew(tokens: readonly number[], leaseMs: number): Promise<ReadonlySet<number>> {
    return renewLeases(this.#db, tokens, leaseMs);
  }

  async record(claim: StageClaim, change: StageChange, options: { chainFor?: { owner: string; leaseMs: number } } = {}): Promise<StageWrite> {
    const transition = transitionFor(claim.position, change);
    let saved: SaveResult | "unchanged" | { stray: SaveResult };
    try {
      saved = await this.#write(claim, transition, options.chainFor);
    } catch (error) {
      // What was remembered may or may not have been written: read the plan afresh next time.
      this.#written.delete(claim);
      if (error instanceof LeaseLostError) return "lost";
      throw error;
    }
    if (saved === "unchanged") return "unchanged";
    if ("stray" in saved) {
      this.#written.delete(claim);
      this.#announce(saved.stray);
      return "lost";
    }
    this.#announce(saved);
    if (!saved.claimed) return "written";
    const next = claimOf(saved.plan, saved.claimed.position, saved.claimed.leaseToken);
    this.#written.set(next, saved.plan);
    return { next };
  }

  /**
   * Applies a transition to the plan of a run under its fencing token: in the
   * shared statement when the plan is as the run last saw it, else under the
   * plan's lock. With `chainFor`, a stage the transition makes ready
   * is claimed for that owner in the same write. A run on a plan that is
   * over writes only that its stage stopped (`stray`), and has lost.
   */
  async #write(
    claim: StageClaim,
    transition: (plan: PlanState) => PlanState,
    chainFor: ClaimFor | undefined,
  ): Promise<SaveResult | "unchanged" | { stray: SaveResult }> {
    // The common case, one statement shared with other runs' writes: nothing else touched the plan since this run last wrote it.
    const cached = this.#written.get(claim);
    if (cached && !isOver(cached)) {
      const after = transition(cached);
      if (after === cached) return "unchanged";
      const written = await this.#runWrites.submit({ before: cached, after, position: claim.position, claimFor: chainFor });
      if (written instanceof FailedRunWrite) throw written.error;
      if (written === "lost") throw new LeaseLostError("lease lost");
      if (written !== "moved") {
        this.#written.set(claim, written.plan);
        return written;
      }
    }
    const saved = await this.#db.transaction().execute(async (trx) => {
      const before = await loadPlan(trx, claim.planId, { forUpdate: true });
      const stage = before?.stages[claim.position];
      if (!before || stage?.leaseToken !== claim.leaseToken) throw new LeaseLostError("lease lost");
      const fence = { position: claim.position, live: true };
      if (isOver(before)) return { stray: await savePlan(trx, before, strayRunStopped(before, claim.position), { fence }) };
      const after = transition(before);
      if (after === before) return "unchanged";
      return savePlan(trx, before, after, { fence, claimFor: chainFor });
    });
    if (saved === "unchanged") this.#written.delete(claim);
    else if (!("stray" in saved)) this.#written.set(claim, saved.plan);
    return saved;
  }

  /**
   * Interrupts the plans of stages whose lease expired and, at most once an
   * hour, forgets the generation counts of windows long past
   * (pruneGenerationCounts): the reaper runs on every instance, so the
   * counters need no timer of their own.
   */
  async interruptExpired(limit: number): Promise<InterruptedStage[]> {
    const interrupted: InterruptedStage[] = [];
    for (const lease of await findExpiredLeases(this.#db, limit)) {
      const saved = await this.#db
        .transaction()
        .execute(async (trx) => {
          const before = await loadPlan(trx, lease.planId, { forUpdate: true });
          const stage = before?.stages[lease.position];
          if (!before || stage?.leaseToken !== lease.leaseToken || stage.state !== "running") return undefined;
          const fence = { position: lease.position, live: false };
          // A plan that is over is not interrupted: its stray stage only stops.
          if (isOver(before)) return { stray: await savePlan(trx, before, strayRunStopped(before, lease.position), { fence }) };
          return savePlan(trx, before, stageInterrupted(before, lease.position), { fence });
        })
        .catch((error: unknown) => {
          if (error instanceof LeaseLostError) return undefined;
          throw error;
        });
      if (!saved) continue;
      if ("stray" in saved) {
        this.#announce(saved.stray);
        continue;
      }
      this.#announce(saved);
      const { plan } = saved;
      interrupted.push({ planId: plan.id, position: lease.position, stageId: plan.stages[lease.position]?.id ?? "", outcome: plan.outcome });
    }
    if (Date.now() - this.#lastPrune > 3600_000) {
      this.#lastPrune = Date.now();
      await pruneGenerationCounts(this.#db);
    }
    return interrupted;
  }

  isUnavailable(error: unknown): boolean {
    return isDatabaseDown(error);
  }

  isUnstorable(error: unknown): boolean {
    return isUnstorableText(error);
  }

  flush(): Promise<void> {
    return this.#notifier.flush();
  }

  #announce(saved: SaveResult): void {
    this.#notifier.planChanged(saved.plan.id);
    if (saved.wake) this.#notifier.stageReady();
  }
}

/** The plan transition a run's change stands for. */
function transitionFor(position: number, change: StageChange): (plan: PlanState) => PlanState {
  switch (change.kind) {
    case "progress":
      return (plan) => {
        const next = stageProgressed(plan, position, change.fraction);
        const stage = plan.stages[position];
        const moved = next.stages[position];
        // Only whole percentage points of the stage are worth a write and a notification.
        return !stage || !moved || stageProgress(moved) === stageProgress(stage) ? plan : next;
      };
    case "succeeded":
      return (plan) => stageSucceeded(plan, position, change.outcome);
    case "failed":
      return (plan) => stageFailed(plan, position, change.error);
    case "retrying":
      return (plan) => stageRetrying(plan, position, change.error, change.waitMs);
    case "released":
      return (plan) => stageReleased(plan, position);
  }
}

/** A run write that failed on its own, answered as its result so that the other writes of its batch keep theirs. */
class FailedRunWrite {
  constructor(readonly error: unknown) {}
}

/**
 * saveRunWrites, with any second write of one plan in the batch answered
 * "moved" (the locked path writes it after the first). A batch that
 * deadlocks with another multi-row write (a lease renewal locking the same
 * stage rows in another order) wrote nothing, and every write in it takes
 * the locked path. A batch holding text Postgres refused wrote nothing
 * either: only the write whose own text is refused (a NUL in its output)
 * fails, never the runs of other plans that finished at the same moment,
 * whose writes are sent again one by one, nor a later write of its own plan,
 * which is "moved" as ever.
 */
async function writeOncePerPlan(db: Kysely<Database>, writes: RunWrite[]): Promise<(RunWriteResult | FailedRunWrite)[]> {
  const seen = new Set<string>();
  const first = writes.filter((w) => !seen.has(w.after.id) && seen.add(w.after.id));
  let results: (RunWriteResult | FailedRunWrite)[];
  try {
    results = await saveRunWrites(db, first);
  } catch (error) {
    if (isConflict(error)) return writes.map(() => "moved");
    if (!isUnstorableText(error)) throw error;
    // A lone write is known to be the refused one: no need to send it again.
    if (first.length === 1) results = [new FailedRunWrite(error)];
    else {
      results = [];
      for (const write of first) results.push(await writeAlone(db, write));
    }
  }
  const byWrite = new Map(first.map((w, i) => [w, results[i]!]));
  return writes.map((w) => byWrite.get(w) ?? "moved");
}

async function writeAlone(db: Kysely<Database>, write: RunWrite): Promise<RunWriteResult | FailedRunWrite> {
  try {
    const [result] = await saveRunWrites(db, [write]);
    return result!;
  } catch (error) {
    return isConflict(error) ? "moved" : new FailedRunWrite(error);
  }
}
