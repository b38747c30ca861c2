import fs from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";

// Found by a code review: every start added a row to service_instances, and nothing ever removed one.
describe("the list of service instances", () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it("keeps the instances that run or were seen this week, marking each seen; restarts leave no rows for good", async () => {
    const first = await startTestApp({ keepDataDir: true });
    apps.push(first);
    const dataDir = first.dataDir;
    const db = first.store.db;
    const seenAgo = (days: number) => new Date(Date.now() - days * 86_400_000);
    await db
      .insertInto("service_instances")
      .values([
        { id: "ins_gone", hostname: "old-host", pid: 1, version: "0", seen_at: seenAgo(8) },
        { id: "ins_lately", hostname: "crashed-host", pid: 2, version: "0", seen_at: seenAgo(2) },
      ])
      .execute();
    await first.close();
    apps.pop();

    // The list is tended at start and hourly after.
    const second = await startTestApp({ dataDir, databaseUrl: first.databaseUrl });
    apps.push(second);
    const ids = async () => (await second.store.db.selectFrom("service_instances").select("id").orderBy("id").execute()).map((row) => row.id);
    await expect.poll(ids).toEqual([first.instanceId, "ins_lately", second.instanceId].sort());
    const own = await second.store.db
      .selectFrom("service_instances")
      .select(["seen_at", "started_at"])
      .where("id", "=", second.instanceId)
      .executeTakeFirstOrThrow();
    expect(own.seen_at.getTime()).toBeGreaterThanOrEqual(own.started_at.getTime());
    await fs.rm(dataDir, { recursive: true, force: true });
  });
});
