import type { App } from "./app.js";
import type { Config } from "./config.js";
import { startApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { DataDirLockedError } from "./db/data-dir-lock.js";
import { DatabaseUnavailableError } from "./db/database.js";

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

  let app: App;
  try {
    app = await startApp(config);
  } catch (error) {
    if (error instanceof DatabaseUnavailableError || error instanceof DataDirLockedError || (error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      console.error(`project-zero: ${(error as Error).message}`);
      process.exit(1);
    }
    console.error(`project-zero: failed to start: ${(error as Error).message}`);
    process.exit(1);
  }

  if (process.stdout.isTTY) process.stdout.write(`project-zero is running: open ${app.url}/console/ (Ctrl-C stops it)\n`);

  let signals = 0;
  const stop = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      console.error(`project-zero: ${signal} again, exiting now`);
      process.exit(1);
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
}

void main();
