import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../observability/logger.js";
import { RepeatingFailure } from "../observability/repeating-failure.js";

/**
 * Removes a deleted plan's files (previews, published site or book); the outcomes own where they are.
 * `last` when no stage of the plan can still write: what only a live plan needs may go too.
 */
export type RemovePlanFiles = (planId: string, known: { slug?: string; revisions: number }, sweep: { last: boolean }) => Promise<void>;

/**
 * A deleted plan's files are swept again after the delete's own removal: one lease later (its first
 * `sweep_at`; a stage still running then has stopped, or its lease has run out), and this long after the
 * delete, for a stage stuck in a write far longer than its lease. Its writes are not fenced by the lease,
 * so only a sweep after them removes them.
 */
const LATE_SWEEP_MS = 3600_000;
/** Deleted plans one sweep takes on; the next takes the rest. */
const SWEEP_BATCH = 20;

/** Records, in the delete's transaction, that `planId`'s files are to be swept after `firstSweepMs`. */
export async function recordDeletedPlan(
  trx: Transaction<Database>,
  planId: string,
  known: { slug?: string; revisions: number },
  firstSweepMs: number,
): Promise<void> {
  await trx
    .insertInto("deleted_plans")
    .values({ plan_id: planId, slug: known.slug ?? null, revisions: known.revisions, sweep_at: afterMs(firstSweepMs) })
    .onConflict((oc) => oc.column("plan_id").doNothing())
    .execute();
}

/** Forgets a deleted plan whose files were removed when no stage could still be writing them. */
export async function forgetDeletedPlan(db: Kysely<Database>, planId: string): Promise<void> {
  await db.deleteFrom("deleted_plans").where("plan_id", "=", planId).execute();
}

/**
 * Sweeps the files of deleted plans when they are due, on every instance
 * (the database's clock decides; the instance that claims a plan's sweep
 * does it): a delete's follow-up survives the restart of the instance that
 * took it. A plan's sweep that fails is tried again one lease later.
 */
export class DeletedPlanSweeper {
  readonly #db: Kysely<Database>;
  readonly #removeFiles: RemovePlanFiles;
  readonly #everyMs: number;
  readonly #log: Logger;
  readonly #failures: RepeatingFailure;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;

  constructor(options: { db: Kysely<Database>; removeFiles: RemovePlanFiles; leaseMs: number; logger: Logger }) {
    this.#db = options.db;
    this.#removeFiles = options.removeFiles;
    this.#everyMs = options.leaseMs;
    this.#log = options.logger.child({ component: "deleted-plans" });
    this.#failures = new RepeatingFailure(this.#log, "sweeping deleted plans' files");
  }

  start(): void {
    this.#timer = setInterval(() => this.#tick(), this.#everyMs).unref();
    this.#tick();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sweeping;
  }

  #tick(): void {
    this.#sweeping ??= this.sweep()
      .then(() => this.#failures.succeeded())
      .catch((error: unknown) => this.#failures.failed(error))
      .finally(() => (this.#sweeping = undefined));
  }

  /** Sweeps the deleted plans now due. */
  async sweep(): Promise<void> {
    // Claimed by moving their time on: another instance skips them meanwhile, and this one tries again then if it fails.
    const due = await this.#db
      .updateTable("deleted_plans")
      .set({ sweep_at: afterMs(this.#everyMs) })
      .where("plan_id", "in", (eb) =>
        eb
          .selectFrom("deleted_plans")
          .select("plan_id")
          .where("sweep_at", "<=", sql<Date>`now()`)
          .orderBy("sweep_at")
          .limit(SWEEP_BATCH)
          .forUpdate()
          .skipLocked(),
      )
      .returning(["plan_id", "slug", "revisions", "sweeps", "deleted_at"])
      .execute();
    let failure: unknown;
    for (const plan of due) {
      try {
        await this.#removeFiles(plan.plan_id, { slug: plan.slug ?? undefined, revisions: plan.revisions }, { last: plan.sweeps > 0 });
      } catch (error) {
        failure ??= error;
        continue;
      }
      if (plan.sweeps > 0) await forgetDeletedPlan(this.#db, plan.plan_id);
      else
        await this.#db
          .updateTable("deleted_plans")
          .set({ sweeps: 1, sweep_at: sql<Date>`deleted_at + make_interval(secs => ${LATE_SWEEP_MS / 1000}::float8)` })
          .where("plan_id", "=", plan.plan_id)
          .execute();
    }
    // Logged once per outage of the store (RepeatingFailure), not once per plan.
    if (failure !== undefined) throw failure;
  }
}

function afterMs(ms: number) {
  return sql<Date>`now() + make_interval(secs => ${ms / 1000}::float8)`;
}
