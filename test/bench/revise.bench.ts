import { randomBytes } from "node:crypto";
import os from "node:os";
import { startApp } from "../../src/app.js";
import { createAccount, createApiKey } from "../../src/auth/accounts.js";
import { createLogger } from "../../src/observability/logger.js";
import { FakeUpstream } from "../chat/support/fake-upstream.js";
import { schemaNameOf, writerModel } from "../outcomes/support/model-answers.js";
import { benchConfig } from "./support/bench-config.js";
import { freshBenchDatabase } from "./support/postgres.js";

/**
 * revision → back at the gate, against a fresh create's time to the gate in
 * the same run: one instance on Postgres, the real website stages with the
 * upstream writer, and an upstream that answers every structured request at
 * once (so the service's own path is what is timed). Each round creates a
 * plan and times its 202 to `awaiting_approval`, then sends feedback and
 * times that 202 to `awaiting_approval` again. Both are seen the same way, by
 * reading the plan every POLL_MS, so the poll's cost is in both. Goal: the
 * revision within 1.2× of the create.
 */

const ROUNDS = Number(process.env.BENCH_REVISIONS ?? 100);
/** Untimed first rounds, so a cold start is not counted against either side. */
const WARMUP = 5;
const POLL_MS = 2;
const TIMEOUT_MS = 30_000;

const database = await freshBenchDatabase("revise");

const upstream = await FakeUpstream.start();
upstream.otherwise(writerModel);
const app = await startApp(
  benchConfig(database.url, {
    ZERO_FREE_POOL_DAILY_REQUESTS: "1000000000",
    ZERO_OFFLINE_WRITER: "off",
    ZERO_UPSTREAMS: JSON.stringify([{ name: "instant", baseUrl: upstream.url, apiKey: "bench", model: "bench-model" }]),
  }),
  { logger: createLogger("silent") },
);
try {
  const created = await createAccount(app.store.db, { email: "bench@example.test", password: randomBytes(16).toString("hex"), onlyFirst: false });
  if (!("account" in created)) throw new Error("no bench account");
  const { secret } = (await createApiKey(app.store.db, { accountId: created.account.id, name: "bench", scopes: ["build", "read"] }))!;
  const headers = { "content-type": "application/json", authorization: `Bearer ${secret}` };
  /** Posts and answers the time its 202 arrived and the plan's id. */
  const post = async (body: unknown) => {
    const res = await fetch(`${app.url}/api/execution`, { method: "POST", headers, body: JSON.stringify(body) });
    const at = performance.now();
    const answer = (await res.json()) as { plan?: { id: string; status: string } };
    if (res.status !== 202 || !answer.plan) throw new Error(`POST answered ${res.status}: ${JSON.stringify(answer)}`);
    return { at, plan: answer.plan };
  };
  type Plan = { status: string; revisions: unknown[]; previewUrl?: string };
  /** Reads the plan until it is at the gate; answers when it was first seen there. */
  const atGate = async (id: string): Promise<{ at: number; plan: Plan }> => {
    const deadline = performance.now() + TIMEOUT_MS;
    while (performance.now() < deadline) {
      const res = await fetch(`${app.url}/api/execution?id=${id}`, { headers });
      const at = performance.now();
      const { plan } = (await res.json()) as { plan: Plan };
      if (plan.status === "awaiting_approval") return { at, plan };
      if (plan.status !== "running") throw new Error(`plan ${id} ended ${plan.status}: ${JSON.stringify(plan)}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw new Error(`plan ${id} did not reach the gate in ${TIMEOUT_MS} ms`);
  };

  const creates: number[] = [];
  const revisions: number[] = [];
  for (let round = -WARMUP; round < ROUNDS; round++) {
    const create = await post({ goal: `A website for sea kayaking trips, round ${round}` });
    const first = await atGate(create.plan.id);
    const createRequests = upstream.requests.length;
    const revise = await post({ planId: create.plan.id, feedback: "Put the safety briefing first and make the tone calmer" });
    const second = await atGate(create.plan.id);
    // A revision that was not built would make this a benchmark of nothing.
    if (second.plan.revisions.length !== 1 || second.plan.previewUrl === first.plan.previewUrl) {
      throw new Error(`round ${round}: the revision was not built: ${JSON.stringify(second.plan)}`);
    }
    // One writer request per part, as for a create (the brief revised rather than written): nothing skipped, nothing twice.
    const asked = upstream.requests.slice(createRequests).map((r) => schemaNameOf(r.body));
    if (createRequests !== 5 || asked.join() !== "revised_website_brief,site_outline,page_content,page_content,page_content") {
      throw new Error(`round ${round}: the create asked ${createRequests} writer requests, the revision ${asked.join()}`);
    }
    upstream.requests.length = 0;
    if (round < 0) continue;
    creates.push(first.at - create.at);
    revisions.push(second.at - revise.at);
  }
  const at = (times: number[], q: number) => {
    const sorted = [...times].sort((x, y) => x - y);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  };
  const row = (times: number[]) => ({ "p50 (ms)": at(times, 0.5).toFixed(1), "p99 (ms)": at(times, 0.99).toFixed(1), "max (ms)": at(times, 1).toFixed(1) });
  console.log(`\nrevision → back at the gate vs create → gate, one instance on Postgres, instant upstream writer, ${ROUNDS} rounds; ${os.cpus().length} CPUs`);
  console.table({ "create 202 → at the gate": row(creates), "feedback 202 → back at the gate": row(revisions) });
  console.log(
    `revision / create: p50 ${(at(revisions, 0.5) / at(creates, 0.5)).toFixed(3)}, p99 ${(at(revisions, 0.99) / at(creates, 0.99)).toFixed(3)} (goal ≤ 1.2)`,
  );
} finally {
  await app.close();
  await upstream.close();
  await database.drop();
}
