import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, type RestPlan, waitForPlan } from "../support/executions.js";
import { HeldWork } from "../support/stage-work.js";

/**
 * A database out of room (a full disk, its memory, its connections: SQLSTATE
 * class 53) is away for a while, not a bug of ours. Found by a chaos test on
 * a full disk: creates answered 500 `internal`, and every queued plan ended
 * `interrupted` as the engine dropped each result it could not write. Here
 * Postgres raises the disk-full error itself, from a trigger.
 */
describe("a database out of room", () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  async function fillUp(app: TestApp, table: "plans" | "plan_events"): Promise<() => Promise<void>> {
    await sql`create or replace function zero_test_disk_full() returns trigger language plpgsql as $$
      begin raise exception 'could not extend file: No space left on device' using errcode = 'disk_full'; end $$`.execute(app.store.db);
    await sql`create trigger zero_test_disk_full before insert on ${sql.table(table)} for each row execute function zero_test_disk_full()`.execute(
      app.store.db,
    );
    return async () => {
      await sql`drop trigger zero_test_disk_full on ${sql.table(table)}`.execute(app.store.db);
    };
  }

  it("answers 503 unavailable with Retry-After, as when it is away, rather than a 500", async () => {
    const app = await startTestApp();
    apps.push(app);
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    const makeRoom = await fillUp(app, "plans");
    const refused = await postExecution(app.url, { apiKey }, { goal: "A website for a bakery in Lyon" });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body).toMatchObject({ error: { type: "unavailable" } });
    await makeRoom();
    expect((await postExecution(app.url, { apiKey }, { goal: "A website for a bakery in Lyon" })).status).toBe(202);
  });

  it("holds a finished stage's result, and its lease, until there is room again: the plan goes on, not interrupted", async () => {
    const work = new HeldWork();
    work.instant = new Set(["outline", "write", "build"]);
    const app = await startTestApp({ stageWork: work.resolver, env: { ZERO_STAGE_LEASE_MS: "3000" } });
    apps.push(app);
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey }, { goal: "A website for a bakery in Lyon" });
    expect(created.status).toBe(202);
    const understand = await work.next();
    // Every write of a stage's end records its history: with no room for that, none can land.
    const makeRoom = await fillUp(app, "plan_events");
    understand.succeed();
    // Past its lease and then some: a result dropped for want of room would have left its lease to expire by now.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    await makeRoom();
    const plan = await waitForPlan(app.url, { apiKey }, created.body.plan.id, (p) => p.status === "awaiting_approval");
    expect(plan.stages.find((stage) => stage.id === "understand")).toMatchObject({ state: "succeeded", attempts: 1 });
  });
});
