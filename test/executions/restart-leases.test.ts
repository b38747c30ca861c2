import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { onRealPostgres } from "../support/database.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";

// Found on a small machine: after a kill -9, the restarted service waited out each dead worker's lease (30 s)
// before its stages were interrupted, though its data dir's lock had already shown that worker gone.
describe("a restart, and the stages its dead predecessor held", () => {
  it("on the service's own embedded database, interrupts them at start; on a shared Postgres, leaves them to their leases", async () => {
    // No stage runs here: the one the dead process held is only reaped, or not.
    const env = { ZERO_WORKER_CONCURRENCY: "0" };
    const first = await startTestApp({ keepDataDir: true, env });
    const credential = { apiKey: (await createAccountWithKey(first, ["build", "read"])).apiKey };
    const created = await postExecution<{ plan: RestPlan }>(first.url, credential, { goal: "A website for a bakery in Lyon", outcome: "website" });
    const planId = created.body.plan.id;
    // Its first stage as a worker that then died would have left it: leased for an hour.
    await first.store.db
      .updateTable("plan_stages")
      .set({ lease_token: 4242, lease_expires_at: sql<Date>`now() + interval '1 hour'` })
      .where("plan_id", "=", planId)
      .where("position", "=", 0)
      .execute();
    await first.close();

    const second = await startTestApp({ dataDir: first.dataDir, databaseUrl: first.databaseUrl, env });
    try {
      if (onRealPostgres) {
        // Another instance may be running it.
        const { rows } = await sql<{ lease_token: string; live: boolean }>`
          SELECT lease_token, lease_expires_at > now() AS live FROM plan_stages WHERE plan_id = ${planId} AND position = 0`.execute(second.store.db);
        expect(rows).toEqual([{ lease_token: expect.anything(), live: true }]);
        expect(Number(rows[0]!.lease_token)).toBe(4242);
      } else {
        const plan = await waitForPlan(second.url, credential, planId, (p) => p.status === "interrupted", 10_000);
        expect(plan).toMatchObject({ status: "interrupted", resumable: true });
      }
    } finally {
      await second.close();
    }
  });
});
