import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../observability/logger.js";
import { ServiceError } from "../server/errors.js";

const DAY_MS = 86_400_000;
const NOTIFY_CHANNEL = "zero_free_pool";
/** Payload of an instance's answer to a dry one: `in_flight:<day>:<instance>`. */
const IN_FLIGHT_PREFIX = "in_flight:";
/** How long a dry instance waits for others to give units back or say they hold some in flight (by default). */
const ASK_WAIT_MS = 100;
/** How long a dry pool is believed dry before the database is asked again. */
const DRY_RECHECK_MS = 250;

export interface FreePoolOptions {
  db: Kysely<Database>;
  /** Units per UTC day across every instance (`ZERO_FREE_POOL_DAILY_REQUESTS`). */
  capacity: number;
  logger: Logger;
  /**
   * Subscribes to a NOTIFY channel (`Store.listen`). With it, an instance that
   * finds the pool dry asks the others to give back the units they hold idle.
   */
  listen?: (channel: string, onPayload: (payload: string) => void) => Promise<() => Promise<void>>;
  /** Largest block one reservation may take. */
  maxBlock?: number;
  /** Units held this long without a request are given back. */
  idleReturnMs?: number;
  /** How long a dry instance waits for the others' answers before it refuses. */
  askWaitMs?: number;
  now?: () => number;
}

/**
 * The shared free pool. The bound lives in one row per UTC day (`granted`
 * never exceeds capacity, checked under the row lock), but requests do not
 * touch it: each instance reserves a block of units and spends them from
 * memory, refilling ahead of need. Blocks grow while they are spent quickly
 * and never exceed a quarter of what is left, so near the end of the day's
 * capacity they shrink to one unit and no instance sits on the last ones.
 * Unused units go back when the instance is idle, stops, or another instance
 * runs dry. An instance that dies loses what it holds until the day ends (at
 * most its newest block and the quarter of the one before that triggered it):
 * the row counts only what is granted, not who holds it, and an instance that
 * looks dead may still be spending. The pool errs on the side of serving
 * fewer, never more.
 */
export class FreePool {
  readonly #db: Kysely<Database>;
  readonly #capacity: number;
  readonly #logger: Logger;
  readonly #maxBlock: number;
  readonly #idleReturnMs: number;
  readonly #askWaitMs: number;
  readonly #now: () => number;
  readonly #listen: FreePoolOptions["listen"];

  /** The day the units in hand belong to, and when it began (ms). */
  #day = "";
  #dayStartsAt = -Infinity;
  #available = 0;
  #block = 1;
  /** Capacity minus granted, as last read from the row. */
  #remaining: number;
  #lastReservationAt = 0;
  #lastTakeAt = 0;
  #dryAt = -Infinity;
  #reserving: Promise<number> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #returning = new Set<Promise<void>>();
  #reservations = 0;
  /** Units taken for requests whose upstream has not yet answered: each may still come back. */
  #inFlight = 0;
  /** Whether the last dry verdict heard of units in flight on other instances (retry soon). */
  #othersInFlight = false;
  /** When another instance last said it holds units in flight, for the day `#day`. */
  #othersInFlightAt = -Infinity;
  /** Tells this instance's own notifications from the others'. */
  readonly #token = randomBytes(6).toString("hex");

  constructor(options: FreePoolOptions) {
    this.#db = options.db;
    this.#capacity = options.capacity;
    this.#logger = options.logger;
    this.#maxBlock = options.maxBlock ?? 1024;
    this.#idleReturnMs = options.idleReturnMs ?? 5_000;
    this.#askWaitMs = options.askWaitMs ?? ASK_WAIT_MS;
    this.#now = options.now ?? Date.now;
    this.#listen = options.listen;
    this.#remaining = options.capacity;
  }

