import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AccountDailyCap } from "../../src/chat/account-daily-cap.js";
import { FreePool, utcDay } from "../../src/chat/free-pool.js";
import { ServiceError } from "../../src/server/errors.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});

afterAll(async () => {
  await app?.close();
});

/** A pool over the app's database, as a second instance of the service would have. */
function pool(capacity: number, options: Partial<ConstructorParameters<typeof FreePool>[0]> = {}): FreePool {
  return new FreePool({
    db: app.store.db,
    capacity,
    logger: app.logger,
    listen: (channel, onPayload) => app.store.listen(channel, onPayload),
    ...options,
  });
}

async function granted(day: string): Promise<number> {
  const row = await app.store.db.selectFrom("chat_free_pool").select("granted").where("day", "=", day).executeTakeFirst();
  return row?.granted ?? 0;
}

/** A request served: a unit taken, and its upstream answered. */
function serve(p: FreePool): Promise<void> {
  return p.take().then(() => p.settle("spent"));
}

async function outcomes(takes: Promise<void>[]): Promise<{ served: number; refused: ServiceError[] }> {
  const settled = await Promise.allSettled(takes);
  const refused = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as ServiceError] : []));
  return { served: settled.length - refused.length, refused };
}

describe("the free pool", () => {
  it("serves exactly the capacity, then refuses with capacity_state, reset_at and Retry-After", async () => {
    let now = Date.parse("2031-03-04T22:00:00Z");
    const p = pool(5, { now: () => now });
    await p.start();
    for (let i = 0; i < 5; i++) await serve(p);
    const error = await serve(p).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    const refusal = error as ServiceError;
    expect(refusal.type).toBe("zero_capacity_unavailable");
    expect(refusal.status).toBe(429);
    expect(refusal.detail.capacityState).toBe("exhausted");
    expect(refusal.detail.resetAt).toBe("2031-03-05T00:00:00Z");
    expect(refusal.metadata.get("retry-after")).toBe(String(2 * 3600));
    expect(await granted("2031-03-04")).toBe(5);

    // A new UTC day is a full pool again.
    now = Date.parse("2031-03-05T00:00:01Z");
    await serve(p);
    await p.stop();
    expect(await granted("2031-03-05")).toBe(1);
  });

  it("two instances on one database never serve more than the capacity, and give back what they did not use", async () => {
    const now = Date.parse("2031-04-01T12:00:00Z");
    // B waits long for A's give-back: the NOTIFY and A's UPDATE take their time on a loaded machine.
    const a = pool(40, { now: () => now });
    const b = pool(40, { now: () => now, askWaitMs: 2000 });
    await a.start();
    await b.start();
    const takes: Promise<void>[] = [];
    for (let i = 0; i < 150; i++) takes.push((i % 2 === 0 ? a : b).take());
    const { served, refused } = await outcomes(takes);
    expect(served).toBeLessThanOrEqual(40);
    expect(served).toBeGreaterThan(0);
    expect(refused.every((e) => e.type === "zero_capacity_unavailable")).toBe(true);
    expect(await granted(utcDay(now))).toBeLessThanOrEqual(40);
    await a.stop();
    await b.stop();
    // Every unit not served went back: the row counts exactly what was served.
    expect(await granted(utcDay(now))).toBe(served);
  });

  it("instances racing for a fresh day's first units are granted exactly what the row counts", async () => {
    const now = Date.parse("2031-04-02T12:00:00Z");
    // Big blocks, so most reservations are refused in part: each must learn exactly what it got.
    const pools = Array.from({ length: 6 }, () => pool(100, { now: () => now, maxBlock: 64 }));
    await Promise.all(pools.map((p) => p.start()));
    const { served } = await outcomes(pools.flatMap((p) => Array.from({ length: 30 }, () => p.take())));
    expect(served).toBeGreaterThan(0);
    expect(served).toBeLessThanOrEqual(100);
    const held = pools.reduce((sum, p) => sum + p.held, 0);
    expect(await granted(utcDay(now))).toBe(served + held);
    await Promise.all(pools.map((p) => p.stop()));
    expect(await granted(utcDay(now))).toBe(served);
  });

  it("reserves in growing blocks, so the shared row is not touched once per request", async () => {
    const now = Date.parse("2031-05-01T12:00:00Z");
    const p = pool(100_000, { now: () => now });
    await p.start();
    for (let round = 0; round < 10; round++) {
      await Promise.all(Array.from({ length: 50 }, () => serve(p)));
    }
    expect(p.reservations).toBeLessThan(50);
    await p.stop();
    expect(await granted(utcDay(now))).toBe(500);
  });

  it("an instance that runs dry asks the others for their spare units (NOTIFY), so the last of the capacity is usable", async () => {
    const now = Date.parse("2031-06-01T12:00:00Z");
    // A frozen clock: A never counts as idle, so only the request to give back can free its units.
    // B waits long for A's give-back: the NOTIFY and A's UPDATE take their time on a loaded machine.
    const a = pool(40, { now: () => now });
    const b = pool(40, { now: () => now, askWaitMs: 2000 });
    await a.start();
    await b.start();
    // A warms up to blocks larger than one and holds the spare units.
    for (let i = 0; i < 3; i++) await Promise.all([serve(a), serve(a), serve(a), serve(a)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(a.held).toBeGreaterThan(0);
    // B can still get every unit A did not spend.
    let servedByB = 0;
    while (servedByB < 40) {
      const ok = await serve(b).then(
        () => true,
        () => false,
      );
      if (!ok) break;
      servedByB++;
    }
    expect(servedByB).toBe(40 - 12);
    expect(a.held).toBe(0);
    await a.stop();
    await b.stop();
    expect(await granted(utcDay(now))).toBe(40);
  });

  it("the hourly sweep deletes the pool's and the accounts' counts of days before yesterday, and keeps yesterday's and today's", async () => {
    const now = Date.parse("2020-03-10T00:30:00Z");
    const days = ["2020-03-07", "2020-03-08", "2020-03-09", "2020-03-10"];
    const { db } = app.store;
    const { accountId } = await createAccountWithKey(app, ["chat"]);
    await db
      .insertInto("chat_free_pool")
      .values(days.map((day) => ({ day, granted: 5, last_grant: 5, updated_at: new Date(now) })))
      .execute();
    await db
      .insertInto("chat_account_days")
      .values(days.map((day) => ({ account_id: accountId, day, requests: 3 })))
      .execute();
    expect(await pool(100, { now: () => now }).sweep()).toBe(2);
    expect(await new AccountDailyCap(db, 10, () => now).sweep()).toBe(2);
    const poolDays = await db.selectFrom("chat_free_pool").select("day").where("day", "in", days).orderBy("day").execute();
    expect(poolDays.map((row) => row.day)).toEqual(["2020-03-09", "2020-03-10"]);
    const accountDays = await db.selectFrom("chat_account_days").select("day").where("account_id", "=", accountId).orderBy("day").execute();
    expect(accountDays.map((row) => row.day)).toEqual(["2020-03-09", "2020-03-10"]);
  });

  it("units in hand at midnight are not served the next day: the new day's first request takes a unit of the new day's row", async () => {
    let now = Date.parse("2032-01-01T23:59:59Z");
    const p = pool(100, { now: () => now });
    await p.start();
    for (let i = 0; i < 4; i++) await serve(p);
    expect(p.held).toBeGreaterThan(0);
    now = Date.parse("2032-01-02T00:00:01Z");
    await serve(p);
    expect(await granted("2032-01-02")).toBeGreaterThanOrEqual(1);
    await p.stop();
  });

  it("reserves at most a quarter of what is left, so a crashed instance takes little of the day's last units with it", async () => {
    const now = Date.parse("2032-02-01T12:00:00Z");
    // Each reservation as the row answered it (granted after it, and its own grant), read from the pool's own
    // statements: a prefetch runs beside the requests, so two could fall between any two reads of the row.
    const reservations: { granted: number; grant: number }[] = [];
    const db = app.store.db.withPlugin({
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        for (const row of result.rows as { granted?: unknown; last_grant?: unknown }[]) {
          if (row.last_grant !== undefined) reservations.push({ granted: Number(row.granted), grant: Number(row.last_grant) });
        }
        return result;
      },
    });
    const p = pool(40, { db, now: () => now });
    await p.start();
    for (let i = 0; i < 30; i++) await serve(p);
    await p.stop();
    expect(reservations.length).toBeGreaterThan(3);
    for (const { granted, grant } of reservations) {
      const leftBefore = 40 - (granted - grant);
      expect(grant, JSON.stringify(reservations)).toBeLessThanOrEqual(Math.max(1, Math.floor(leftBefore / 4)));
    }
  });

  it("gives units back after a while without requests", async () => {
    const start = Date.parse("2031-06-02T12:00:00Z");
    const t0 = Date.now();
    const p = pool(1000, { now: () => start + (Date.now() - t0), idleReturnMs: 100 });
    await p.start();
    for (let i = 0; i < 4; i++) await Promise.all([serve(p), serve(p)]);
    expect(await granted(utcDay(start))).toBeGreaterThan(8);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(p.held).toBe(0);
    expect(await granted(utcDay(start))).toBe(8);
    await p.stop();
  });

  it("tryTake spends only units already in hand, counted exactly as take's", async () => {
    const p = pool(100, { now: () => Date.parse("2032-01-15T12:00:00Z") });
    await p.start();
    // Nothing in hand before the first reservation: the caller must take() and wait.
    expect(p.tryTake()).toBe(false);
    await p.take();
    // Taking the first unit set off a reservation of the next block.
    await vi.waitFor(() => expect(p.held).toBeGreaterThan(0));
    const held = p.held;
    let taken = 0;
    while (p.tryTake()) taken++;
    expect(taken).toBe(held);
    for (let i = 0; i <= taken; i++) p.settle("spent");
    await p.stop();
    // What was spent stays granted; what the last prefetch brought went back.
    expect(await granted("2032-01-15")).toBe(taken + 1);
  });

  it("a refunded unit is served again", async () => {
    const p = pool(1, { now: () => Date.parse("2031-07-01T12:00:00Z") });
    await p.start();
    await p.take();
    p.settle("refunded");
    await serve(p);
    await expect(serve(p)).rejects.toMatchObject({ type: "zero_capacity_unavailable" });
    await p.stop();
  });

  it("while the last units are held by requests in flight, a refusal says to retry in a second, not at midnight", async () => {
    const p = pool(2, { now: () => Date.parse("2031-08-01T12:00:00Z") });
    await p.start();
    await p.take();
    await p.take();
    const busy = (await p.take().catch((e: unknown) => e)) as ServiceError;
    expect(busy.type).toBe("zero_capacity_unavailable");
    expect(busy.detail.capacityState).toBe("in_flight");
    expect(busy.metadata.get("retry-after")).toBe("1");
    expect(busy.metadata.get("x-should-retry")).toBe("true");
    // One of them fails upstream: its unit serves the next request at once.
    p.settle("refunded");
    await serve(p);
    p.settle("spent");
    const spent = (await p.take().catch((e: unknown) => e)) as ServiceError;
    expect(spent.detail.capacityState).toBe("exhausted");
    expect(spent.metadata.get("x-should-retry")).toBe("false");
    await p.stop();
  });

  it("an instance that runs dry hears from the others that units are still in flight there", async () => {
    const start = Date.parse("2031-08-02T12:00:00Z");
    const t0 = Date.now();
    const now = () => start + (Date.now() - t0);
    // B waits long for A's answer (two NOTIFY hops), and believes it for that long and a dry pool's recheck after.
    const askWaitMs = 1000;
    const a = pool(2, { now });
    const b = pool(2, { now, askWaitMs });
    await a.start();
    await b.start();
    await a.take();
    await a.take();
    const busy = (await b.take().catch((e: unknown) => e)) as ServiceError;
    expect(busy.detail.capacityState).toBe("in_flight");
    a.settle("spent");
    a.settle("spent");
    await new Promise((resolve) => setTimeout(resolve, askWaitMs + 300));
    const spent = (await b.take().catch((e: unknown) => e)) as ServiceError;
    expect(spent.detail.capacityState).toBe("exhausted");
    await a.stop();
    await b.stop();
  });
});
