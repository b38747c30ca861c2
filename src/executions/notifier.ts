import type { Kysely } from "kysely";
import { sql } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../observability/logger.js";
import { PLAN_CHANGED_CHANNEL, STAGE_READY_CHANNEL, STAGE_REVOKED_CHANNEL } from "./plan-repository.js";

/**
 * Sends the engine's NOTIFYs after the writes they announce have committed,
 * batched into one statement per tick. Why not inside the writing
 * transaction: Postgres serializes the commits of every transaction that
 * notifies (a database-wide lock held through the WAL flush), which capped
 * creates and stage transitions at one commit at a time. A statement that
 * only notifies writes nothing, so it commits without a flush. Delivery stays
 * best effort, as LISTEN/NOTIFY always was: watchers and workers also poll.
 *
 * "A stage is ready" carries no payload and wakes every idle worker, which
 * then claims until the queue is empty; so it is sent at most once per
 * `stageReadyEveryMs` (the last one trailing). Without that, a stream of
 * creates sent one NOTIFY statement, and one notification to every
 * listener, per plan.
 *
 * This instance's own engine hears "a stage is ready" at once, in process
 * (`onStageReadyHere`), and the NOTIFY names its sender so that the echo is
 * not acted on twice: a create's first stage starts one claim after the
 * commit, not after a NOTIFY's round trip and delivery.
 */
export class Notifier {
  readonly #db: Kysely<Database>;
  readonly #log: Logger;
  readonly #pending = new Map<string, Set<string>>();
  readonly #stageReadyEveryMs: number;
  readonly #sender: string;
  readonly #readyHere = new Set<() => void>();
  #flushing: Promise<void> | undefined;
  #scheduled = false;
  #stageReadySentAt = -Infinity;
  #stageReadyTimer: NodeJS.Timeout | undefined;

  /** `sender`: this instance's id, the payload of its "a stage is ready". */
  constructor(db: Kysely<Database>, logger: Logger, options: { stageReadyEveryMs?: number; sender?: string } = {}) {
    this.#db = db;
    this.#log = logger;
    this.#stageReadyEveryMs = options.stageReadyEveryMs ?? 5;
    this.#sender = options.sender ?? "";
  }

  /** A stage is waiting for a worker. Call once the write that made it ready has committed. */
  stageReady(): void {
    for (const onReady of this.#readyHere) onReady();
    if (this.#stageReadyTimer) return;
    const wait = this.#stageReadySentAt + this.#stageReadyEveryMs - performance.now();
    if (wait <= 0) {
      this.#queueStageReady();
      return;
    }
    this.#stageReadyTimer = setTimeout(() => {
      this.#stageReadyTimer = undefined;
      this.#queueStageReady();
    }, wait);
  }

  #queueStageReady(): void {
    this.#stageReadySentAt = performance.now();
    this.#add(STAGE_READY_CHANNEL, this.#sender);
  }

  /** Calls `onReady` whenever this notifier announces a ready stage, before the NOTIFY goes out; answers a function that stops. */
  onStageReadyHere(onReady: () => void): () => void {
    this.#readyHere.add(onReady);
    return () => this.#readyHere.delete(onReady);
  }

  /** True when a "stage is ready" payload is this notifier's own, already told in process. */
  sentHere(payload: string): boolean {
    return this.#sender !== "" && payload === this.#sender;
  }

  /** The runs holding these fencing tokens lost their stage (a cancel): engines stop them. */
  stageRevoked(leaseTokens: readonly number[]): void {
    for (const token of leaseTokens) this.#add(STAGE_REVOKED_CHANNEL, String(token));
  }

  /** Plan `planId` changed. */
  planChanged(planId: string): void {
    this.#add(PLAN_CHANGED_CHANNEL, planId);
  }

  /** Waits for everything queued so far to be sent, a held-back "stage ready" included. */
  async flush(): Promise<void> {
    if (this.#stageReadyTimer) {
      clearTimeout(this.#stageReadyTimer);
      this.#stageReadyTimer = undefined;
      this.#queueStageReady();
    }
    if (this.#scheduled) await this.#send();
    await this.#flushing;
  }

  #add(channel: string, payload: string): void {
    const set = this.#pending.get(channel) ?? new Set<string>();
    set.add(payload);
    this.#pending.set(channel, set);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => void this.#send());
  }

  async #send(): Promise<void> {
    // One batch in flight at a time; what arrives meanwhile goes in the next.
    await this.#flushing;
    this.#scheduled = false;
    const channels: string[] = [];
    const payloads: string[] = [];
    for (const [channel, set] of this.#pending) {
      for (const payload of set) {
        channels.push(channel);
        payloads.push(payload);
      }
    }
    this.#pending.clear();
    if (channels.length === 0) return;
    this.#flushing = sql`SELECT pg_notify(c, p)::text FROM unnest(${channels}::text[], ${payloads}::text[]) AS t(c, p)`
      .execute(this.#db)
      .then(() => undefined)
      .catch((error: unknown) => this.#log.warn({ err: error }, "could not send notifications; listeners will poll"))
      .finally(() => (this.#flushing = undefined));
    await this.#flushing;
  }
}
