import os from "node:os";
import { sql, type Kysely } from "kysely";
import type { Database } from "./schema.js";

/** How long an instance no longer seen stays listed: long enough to find whose lease a stage held. */
const LISTED_AFTER_LAST_SEEN_DAYS = 7;

/** Lists this instance in `service_instances` as it starts. */
export async function registerInstance(db: Kysely<Database>, id: string, version: string): Promise<void> {
  await db.insertInto("service_instances").values({ id, hostname: os.hostname(), pid: process.pid, version }).execute();
}

/**
 * Keeps `service_instances` to the instances that run or ran lately, run at
 * start and hourly: this one is marked seen, and those not seen for a week
 * are deleted. Each start adds a row, so without this the table grew by one
 * row per restart, for good.
 */
export async function tendInstances(db: Kysely<Database>, id: string): Promise<void> {
  await db.updateTable("service_instances").set({ seen_at: sql`now()` }).where("id", "=", id).execute();
  await db.deleteFrom("service_instances").where("seen_at", "<", sql<Date>`now() - make_interval(days => ${LISTED_AFTER_LAST_SEEN_DAYS})`).execute();
}
