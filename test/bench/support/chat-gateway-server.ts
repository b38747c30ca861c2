import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startApp } from "../../../src/app.js";
import { createAccount, createApiKey } from "../../../src/auth/accounts.js";
import { loadConfig } from "../../../src/config.js";

/**
 * The gateway under benchmark, in its own process so its RSS is its own.
 * Configured as an operator would (environment from the parent), plus an
 * account and a `chat` + `build` key made directly in the database. Prints
 * `{"url", "apiKey"}` when listening; SIGTERM closes it.
 */
// BENCH_DATA_DIR keeps the data between runs (a restart); by default each run gets a fresh one.
const dataDir = process.env.BENCH_DATA_DIR ?? (await fs.mkdtemp(path.join(os.tmpdir(), "zero-bench-chat-")));
const config = loadConfig({ ...process.env, PORT: "0", HOST: "127.0.0.1", ZERO_DATA_DIR: dataDir });
const app = await startApp(config);
const created = await createAccount(app.store.db, {
  email: `bench-${randomBytes(6).toString("hex")}@example.test`,
  password: randomBytes(16).toString("hex"),
  onlyFirst: false,
});
if (!("account" in created)) throw new Error(`could not create the benchmark account: ${created.refused}`);
const { secret } = (await createApiKey(app.store.db, { accountId: created.account.id, name: "bench", scopes: ["chat", "build"] }))!;
console.log(JSON.stringify({ url: app.url, apiKey: secret }));

process.on("SIGTERM", () => {
  void app
    .close()
    .then(() => (process.env.BENCH_DATA_DIR ? undefined : fs.rm(dataDir, { recursive: true, force: true })))
    .finally(() => process.exit(0));
});
