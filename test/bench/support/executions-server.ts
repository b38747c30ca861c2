/**
 * The service as its own process for test/bench/executions.bench.ts, with stage
 * work that returns at once, so the engine's own cost is what is measured.
 * Configured from the environment like the service; prints one JSON line
 * `{"url", "pid"}` once it listens.
 */
import { startApp } from "../../../src/app.js";
import { loadConfig } from "../../../src/config.js";

const app = await startApp(loadConfig(), { stageWork: () => async () => ({ output: { ok: true } }) });
process.stdout.write(`${JSON.stringify({ url: app.url, pid: process.pid })}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
