import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/db/database.js";
import { initialStages } from "../../src/executions/plan-transitions.js";
import { PlanInserter } from "../../src/executions/plan-inserter.js";
import type { NewPlan } from "../../src/executions/plan-repository.js";
import { startTestApp, type TestApp } from "../support/app.js";

let sequence = 0;
const plan = (accountId: string): NewPlan => ({
  id: `pln_ins${++sequence}_${Date.now()}`,
  accountId,
  goal: "A website for a small bakery",
  outcome: "website",
  stages: initialStages("website"),
});

describe("creates sent to the database together", () => {
  let app: TestApp;
  let store: Store;
  const accounts: string[] = [];
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0" } });
    store = app.store;
    for (let i = 0; i < 20; i++) {
      const id = `acc_ins${i}_${Date.now()}`;
      await store.db
        .insertInto("accounts")
        .values({ id, email: `${id}@example.test`, password_hash: "x" })
        .execute();
      accounts.push(id);
    }
  });
  afterAll(() => app.close());

  const planCount = async (accountId: string) =>
    Number(
      (
        await store.db
          .selectFrom("plans")
          .select((eb) => eb.fn.countAll().as("n"))
          .where("account_id", "=", accountId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it("inserts concurrent creates of many accounts in fewer statements, each plan with its stages", async () => {
    const inserter = new PlanInserter(store.db, { limit: 100, windowSeconds: 3600 }, { maxInFlight: 1 });
    const plans = accounts.map(plan);
    const results = await Promise.all(plans.map((p) => inserter.insert(p)));
    expect(inserter.statements).toBeLessThan(plans.length);
    expect(results.every((r) => r.createdAt instanceof Date && r.used === 1)).toBe(true);
    const stageRows = await store.db
      .selectFrom("plan_stages")
      .select("plan_id")
      .where(
        "plan_id",
        "in",
        plans.map((p) => p.id),
      )
      .execute();
    expect(stageRows).toHaveLength(plans.length * 6);
  });

  it("holds each account's limit exactly, whatever shares a statement", async () => {
    const limited = accounts.slice(0, 3);
    const before = await Promise.all(limited.map(planCount));
    const limit = 5 + Math.max(...before);
    const inserter = new PlanInserter(store.db, { limit, windowSeconds: 3600 }, { maxInFlight: 2 });
    // Twelve creates per account, interleaved, all at once.
    const creates = Array.from({ length: 12 }, () => limited.map((account) => ({ account, result: inserter.insert(plan(account)) }))).flat();
    const settled = await Promise.all(creates.map(async (c) => ({ account: c.account, result: await c.result })));
    for (const [i, account] of limited.entries()) {
      const mine = settled.filter((s) => s.account === account);
      expect(mine.filter((s) => s.result.createdAt !== undefined)).toHaveLength(limit - before[i]!);
      expect(mine.filter((s) => s.result.createdAt === undefined).every((s) => s.result.used === limit)).toBe(true);
      expect(await planCount(account)).toBe(limit);
    }
  });

  it("fails only the creates of a failed statement, and writes none of them", async () => {
    const inserter = new PlanInserter(store.db, { limit: 1000, windowSeconds: 3600 }, { maxInFlight: 1 });
    const first = plan(accounts[10]!);
    const ghost = plan("acc_that_does_not_exist");
    const sharesWithGhost = plan(accounts[11]!);
    // The first is sent alone; the other two wait and go together.
    const results = await Promise.allSettled([first, ghost, sharesWithGhost].map((p) => inserter.insert(p)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected"]);
    const written = await store.db.selectFrom("plans").select("id").where("id", "in", [first.id, ghost.id, sharesWithGhost.id]).execute();
    expect(written.map((r) => r.id)).toEqual([first.id]);
    // The inserter goes on serving.
    await expect(inserter.insert(plan(accounts[11]!))).resolves.toMatchObject({ createdAt: expect.any(Date) });
  });
});
