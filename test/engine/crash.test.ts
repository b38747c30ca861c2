import { describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { getExecution, postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { spawnStageServer } from "../support/stage-server-process.js";
import { instantWork } from "../support/stage-work.js";

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Several processes share one database: only on a real Postgres (CI runs it).
describe.runIf(onRealPostgres)("a server process that dies mid-stage", () => {
  it("leaves the plan interrupted and resumable once its lease expires; another instance resumes and finishes it", async () => {
    const databaseUrl = (await createTestDatabase())!;
    const doomed = await spawnStageServer({ DATABASE_URL: databaseUrl, ZERO_STAGE_LEASE_MS: "1000" });
    const account = await createAccountWithKey({ url: doomed.url }, ["build", "read"]);
    const cred = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(doomed.url, cred, { goal: "A site that survives a crash" });
    expect(created.status).toBe(202);
    const planId = created.body.plan.id;
    await until(() => doomed.lines().some((l) => l.includes(`"started":"${planId}"`)), "the slow stage to start");

    doomed.child.kill("SIGKILL");
    expect(await doomed.exit).toBeNull();

    const survivor = await startTestApp({ databaseUrl, stageWork: instantWork(), env: { ZERO_STAGE_LEASE_MS: "1000" } });
    const interrupted = await waitForPlan(survivor.url, cred, planId, (p) => p.status !== "running");
    expect(interrupted).toMatchObject({ status: "interrupted", resumable: true, progress: 0 });
    expect(interrupted.stages[0]).toMatchObject({ id: "understand", state: "failed", attempts: 1, error: { type: "interrupted" } });

    const resumed = await postExecution<{ plan: RestPlan }>(survivor.url, cred, { planId });
    expect(resumed.status).toBe(202);
    expect(resumed.body.plan.stages[0]).toMatchObject({ state: "running", attempts: 2, error: null });
    await waitForPlan(survivor.url, cred, planId, (p) => p.status === "awaiting_approval");
    await postExecution(survivor.url, cred, { planId, approve: ["review"] });
    const done = await waitForPlan(survivor.url, cred, planId, (p) => p.status !== "running");
    expect(done).toMatchObject({ status: "succeeded", progress: 100, resumable: false });
    expect(done.stages.map((s) => s.attempts)).toEqual([2, 1, 1, 1, 1, 1]);
    // The history agrees with the state: the crash shows as an interruption, the resume as a second attempt.
    const history = await fetch(`${survivor.url}/api/execution/history?id=${planId}`, { headers: { authorization: `Bearer ${account.apiKey}` } });
    const { events } = (await history.json()) as { events: { type: string; stage: string | null; attempt: number | null; detail: unknown }[] };
    expect(events.slice(0, 5).map((e) => [e.type, e.stage, e.attempt])).toEqual([
      ["created", null, null],
      ["stage_started", "understand", 1],
      ["stage_interrupted", "understand", 1],
      ["resumed", null, null],
      ["stage_started", "understand", 2],
    ]);
    expect(events[2]!.detail).toEqual({ error: { type: "interrupted", message: expect.any(String) } });
    expect(events.filter((e) => e.type === "stage_succeeded").map((e) => e.stage)).toEqual(["understand", "outline", "write", "build", "publish"]);
    await survivor.close();
  });

  it("hands its stage back on a graceful stop, so another instance continues at once without an interruption", async () => {
    const databaseUrl = (await createTestDatabase())!;
    // A lease of a minute: only a hand-back lets the other instance continue within the test.
    const leaving = await spawnStageServer({ DATABASE_URL: databaseUrl, ZERO_STAGE_LEASE_MS: "60000" });
    const account = await createAccountWithKey({ url: leaving.url }, ["build", "read"]);
    const cred = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(leaving.url, cred, { goal: "A site that changes hands" });
    const planId = created.body.plan.id;
    await until(() => leaving.lines().some((l) => l.includes(`"started":"${planId}"`)), "the slow stage to start");

    const work = instantWork();
    const successor = await startTestApp({ databaseUrl, stageWork: work, env: { ZERO_STAGE_LEASE_MS: "60000" } });
    leaving.child.kill("SIGTERM");
    expect(await leaving.exit).toBe(0);

    const gated = await waitForPlan(successor.url, cred, planId, (p) => p.status !== "running", 10_000);
    expect(gated.status).toBe("awaiting_approval");
    expect(gated.stages[0]).toMatchObject({ state: "succeeded", attempts: 1, error: null });
    expect(work.calls.filter((c) => c.planId === planId).map((c) => c.stageId)).toEqual(["understand", "outline", "write", "build"]);
    expect((await getExecution(successor.url, cred, planId)).status).toBe(200);
    await successor.close();
  });
});
