import type { JsonValue } from "@bufbuild/protobuf";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StageClaim } from "../../src/engine/stage-store.js";
import { Notifier } from "../../src/executions/notifier.js";
import { loadPlan } from "../../src/executions/plan-repository.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { stageProgressed, stageSucceeded, type PlanState } from "../../src/executions/plan-transitions.js";
import { type RunWrite, saveRunWrites } from "../../src/executions/run-writes.js";
import { claimStages } from "../../src/executions/stage-queue.js";
import { createLogger } from "../../src/observability/logger.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, type RestPlan } from "../support/executions.js";

const LEASE_MS = 60_000;

describe("stage results of many plans written in one statement (saveRunWrites)", () => {
  let app: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    // No engine of its own: the tests claim and write as a worker would.
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0" } });
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  /** `count` new plans whose first stage is claimed by `owner`, with each plan as read after the claim. */
  async function claimedPlans(count: number, owner: string, by = account): Promise<{ claims: StageClaim[]; plans: Map<string, PlanState> }> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: by.apiKey }, { goal: `A site for bakery number ${i}` });
      ids.push(created.body.plan.id);
    }
    const claims: StageClaim[] = [];
    // Plans of other tests may wait too: claim until all of ours are held.
    while (claims.length < count) {
      const batch = (await claimStages(app.store.db, owner, 50, LEASE_MS)).map((c) => c.claim);
      if (batch.length === 0) throw new Error("the new plans' first stages were not claimable");
      claims.push(...batch.filter((c) => ids.includes(c.planId)));
    }
    const plans = new Map<string, PlanState>();
    for (const id of ids) plans.set(id, (await loadPlan(app.store.db, id))!);
    return { claims, plans };
  }

  /** `count` new plans whose first stage `store` claimed for `owner` (claimed elsewhere, released, then claimed through the store). */
  async function claimedThrough(store: PlanStageStore, owner: string, count: number, by = account): Promise<StageClaim[]> {
    const { claims: held } = await claimedPlans(count, "writer-other", by);
    await sql`UPDATE plan_stages SET lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL WHERE lease_token = ANY(${held.map((c) => c.leaseToken)}::bigint[])`.execute(
      app.store.db,
    );
    const ours: StageClaim[] = [];
    while (ours.length < held.length) {
      const batch = await store.claim(owner, 50, LEASE_MS);
      if (batch.length === 0) throw new Error("the released stages were not claimable");
      ours.push(...batch.filter((c) => held.some((h) => h.planId === c.planId)));
    }
    return ours;
  }

  async function eventTypes(planId: string): Promise<string[]> {
    const rows = await app.store.db.selectFrom("plan_events").select("type").where("plan_id", "=", planId).orderBy("id").execute();
    return rows.map((r) => r.type);
  }

  it("writes each plan that is still as its worker saw it, and leaves a plan that moved on, or whose lease ran out, untouched", async () => {
    const { claims, plans } = await claimedPlans(4, "writer-a");
    const [fresh, alsoFresh, movedOn, expired] = claims as [StageClaim, StageClaim, StageClaim, StageClaim];
    const writes: RunWrite[] = claims.map((claim) => {
      const before = plans.get(claim.planId)!;
      return {
        before,
        after: stageSucceeded(before, claim.position, { output: { n: claim.planId } }),
        position: claim.position,
        claimFor: { owner: "writer-a", leaseMs: LEASE_MS },
      };
    });
    // Meanwhile another writer changed one plan, and another run's lease ran out.
    await sql`UPDATE plans SET version = version + 1 WHERE id = ${movedOn.planId}`.execute(app.store.db);
    await sql`UPDATE plan_stages SET lease_expires_at = now() - interval '1 second' WHERE plan_id = ${expired.planId}`.execute(app.store.db);
    const eventsBefore = await eventTypes(movedOn.planId);

    const results = await saveRunWrites(app.store.db, writes);

    expect(results[2]).toBe("moved");
    expect(results[3]).toBe("moved");
    for (const [i, claim] of [fresh, alsoFresh].entries()) {
      const result = results[i]!;
      if (typeof result === "string") throw new Error(`plan ${claim.planId} was not written: ${result}`);
      const before = plans.get(claim.planId)!;
      expect(result.plan.version).toBe(before.version + 1);
      // The next stage was claimed for the writer in the same statement, under a fresh token.
      expect(result.claimed?.position).toBe(claim.position + 1);
      const stages = await app.store.db
        .selectFrom("plan_stages")
        .select(["position", "state", "output", "lease_token", "lease_owner"])
        .where("plan_id", "=", claim.planId)
        .orderBy("position")
        .execute();
      expect(stages[0]).toMatchObject({ state: "succeeded", output: { n: claim.planId }, lease_token: null });
      expect(stages[1]).toMatchObject({ state: "running", lease_owner: "writer-a" });
      expect(Number(stages[1]!.lease_token)).toBe(result.claimed?.leaseToken);
      expect(await eventTypes(claim.planId)).toEqual(["created", "stage_started", "stage_succeeded", "stage_started"]);
    }
    // Nothing of the refused writes landed: same stage rows, no new history.
    for (const claim of [movedOn, expired]) {
      const stage = await app.store.db
        .selectFrom("plan_stages")
        .select(["state", "lease_token"])
        .where("plan_id", "=", claim.planId)
        .where("position", "=", claim.position)
        .executeTakeFirstOrThrow();
      expect(stage).toMatchObject({ state: "running" });
      expect(Number(stage.lease_token)).toBe(claim.leaseToken);
    }
    expect(await eventTypes(movedOn.planId)).toEqual(eventsBefore);
  });

  it("keeps a plan's revisions and approvals as they were unless the change touched them", async () => {
    const { claims, plans } = await claimedPlans(1, "writer-b");
    const claim = claims[0]!;
    await sql`UPDATE plans SET approved = ARRAY['review'], revisions = '[{"number":1,"feedback":"warmer","createdAt":"2026-11-25T00:00:00Z","previewUrl":null,"draft":null}]'::jsonb, version = version + 1 WHERE id = ${claim.planId}`.execute(
      app.store.db,
    );
    const before = await loadPlan(app.store.db, claim.planId);
    const [result] = await saveRunWrites(app.store.db, [{ before: before!, after: stageProgressed(before!, claim.position, 0.5), position: claim.position }]);
    expect(typeof result).toBe("object");
    const row = await app.store.db.selectFrom("plans").select(["approved", "revisions", "progress"]).where("id", "=", claim.planId).executeTakeFirstOrThrow();
    expect(row.approved).toEqual(["review"]);
    expect(row.revisions).toEqual([{ number: 1, feedback: "warmer", createdAt: "2026-11-25T00:00:00Z", previewUrl: null, draft: null }]);
    // The partial progress is the stage's; the plan's counts succeeded stages only.
    expect(row.progress).toBe(plans.get(claim.planId)!.progress);
    const stage = await app.store.db
      .selectFrom("plan_stages")
      .select("progress")
      .where("plan_id", "=", claim.planId)
      .where("position", "=", claim.position)
      .executeTakeFirstOrThrow();
    expect(stage.progress).toBe(0.5);
  });

  it("group-commits concurrent runs' results: every run's next stage is claimed, in fewer statements than results", async () => {
    const store = new PlanStageStore(app.store, new Notifier(app.store.db, createLogger("silent")));
    const claims = await store.claim("writer-c", 0, LEASE_MS); // nothing: a claim of zero stages
    expect(claims).toEqual([]);
    // Through the store, as the engine writes: its first write of each claim is the shared one-statement write.
    const ours = await claimedThrough(store, "writer-c", 12);
    const before = store.runWriteStatements;
    const written = await Promise.all(
      ours.map((claim) =>
        store.record(claim, { kind: "succeeded", outcome: { output: { ok: true } } }, { chainFor: { owner: "writer-c", leaseMs: LEASE_MS } }),
      ),
    );
    for (const result of written) expect(result).toMatchObject({ next: { position: 1, stageId: "outline" } });
    expect(store.runWriteStatements - before).toBeLessThan(ours.length);
    for (const claim of ours) expect(await eventTypes(claim.planId)).toEqual(["created", "stage_started", "stage_succeeded", "stage_started"]);
  });

  it("fails only the runs whose own values Postgres refuses: the other results of their statement are written", async () => {
    const store = new PlanStageStore(app.store, new Notifier(app.store.db, createLogger("silent")));
    // Another account's plans: the first account's generation limit is spent by the tests above.
    const ours = await claimedThrough(store, "writer-d", 5, await createAccountWithKey(app, ["build", "read"]));
    // The first write goes alone; the others, two of them unstorable in jsonb, share the next statement.
    const outputs: JsonValue[] = [{ ok: true }, { text: "a NUL \u0000 here" }, { text: "half a pair \ud800 here" }, { ok: true }, { ok: true }];
    const before = store.runWriteStatements;
    const written = await Promise.allSettled(
      ours.map((claim, i) =>
        store.record(claim, { kind: "succeeded", outcome: { output: outputs[i]! } }, { chainFor: { owner: "writer-d", leaseMs: LEASE_MS } }),
      ),
    );
    expect(store.runWriteStatements - before).toBe(2);

    for (const i of [0, 3, 4]) {
      expect(written[i]).toMatchObject({ status: "fulfilled", value: { next: { position: 1, stageId: "outline" } } });
      expect(await eventTypes(ours[i]!.planId)).toEqual(["created", "stage_started", "stage_succeeded", "stage_started"]);
    }
    for (const i of [1, 2]) {
      const result = written[i]!;
      if (result.status !== "rejected") throw new Error(`the unstorable result of ${ours[i]!.planId} was written`);
      expect(store.isUnstorable(result.reason)).toBe(true);
      expect(store.isUnavailable(result.reason)).toBe(false);
      const stage = await app.store.db
        .selectFrom("plan_stages")
        .select(["state", "output", "lease_token"])
        .where("plan_id", "=", ours[i]!.planId)
        .where("position", "=", 0)
        .executeTakeFirstOrThrow();
      expect(stage).toMatchObject({ state: "running", output: null });
      expect(Number(stage.lease_token)).toBe(ours[i]!.leaseToken);
    }
  });

  it("calls unstorable only text Postgres cannot hold, not any value it refused (a number out of range is a bug of ours)", async () => {
    const store = new PlanStageStore(app.store, new Notifier(app.store.db, createLogger("silent")));
    const refusal = (query: ReturnType<typeof sql>) =>
      query.execute(app.store.db).then(
        () => undefined,
        (error: unknown) => error,
      );
    const unstorable = [
      await refusal(sql`SELECT ${"a NUL \u0000 here"}::text`),
      await refusal(sql`SELECT ${JSON.stringify({ text: "a NUL \u0000 here" })}::jsonb`),
      await refusal(sql`SELECT ${JSON.stringify({ text: "half a pair \ud800 here" })}::jsonb`),
      await refusal(sql`SELECT ${JSON.stringify({ text: "the other half \udc00 here" })}::jsonb`),
    ];
    const otherRefusals = [
      await refusal(sql`SELECT ${"2147483648"}::int`),
      await refusal(sql`SELECT ${"seven"}::int`),
      await refusal(sql`SELECT ${"not-a-uuid"}::uuid`),
      await refusal(sql`SELECT 1 / ${0}::int`),
    ];
    for (const error of [...unstorable, ...otherRefusals]) expect(error).toHaveProperty("code", expect.stringMatching(/^22/));
    expect(unstorable.map((error) => store.isUnstorable(error))).toEqual([true, true, true, true]);
    expect(otherRefusals.map((error) => store.isUnstorable(error))).toEqual([false, false, false, false]);
  });

  it("fails a refused write alone even when it is its statement's only plan: a later write of that plan in the batch is still written", async () => {
    const store = new PlanStageStore(app.store, new Notifier(app.store.db, createLogger("silent")));
    const ours = await claimedThrough(store, "writer-e", 2, await createAccountWithKey(app, ["build", "read"]));
    const [other, claim] = ours as [StageClaim, StageClaim];
    // The first write goes alone; the refused result and a progress write of the same plan share the next statement.
    const written = await Promise.allSettled([
      store.record(other, { kind: "progress", fraction: 0.5 }),
      store.record(claim, { kind: "succeeded", outcome: { output: { text: "a NUL \u0000 here" } } }),
      store.record(claim, { kind: "progress", fraction: 0.5 }),
    ]);

    expect(written[0]).toEqual({ status: "fulfilled", value: "written" });
    expect(written[1]).toMatchObject({ status: "rejected" });
    expect(store.isUnstorable((written[1] as PromiseRejectedResult).reason)).toBe(true);
    expect(written[2]).toEqual({ status: "fulfilled", value: "written" });
    const stage = await app.store.db
      .selectFrom("plan_stages")
      .select(["state", "output", "progress"])
      .where("plan_id", "=", claim.planId)
      .where("position", "=", 0)
      .executeTakeFirstOrThrow();
    expect(stage).toEqual({ state: "running", output: null, progress: 0.5 });
  });
});
