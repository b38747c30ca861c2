import { randomBytes } from "node:crypto";
import os from "node:os";
import { startApp } from "../../src/app.js";
import { createAccount, createApiKey } from "../../src/auth/accounts.js";
import type { StageInput } from "../../src/engine/stage-work.js";
import { createLogger } from "../../src/observability/logger.js";
import { benchConfig } from "./support/bench-config.js";
import { freshBenchDatabase } from "./support/postgres.js";

/**
 * cancel → stage stopped: two instances on one Postgres, A answering the API
 * only and B running the stages. Each round creates a plan on A, waits until
 * its first stage runs on B (work that only ends when aborted), cancels it on
 * A and times from the cancel's 202 to the stage's abort on B (after which it
 * writes nothing: its fencing token is gone). A time below zero means the
 * stage stopped before the 202 reached the client. Goal: p99 under one
 * lease heartbeat (a third of ZERO_STAGE_LEASE_MS).
 */

const ROUNDS = Number(process.env.BENCH_CANCELS ?? 200);
const LEASE_MS = 30_000;

const database = await freshBenchDatabase("cancel");

const base = { ZERO_STAGE_LEASE_MS: String(LEASE_MS) };
const started: ((input: StageInput) => void)[] = [];
const a = await startApp(benchConfig(database.url, { ...base, ZERO_WORKER_CONCURRENCY: "0" }), { logger: createLogger("silent") });
const b = await startApp(benchConfig(database.url, { ...base, ZERO_WORKER_CONCURRENCY: "4" }), {
  logger: createLogger("silent"),
  stageWork: () => (input) =>
    new Promise((_, reject) => {
      started.shift()?.(input);
      input.signal.addEventListener("abort", () => reject(input.signal.reason), { once: true });
    }),
});
try {
  const created = await createAccount(a.store.db, { email: "bench@example.test", password: randomBytes(16).toString("hex"), onlyFirst: false });
  if (!("account" in created)) throw new Error("no bench account");
  const { secret } = (await createApiKey(a.store.db, { accountId: created.account.id, name: "bench", scopes: ["build"] }))!;
  const post = (body: unknown) =>
    fetch(`${a.url}/api/execution`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify(body),
    });

  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const running = new Promise<StageInput>((resolve) => started.push(resolve));
    const answer = (await (await post({ goal: `A website for cancel round ${round}` })).json()) as { plan: { id: string } };
    const input = await running;
    const stopped = new Promise<number>((resolve) => {
      if (input.signal.aborted) resolve(performance.now());
      else input.signal.addEventListener("abort", () => resolve(performance.now()), { once: true });
    });
    const res = await post({ planId: answer.plan.id, cancel: true });
    const acceptedAt = performance.now();
    await res.text();
    if (res.status !== 202) throw new Error(`cancel answered ${res.status}`);
    times.push((await stopped) - acceptedAt);
  }
  times.sort((x, y) => x - y);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  console.log(`\ncancel → stage stopped, two instances (API on A, stage on B), ${ROUNDS} cancels; ${os.cpus().length} CPUs`);
  console.table({
    "cancel 202 → stage aborted": {
      "p50 (ms)": at(0.5).toFixed(2),
      "p99 (ms)": at(0.99).toFixed(2),
      "max (ms)": at(1).toFixed(2),
      "heartbeat (ms)": LEASE_MS / 3,
    },
  });
  console.log(`p99 / heartbeat: ${(at(0.99) / (LEASE_MS / 3)).toFixed(4)} (goal < 1)`);
} finally {
  await a.close();
  await b.close();
  await database.drop();
}
