import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import type { StageWorkResolver } from "../../src/engine/stage-work.js";
import { instantWork } from "../support/stage-work.js";

const ROUNDS = 30;

/**
 * Instant work, except that a revision's stages take a moment, as any real
 * writer's do. With every stage instant, a revision could be written and back
 * at the gate before the approve sent with it was handled (on a loaded CI
 * machine, it was): that approve then meets the new draft, which an approval
 * that names no draft cannot be told from, and the plan is published (one
 * that names its draft with `revision` is refused: revise.test.ts). What is
 * under test is the approve that arrives while the revision is being written.
 */
function slowRevisions(): StageWorkResolver {
  const instant = instantWork();
  return (outcome, stageId) => {
    const work = instant(outcome, stageId);
    return async (input) => {
      if (input.revision) await new Promise((resolve) => setTimeout(resolve, 200));
      return work(input);
    };
  };
}
const resting = (p: RestPlan) => p.status === "awaiting_approval" || p.status === "succeeded";

// A revise sent to one instance racing an approve sent to the other, on one
// real Postgres: the plan's lock orders them, and whichever comes second sees
// the first one's result. Never both: no revision that is also published.
describe.runIf(onRealPostgres)("revise racing approve on two instances", () => {
  let a: TestApp;
  let b: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    const databaseUrl = (await createTestDatabase())!;
    const env = { ZERO_GENERATION_LIMIT: "1000" };
    a = await startTestApp({ databaseUrl, env, stageWork: slowRevisions() });
    b = await startTestApp({ databaseUrl, env, stageWork: slowRevisions() });
    account = await createAccountWithKey(a, ["build", "read"]);
  }, 60_000);
  afterAll(() => Promise.all([a, b].map((app) => app?.close())));

  it(`ends in exactly one of the two outcomes, ${ROUNDS} times`, { timeout: 180_000 }, async () => {
    const credential = { apiKey: account.apiKey };
    const seen = { revised: 0, approved: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const created = await postExecution<{ plan: RestPlan }>(a.url, credential, { goal: `A site for my bakery, round ${round}` });
      const planId = created.body.plan.id;
      await waitForPlan(a.url, credential, planId, (p) => p.status === "awaiting_approval");
      const [revise, approve] = await Promise.all([
        postExecution<{ plan: RestPlan }>(a.url, credential, { planId, feedback: "Make it warmer" }),
        postExecution<{ plan: RestPlan }>(b.url, credential, { planId, approve: ["review"] }),
      ]);
      expect(approve.status).toBe(202);
      const end = await waitForPlan(a.url, credential, planId, resting);
      if (revise.status === 202) {
        // The revision won: its draft waits at the gate again, nothing was published.
        seen.revised++;
        expect(end.status, JSON.stringify(end)).toBe("awaiting_approval");
        expect(end.revisions).toHaveLength(1);
        expect(end.publishedUrl).toBeNull();
        expect(end.stages.find((s) => s.id === "publish")).toMatchObject({ state: "pending", attempts: 0 });
      } else {
        // The approval won: the first draft is published and the revision was refused, not recorded.
        seen.approved++;
        expect(revise.status).toBe(409);
        const done = await waitForPlan(a.url, credential, planId, (p) => p.status === "succeeded");
        expect(done.revisions).toEqual([]);
      }
    }
    expect(seen.revised + seen.approved).toBe(ROUNDS);
  });
});