  /** Starts the idle give-back and listens for other instances running dry. */
  async start(): Promise<void> {
    this.#timer = setInterval(() => this.#returnIfIdle(), Math.max(50, Math.floor(this.#idleReturnMs / 2)));
    this.#timer.unref();
    if (this.#listen) {
      this.#unlisten = await this.#listen(NOTIFY_CHANNEL, (payload) => {
        if (payload.startsWith(IN_FLIGHT_PREFIX)) {
          if (payload === `${IN_FLIGHT_PREFIX}${this.#day}:${this.#token}`) return;
          if (payload.startsWith(`${IN_FLIGHT_PREFIX}${this.#day}:`)) this.#othersInFlightAt = this.#now();
          return;
        }
        if (payload !== this.#day) return;
        if (this.#available > 0) this.#giveBack(this.#available);
        // The asker must not call the day spent while units here may still come back.
        if (this.#inFlight > 0) void this.#notify(`${IN_FLIGHT_PREFIX}${payload}:${this.#token}`);
      });
    }
  }

  /** Deletes the rows of days before yesterday (a request counted before midnight may still give its unit back after it). */
  sweep(): Promise<number> {
    return deletePastDays(this.#db, "chat_free_pool", this.#now());
  }

  /** Gives back every unit in hand; called on shutdown. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#unlisten?.().catch(() => {});
    await this.#reserving?.catch(() => 0);
    if (this.#available > 0) this.#giveBack(this.#available);
    await Promise.all(this.#returning);
  }

  /**
   * Takes one unit for a request about to be served; `settle` must follow.
   * Usually answered from memory; waits on the database only when the
   * instance holds none. Throws `zero_capacity_unavailable`: `exhausted`
   * when the day's capacity is spent, or `in_flight` (retry in a second) when
   * the rest is held by requests still waiting on an upstream, any of which
   * may fail and give its unit back.
   */
  async take(): Promise<void> {
    const now = this.#now();
    for (let asked = false; ; ) {
      if (this.tryTake()) return;
      if (this.#now() - this.#dryAt < DRY_RECHECK_MS) throw this.#dry(now);
      const granted = await this.#reserve(this.#day);
      if (granted > 0 || this.#available > 0) continue;
      if (asked || !this.#listen) {
        this.#dryAt = this.#now();
        this.#othersInFlight = this.#now() - this.#othersInFlightAt < DRY_RECHECK_MS + this.#askWaitMs;
        throw this.#dry(now);
      }
      // Dry here; others may hold idle units, or units in flight. Ask once, give them a moment, look again.
      asked = true;
      await this.#notify(this.#day);
      await new Promise((resolve) => setTimeout(resolve, this.#askWaitMs));
    }
  }

  /**
   * Takes one unit from those this instance holds, without waiting: false
   * when it holds none and `take` must go to the database. The request path
   * calls this first, so a request served from memory never awaits the pool.
   */
  tryTake(): boolean {
    const now = this.#now();
    this.#lastTakeAt = now;
    const day = this.#rollover(now);
    if (this.#available === 0) return false;
    this.#available--;
    this.#inFlight++;
    if (this.#available <= this.#block >> 2 && !this.#reserving && this.#remaining > 0) {
      this.#reserve(day).catch((error: unknown) => this.#logger.warn({ err: error }, "free pool prefetch failed"));
    }
    return true;
  }

  /**
   * Settles a unit taken by `take` or `tryTake`. `spent` once an upstream has answered
   * 2xx: the unit stays spent even if the answer then breaks, since the pool
   * bounds what upstreams are asked to produce. Otherwise (no upstream
   * accepted) it comes back for the next request.
   */
  settle(outcome: "spent" | "refunded"): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (outcome === "refunded" && this.#day === utcDay(this.#now())) this.#available++;
  }

  #dry(now: number): ServiceError {
    return this.#inFlight > 0 || this.#othersInFlight ? inFlight(now) : exhausted(now);
  }

  #notify(payload: string): Promise<unknown> {
    return sql`select pg_notify(${NOTIFY_CHANNEL}, ${payload})`.execute(this.#db).catch((error: unknown) => {
      this.#logger.warn({ err: error }, "free pool notification failed");
    });
  }

  /** Units this instance holds unspent (for tests and metrics). */
  get held(): number {
    return this.#available;
  }

  /** Reservations made against the shared row: far fewer than requests served (for tests and metrics). */
  get reservations(): number {
    return this.#reservations;
  }

  #rollover(now: number): string {
    // Most calls fall inside the day already known; formatting a date on each is measurable.
    if (now >= this.#dayStartsAt && now < this.#dayStartsAt + DAY_MS) return this.#day;
    const day = utcDay(now);
    this.#dayStartsAt = Math.floor(now / DAY_MS) * DAY_MS;
    if (day !== this.#day) {
      // Yesterday's units are worthless today; nothing to give back.
      this.#day = day;
      this.#available = 0;
      this.#block = 1;
      this.#remaining = this.#capacity;
      this.#dryAt = -Infinity;
    }
    return day;
  }

  /** One reservation at a time; concurrent callers share its result. */
  #reserve(day: string): Promise<number> {
    this.#reserving ??= this.#reserveBlock(day).finally(() => {
      this.#reserving = undefined;
    });
    return this.#reserving;
  }

  async #reserveBlock(day: string): Promise<number> {
    const now = this.#now();
    // Blocks that last under a second double; blocks that sit for ten shrink.
    const since = now - this.#lastReservationAt;
    if (since < 1_000) this.#block = Math.min(this.#block * 2, this.#maxBlock);
    else if (since > 10_000) this.#block = Math.max(1, this.#block >> 1);
    this.#lastReservationAt = now;
    this.#reservations++;
    const want = Math.max(1, Math.min(this.#block, Math.floor(this.#remaining / 4)));

    // One upsert, a round trip: the row is locked while SET reads the old count, so
    // the grant is min(want, what is left) exactly; `last_grant` hands it back.
    const capacity = this.#capacity;
    const firstGrant = Math.min(want, capacity);
    const { rows } = await sql<{ granted: number; last_grant: number }>`
      INSERT INTO chat_free_pool AS pool (day, granted, last_grant, updated_at)
      VALUES (${day}, ${firstGrant}::int, ${firstGrant}::int, now())
      ON CONFLICT (day) DO UPDATE
        SET granted = pool.granted + least(excluded.granted, greatest(${capacity}::int - pool.granted, 0)),
            last_grant = least(excluded.granted, greatest(${capacity}::int - pool.granted, 0)),
            updated_at = now()
      RETURNING granted, last_grant`.execute(this.#db);
    const granted = Number(rows[0]!.last_grant);
    const remaining = capacity - Number(rows[0]!.granted);
    if (this.#day === day) {
      this.#available += granted;
      this.#remaining = remaining;
    } else if (granted > 0) {
      // The day turned while we waited: these units are of no use; free the row's count.
      await this.#returnUnits(day, granted);
    }
    return granted;
  }

  #returnIfIdle(): void {
    if (this.#available > 0 && !this.#reserving && this.#now() - this.#lastTakeAt >= this.#idleReturnMs) {
      this.#giveBack(this.#available);
    }
  }

  /** Gives units back: out of local hands at once, into the row as soon as it can. */
  #giveBack(count: number): void {
    this.#available -= count;
    this.#block = 1;
    const done = this.#returnUnits(this.#day, count).finally(() => this.#returning.delete(done));
    this.#returning.add(done);
  }

  async #returnUnits(day: string, count: number): Promise<void> {
    try {
      await this.#db
        .updateTable("chat_free_pool")
        .set({ granted: sql<number>`greatest(granted - ${count}, 0)`, updated_at: new Date() })
        .where("day", "=", day)
        .execute();
      this.#remaining += count;
    } catch (error) {
      // Lost units are only unserved requests; the bound still holds.
      this.#logger.warn({ err: error, count }, "could not give free pool units back");
    }
  }
}

