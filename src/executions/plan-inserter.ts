import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { insertPlansWithinLimit, type GenerationWindow, type InsertResult, type NewPlan } from "./plan-repository.js";

interface Waiting {
  plan: NewPlan;
  resolve: (result: InsertResult) => void;
  reject: (error: unknown) => void;
}

export interface PlanInserterOptions {
  /** Insert statements running at once; creates beyond them wait and go together in the next. */
  maxInFlight?: number;
  /** Most plans in one statement. */
  maxBatch?: number;
}

/**
 * Where creates meet the database. A create is sent at once while fewer
 * than `maxInFlight` inserts are running, so a lone create never waits;
 * under load, the creates that arrive meanwhile go together as one
 * statement (`insertPlansWithinLimit`) when a slot frees up: one query
 * written, planned and answered for many plans. Measured with 32 clients of
 * 32 accounts on 2 cores: about 1,500 creates/s instead of 950. Each plan
 * is still counted and inserted as if alone; a failed statement fails only
 * the creates it carried, and writes none of them. Creates of one account
 * share a statement too (a service integrating with one key is the common
 * case): its counter row grants them what is left of the limit at once.
 */
export class PlanInserter {
  readonly #db: Kysely<Database>;
  readonly #window: GenerationWindow;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  #waiting: Waiting[] = [];
  #inFlight = 0;
  /** Statements sent so far (tests check that concurrent creates share them). */
  statements = 0;

  constructor(db: Kysely<Database>, window: GenerationWindow, options: PlanInserterOptions = {}) {
    this.#db = db;
    this.#window = window;
    this.#maxInFlight = options.maxInFlight ?? 4;
    this.#maxBatch = options.maxBatch ?? 64;
  }

  insert(plan: NewPlan): Promise<InsertResult> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ plan, resolve, reject });
      this.#send();
    });
  }

  #send(): void {
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const batch = this.#takeBatch();
      this.#inFlight++;
      this.statements++;
      insertPlansWithinLimit(
        this.#db,
        batch.map((w) => w.plan),
        this.#window,
      )
        .then(
          (results) => {
            for (const [i, w] of batch.entries()) w.resolve(results[i]!);
          },
          (error: unknown) => {
            for (const w of batch) w.reject(error);
          },
        )
        .finally(() => {
          this.#inFlight--;
          this.#send();
        });
    }
  }

  /** The oldest waiting creates, of any accounts; the others keep their place. */
  #takeBatch(): Waiting[] {
    return this.#waiting.splice(0, this.#maxBatch);
  }
}
