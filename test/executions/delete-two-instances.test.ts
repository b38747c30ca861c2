import { describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { authHeaders, postExecution, type RestPlan } from "../support/executions.js";
import { spawnStageServer } from "../support/stage-server-process.js";
import { HeldWork } from "../support/stage-work.js";

async function until(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Two instances on one real Postgres: B only answers the API and takes the delete, A runs the stage.
describe.runIf(onRealPostgres)("delete across two instances on one Postgres", () => {
  it("what a stage on A writes after a delete on B is removed, even when B stops at once (a rolling restart)", async () => {
    const databaseUrl = (await createTestDatabase())!;
    const env = { ZERO_STAGE_LEASE_MS: "2000" };
    const work = new HeldWork();
    const a = await startTestApp({ databaseUrl, env, stageWork: work.resolver });
    const b = await spawnStageServer({ DATABASE_URL: databaseUrl, ZERO_WORKER_CONCURRENCY: "0", ...env });
    const { apiKey } = await createAccountWithKey({ url: b.url }, ["build", "read"]);
    const created = await postExecution<{ plan: RestPlan }>(b.url, { apiKey }, { goal: "A website for a night market" });
    const planId = created.body.plan.id;
    await work.next();

    const deleted = await fetch(`${b.url}/api/execution?id=${planId}`, { method: "DELETE", headers: authHeaders(b.url, { apiKey }) });
    expect(deleted.status).toBe(204);
    // What the stage on A, not yet stopped, wrote after the delete removed the plan's files. Written before the
    // first sweep, one lease after the delete: B's stop, under load, can take longer than that, and a write after
    // that sweep waits for the late one an hour on.
    await a.artifacts.put(`preview/${planId}/index.html`, "<!DOCTYPE html><title>late</title>");
    b.child.kill("SIGTERM");
    expect(await b.exit).toBe(0);

    await until(async () => (await a.artifacts.list(`preview/${planId}/`)).length === 0, "the late file to be removed");
    await a.close();
  });
});
