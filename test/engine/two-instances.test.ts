import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { StageWorkResolver } from "../../src/engine/stage-work.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { getExecution, postExecution, type RestPlan } from "../support/executions.js";
import { typicalOutcome } from "../support/stage-work.js";

const ACCOUNTS = 12;
const LIMIT = 25;
const ATTEMPTS_PER_ACCOUNT = 30;

// Two instances on one real Postgres (CI runs it): the queue, the leases and
// the generation limit must hold across them.
describe.runIf(onRealPostgres)("two instances on one Postgres", () => {
  it("run 300 plans to the end: every stage exactly once, never twice at once, the limit never exceeded", { timeout: 180_000 }, async () => {
    const databaseUrl = (await createTestDatabase())!;
    const runs = new Map<string, number>();
    const running = new Set<string>();
    const overlaps: string[] = [];
    const byInstance = [0, 0];
    const countingWork =
      (instance: number): StageWorkResolver =>
      () =>
      async (input) => {
        const key = `${input.planId}/${input.stageId}`;
        if (running.has(key)) overlaps.push(key);
        running.add(key);
        runs.set(key, (runs.get(key) ?? 0) + 1);
        byInstance[instance]!++;
        // A little real waiting, so that stages of both instances overlap in time.
        await sleep(Math.random() * 4);
        running.delete(key);
        return typicalOutcome(input);
      };
    const env = { ZERO_GENERATION_LIMIT: String(LIMIT), ZERO_WORKER_CONCURRENCY: "8" };
    const apps: TestApp[] = [
      await startTestApp({ databaseUrl, env, stageWork: countingWork(0) }),
      await startTestApp({ databaseUrl, env, stageWork: countingWork(1) }),
    ];
    const accounts: TestAccount[] = [];
    for (let i = 0; i < ACCOUNTS; i++) accounts.push(await createAccountWithKey(apps[i % 2]!, ["build", "read"]));

    // Every account asks for more than its limit, through both instances at once.
    const answers = await Promise.all(
      accounts.flatMap((account, a) =>
        Array.from({ length: ATTEMPTS_PER_ACCOUNT }, (_, i) =>
          postExecution<{ plan: RestPlan }>(apps[(a + i) % 2]!.url, { apiKey: account.apiKey }, { goal: `Plan ${i} of account ${a}` }).then((answer) => ({
            a,
            answer,
          })),
        ),
      ),
    );
    for (let a = 0; a < ACCOUNTS; a++) {
      const mine = answers.filter((x) => x.a === a).map((x) => x.answer.status);
      expect(mine.filter((s) => s === 202)).toHaveLength(LIMIT);
      expect(mine.filter((s) => s === 429)).toHaveLength(ATTEMPTS_PER_ACCOUNT - LIMIT);
    }
    const plans = answers.filter((x) => x.answer.status === 202).map((x) => ({ id: x.answer.body.plan.id, account: accounts[x.a]! }));
    expect(plans).toHaveLength(ACCOUNTS * LIMIT);

    // Approve every gate, some before it is reached and some at it, through either instance.
    await Promise.all(plans.map(({ id, account }, i) => postExecution(apps[i % 2]!.url, { apiKey: account.apiKey }, { planId: id, approve: ["review"] })));
    const deadline = Date.now() + 120_000;
    let pending = plans;
    while (pending.length > 0 && Date.now() < deadline) {
      const states = await Promise.all(
        pending.map(async (p, i) => {
          const { body } = await getExecution<{ plan: RestPlan }>(apps[i % 2]!.url, { apiKey: p.account.apiKey }, p.id);
          if (body.plan.status === "awaiting_approval") {
            await postExecution(apps[i % 2]!.url, { apiKey: p.account.apiKey }, { planId: p.id, approve: ["review"] });
          }
          return body.plan.status;
        }),
      );
      expect(states.filter((s) => s === "failed" || s === "interrupted")).toEqual([]);
      pending = pending.filter((_, i) => states[i] !== "succeeded");
      if (pending.length > 0) await sleep(200);
    }
    expect(pending).toHaveLength(0);

    for (const { id } of plans) {
      for (const stage of ["understand", "outline", "write", "build", "publish"]) expect(runs.get(`${id}/${stage}`), `${id}/${stage}`).toBe(1);
      expect(runs.has(`${id}/review`)).toBe(false);
    }
    expect(runs.size).toBe(plans.length * 5);
    expect(overlaps).toEqual([]);
    // Both instances took part.
    expect(byInstance.every((n) => n > 0)).toBe(true);
    await Promise.all(apps.map((app) => app.close()));
  });
});
