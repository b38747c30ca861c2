import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll } from "vitest";
import { startApp, type App } from "../../src/app.js";
import type { StageWorkResolver } from "../../src/engine/stage-work.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTestDatabase, dropTestDatabases } from "./database.js";

export interface TestApp extends App {
  /** Every log line the app wrote, for tests that read them (e.g. that no secret leaks). */
  logs: string[];
  dataDir: string;
  /** The Postgres database it uses; undefined on PGlite (whose files are in `dataDir`). */
  databaseUrl: string | undefined;
}

export interface TestAppOptions {
  /** Extra environment, as an operator would set it. */
  env?: Record<string, string>;
  /** Share a database with another test app (Postgres runs only). */
  databaseUrl?: string;
  /** The work the stage engine runs (instant, slow, failing, counting…). */
  stageWork?: StageWorkResolver;
  /**
   * Reuse a data directory a closed test app left (`keepDataDir`), to start
   * the service again on the same PGlite files: a restart.
   */
  dataDir?: string;
  /** See AppOptions.retryJitter. */
  retryJitter?: () => number;
  /** Leave the data directory in place on close, for a restart; the test removes it. */
  keepDataDir?: boolean;
}

const running = new Set<TestApp>();
let template: Promise<Blob | undefined> | undefined;

function pgliteTemplate(): Promise<Blob | undefined> {
  const file = process.env.ZERO_TEST_PGLITE_TEMPLATE;
  template ??= file ? fs.readFile(file).then((bytes) => new Blob([bytes])) : Promise.resolve(undefined);
  return template;
}

/**
 * Starts the real service on port 0 with its own data directory and, on
 * Postgres runs, its own fresh database. Closed after the test file.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = options.dataDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), "zero-test-")));
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase());
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    ZERO_DATA_DIR: dataDir,
    LOG_LEVEL: "info",
    // Every test signs up from 127.0.0.1; the per-address throttle has tests of its own.
    ZERO_SIGNUPS_PER_ADDRESS_PER_HOUR: "1000000",
    ZERO_SHUTDOWN_GRACE_MS: "2000",
    // The suite runs on PGlite (and on TEST_DATABASE_URL); the embedded Postgres has its own tests.
    ZERO_EMBEDDED_DATABASE: "pglite",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  const app = await startApp(config, {
    logger: createLogger(config.logLevel, sink),
    pgliteTemplate: databaseUrl ? undefined : await pgliteTemplate(),
    stageWork: options.stageWork,
    retryJitter: options.retryJitter,
  });
  const testApp: TestApp = Object.assign(Object.create(null) as object, app, {
    logs,
    dataDir,
    databaseUrl,
    close: async () => {
      running.delete(testApp);
      await app.close();
      if (!options.keepDataDir) await fs.rm(dataDir, { recursive: true, force: true });
    },
  });
  running.add(testApp);
  return testApp;
}

afterAll(async () => {
  await Promise.all([...running].map((app) => app.close()));
  await dropTestDatabases();
});
