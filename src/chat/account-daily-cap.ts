import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import { ServiceError } from "../server/errors.js";
import { deletePastDays, nextUtcMidnight, utcDay } from "./free-pool.js";

/**
 * `ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT`: how many chat requests one account
 * may have served per UTC day, so that one key cannot drain the free pool the
 * stage writers also draw on. One conditional upsert per request, exact under
 * any concurrency and across instances; like a pool unit, a request no
 * upstream accepted gives its count back.
 *
 * So a request counted is not yet served: while this instance holds some of
 * the account's requests in flight, a refusal says to retry in a second
 * (they may fail and give their counts back), as the pool's `in_flight`
 * does; only with none in flight here is the day used up. Requests in flight
 * on other instances are not seen: their refusal reads as the day's end.
 */
export class AccountDailyCap {
  readonly #db: Kysely<Database>;
  readonly #limit: number;
  readonly #now: () => number;
  /** Requests counted on this instance and not yet settled, by account. */
  readonly #inFlight = new Map<string, number>();

  constructor(db: Kysely<Database>, limit: number, now: () => number = Date.now) {
    this.#db = db;
    this.#limit = limit;
    this.#now = now;
  }

  /**
   * Counts one request for the account, or throws `rate_limited` when its day
   * is used up (or, while some of its requests are in flight here, to retry in
   * a second). Returns the day counted; `settle` it once the request is answered.
   */
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
    if (counted && counted.requests <= this.#limit) {
      this.#inFlight.set(accountId, (this.#inFlight.get(accountId) ?? 0) + 1);
      return day;
    }
    if (counted) await this.#give(accountId, day);
    if (this.#inFlight.has(accountId)) {
      throw new ServiceError("rate_limited", `this account's last chat requests for today are still being answered; try again in a moment`, {
        headers: { "retry-after": "1", "x-should-retry": "true" },
      });
    }
    const { resetMs, resetAt } = nextUtcMidnight(now);
    throw new ServiceError("rate_limited", `this account has used its ${this.#limit} chat requests for today; the count resets at ${resetAt}`, {
      resetAt,
      headers: { "retry-after": String(Math.max(1, Math.ceil((resetMs - now) / 1000))), "x-should-retry": "false" },
    });
  }

  /**
   * A request `take` counted is over: "spent" when its answer was served,
   * "refunded" (its count given back) when none was. It stays in flight
   * until the count is back, so no request in between is told the day is over.
   */
  async settle(accountId: string, day: string, how: "spent" | "refunded"): Promise<void> {
    try {
      if (how === "refunded") await this.#give(accountId, day);
    } finally {
      const left = (this.#inFlight.get(accountId) ?? 1) - 1;
      if (left > 0) this.#inFlight.set(accountId, left);
      else this.#inFlight.delete(accountId);
    }
  }

  /** Deletes the counts of days before yesterday (see FreePool.sweep), so the table keeps a row per account in use, not per account and day. */
  sweep(): Promise<number> {
    return deletePastDays(this.#db, "chat_account_days", this.#now());
  }

  async #give(accountId: string, day: string): Promise<void> {
    await this.#db
      .updateTable("chat_account_days")
      .set({ requests: sql`greatest(requests - 1, 0)` })
      .where("account_id", "=", accountId)
      .where("day", "=", day)
      .execute();
  }
}
