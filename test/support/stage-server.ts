/**
 * A real server process for tests that kill it: `startApp` with stage work
 * where one stage (ZERO_TEST_SLOW_STAGE, default `understand`) takes
 * ZERO_TEST_SLOW_MS (default 10 minutes) unless aborted; the others finish at
 * once. Prints one JSON line `{"url", "instanceId"}` once it listens.
 * Run with tsx; configured like the service, from the environment.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { startApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import type { StageWorkResolver } from "../../src/engine/stage-work.js";
import { typicalOutcome } from "./stage-work.js";

const slowStage = process.env.ZERO_TEST_SLOW_STAGE ?? "understand";
const slowMs = Number(process.env.ZERO_TEST_SLOW_MS ?? 600_000);

const stageWork: StageWorkResolver = (_outcome, stageId) => async (input) => {
  if (stageId === slowStage) {
    process.stdout.write(`${JSON.stringify({ started: input.planId, stage: stageId })}\n`);
    await sleep(slowMs, undefined, { signal: input.signal });
  }
  return typicalOutcome(input);
};

const app = await startApp(loadConfig(), { stageWork });
process.stdout.write(`${JSON.stringify({ url: app.url, instanceId: app.instanceId })}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
