import os from "node:os";
import type { App } from "./app.js";
import type { Config } from "./config.js";
import { startApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { startFailure } from "./server/start-failure.js";

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env, { terminal: process.stdout.isTTY === true });
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const line of error.message.split("\n")) console.error(`project-zero: bad configuration: ${line}`);
      process.exit(2);
    }
    throw error;
  }

  // Heard from the start: a signal while the database starts gives the start up, which stops what it had started.
  const starting = new AbortController();
  let app: App | undefined;
  let signals = 0;
  const stop = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      // The embedded Postgres is told to stop as this process exits (see startEmbeddedPostgres).
      console.error(`project-zero: ${signal} while stopping, exiting now`);
      process.exit(1);
    }
    if (!app) {
      starting.abort(signal);
      return;
    }
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`project-zero: error while stopping: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);

  try {
    app = await startApp(config, { signal: starting.signal });
  } catch (error) {
    // Given up by a signal: no error of its own to report (initdb, say, had the same Ctrl-C), and the shell's exit code for it.
    if (starting.signal.aborted) process.exit(128 + os.constants.signals[starting.signal.reason as NodeJS.Signals]);
    console.error(`project-zero: ${startFailure(error, config)}`);
    process.exit(1);
  }

  exitWhenDatabaseLost(app);
  if (process.stdout.isTTY) process.stdout.write(`project-zero is running: open ${app.url}/console/ (Ctrl-C stops it)\n`);
}

/** How long a service whose database is gone tries to close before it exits anyway. */
const CLOSE_WITHOUT_DATABASE_MS = 5000;

/**
 * Crash-only: a service whose embedded Postgres died would answer 503 for
 * good while its liveness check passes, so it exits 1 and its supervisor
 * restarts it, which starts Postgres again (crash recovery keeps the data).
 */
function exitWhenDatabaseLost(app: App): void {
  void app.databaseLost.then(async (why) => {
    console.error(`project-zero: ${why.message}; exiting so that the service is restarted`);
    await Promise.race([app.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, CLOSE_WITHOUT_DATABASE_MS))]);
    process.exit(1);
  });
}

void main();
