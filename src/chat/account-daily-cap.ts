import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { ServiceError } from "../server/errors.js";
import { nextUtcMidnight, utcDay } from "./free-pool.js";

/**
 * `ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT`: how many chat requests one account
 * may have served per UTC day, so that one key cannot drain the free pool the
 * stage writers also draw on. One conditional upsert per request, exact under
 * any concurrency and across instances; like a pool unit, a request no
 * upstream accepted gives its count back.
 */
export class AccountDailyCap {
  readonly #db: Kysely<Database>;
  readonly #limit: number;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, limit: number, now: () => number = Date.now) {
    this.#db = db;
    this.#limit = limit;
    this.#now = now;
  }

  /** Counts one request for the account, or throws `rate_limited` when its day is used up. Returns the day counted. */
  async take(accountId: string): Promise<string> {
    const now = this.#now();
    const day = utcDay(now);
    const counted = await this.#db
      .insertInto("chat_account_days")
      .values({ account_id: accountId, day, requests: 1 })
      .onConflict((oc) =>
        oc.columns(["account_id", "day"]).doUpdateSet({ requests: sql`chat_account_days.requests + 1` }).where("chat_account_days.requests", "<", this.#limit),
      )
      .returning("requests")
      .executeTakeFirst();
    if (counted && counted.requests <= this.#limit) return day;
    if (counted) await this.give(accountId, day);
    const { resetMs, resetAt } = nextUtcMidnight(now);
    throw new ServiceError("rate_limited", `this account has used its ${this.#limit} chat requests for today; the count resets at ${resetAt}`, {
      resetAt,
      headers: { "retry-after": String(Math.max(1, Math.ceil((resetMs - now) / 1000))), "x-should-retry": "false" },
    });
  }

  /** Gives back a request counted on `day` that no upstream accepted. */
  async give(accountId: string, day: string): Promise<void> {
    await this.#db
      .updateTable("chat_account_days")
      .set({ requests: sql`greatest(requests - 1, 0)` })
      .where("account_id", "=", accountId)
      .where("day", "=", day)
      .execute();
  }
}
