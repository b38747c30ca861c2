import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { StatementBatcher, type StatementBatcherOptions } from "../db/statement-batcher.js";
import type { GenerationWindow } from "./generation-limit.js";
import { insertPlansWithinLimit, type InsertResult, type NewPlan } from "./plan-repository.js";

/**
 * Where creates meet the database, group-committed (`StatementBatcher`):
 * under load, the creates that arrive while statements run go together as
 * one `insertPlansWithinLimit`. Measured with 32 clients of 32 accounts on 2
 * cores: about 1,500 creates/s instead of 950. Each plan is still counted and
 * inserted as if alone; a failed statement fails only the creates it
 * carried, and writes none of them. Creates of one account share a statement
 * too (a service integrating with one key is the common case): its counter
 * row grants them what is left of the limit at once.
 */
export class PlanInserter {
  readonly #batcher: StatementBatcher<NewPlan, InsertResult>;

  constructor(db: Kysely<Database>, window: GenerationWindow, options: StatementBatcherOptions = {}) {
    this.#batcher = new StatementBatcher((plans) => insertPlansWithinLimit(db, plans, window), options);
  }

  /** Statements sent so far (tests check that concurrent creates share them). */
  get statements(): number {
    return this.#batcher.statements;
  }

  insert(plan: NewPlan): Promise<InsertResult> {
    return this.#batcher.submit(plan);
  }
}
