import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/db/database.js";
import { initialStages } from "../../src/executions/plan-transitions.js";
import { PlanInserter } from "../../src/executions/plan-inserter.js";
import type { NewPlan } from "../../src/executions/plan-repository.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution } from "../support/executions.js";

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
  it("shares statements among one account's creates too, and 64 at once against a limit of 50 take exactly 50", async () => {
    const account = `acc_hot_${Date.now()}`;
    await store.db
      .insertInto("accounts")
      .values({ id: account, email: `${account}@example.test`, password_hash: "x" })
      .execute();
    const inserter = new PlanInserter(store.db, { limit: 50, windowSeconds: 3600 }, { maxInFlight: 2 });
    const results = await Promise.all(Array.from({ length: 64 }, () => inserter.insert(plan(account))));
    expect(inserter.statements).toBeLessThan(64);
    const granted = results.filter((r) => r.createdAt !== undefined);
    expect(granted).toHaveLength(50);
    // Each granted create reports the count it brought the counter to, as if it had come alone.
    expect(granted.map((r) => r.used).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(results.filter((r) => r.createdAt === undefined).every((r) => r.used === 50)).toBe(true);
    expect(await planCount(account)).toBe(50);
    const counter = await store.db.selectFrom("generation_counts").select("count").where("account_id", "=", account).executeTakeFirstOrThrow();
    expect(counter.count).toBe(50);
  });

  it("over REST: 64 concurrent creates with one key against a limit of 50 are 50 answers 202 and 14 answers 429", async () => {
    const limited = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0", ZERO_GENERATION_LIMIT: "50" } });
    try {
      const { apiKey } = await createAccountWithKey(limited, ["build", "read"]);
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) => postExecution(limited.url, { apiKey }, { goal: `A website for bakery number ${i}`, outcome: "website" })),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 202)).toHaveLength(50);
      expect(statuses.filter((s) => s === 429)).toHaveLength(14);
      const listed = await limited.store.db
        .selectFrom("plans")
        .innerJoin("accounts", "accounts.id", "plans.account_id")
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow();
      expect(Number(listed.n)).toBe(50);
    } finally {
      await limited.close();
    }
  });
});