/** Deletes a table's rows of days before yesterday, by their `day` (`YYYY-MM-DD`); answers how many. */
export async function deletePastDays(db: Kysely<Database>, table: "chat_free_pool" | "chat_account_days", now: number): Promise<number> {
  const result = await db
    .deleteFrom(table)
    .where("day", "<", utcDay(now - DAY_MS))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** `YYYY-MM-DD` of a UTC instant. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The next 00:00 UTC after `now`, in ms and as ISO-8601. */
export function nextUtcMidnight(now: number): { resetMs: number; resetAt: string } {
  const resetMs = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
  return { resetMs, resetAt: new Date(resetMs).toISOString().replace(".000Z", "Z") };
}

/**
 * The refusal while the rest of the day's units are held by requests still
 * waiting on an upstream: any may fail and give its unit back, so the client
 * is told to try again in a second, not at midnight.
 */
export function inFlight(now: number): ServiceError {
  const { resetAt } = nextUtcMidnight(now);
  return new ServiceError("zero_capacity_unavailable", "the shared free pool's last units are in use by requests in flight; try again in a moment", {
    capacityState: "in_flight",
    resetAt,
    headers: { "retry-after": "1", "x-should-retry": "true" },
  });
}

/** The refusal for a spent pool: when it refills, and not to retry before. */
export function exhausted(now: number): ServiceError {
  const { resetMs, resetAt } = nextUtcMidnight(now);
  return new ServiceError("zero_capacity_unavailable", `the shared free pool is spent for today; it refills at ${resetAt}`, {
    capacityState: "exhausted",
    resetAt,
    headers: {
      "retry-after": String(Math.max(1, Math.ceil((resetMs - now) / 1000))),
      // Tells the OpenAI SDKs not to spend their automatic retries on a wait of hours.
      "x-should-retry": "false",
    },
  });
}
