import path from "node:path";
import { getSystemErrorMessage } from "node:util";
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
    console.error(`project-zero: ${startFailure(error, config)}`);
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

/**
 * Why the service did not start, in one line. What the operator fixes in the
 * configuration names its variable and value: an address it cannot listen on
 * (HOST, PORT), a file it cannot use in a directory it was given.
 */
function startFailure(error: unknown, config: Config): string {
  if (error instanceof DatabaseUnavailableError || error instanceof DataDirLockedError) return error.message;
  const { code, errno, syscall, path: file, message } = error as NodeJS.ErrnoException;
  const reason = `${errno === undefined ? message : getSystemErrorMessage(errno)} (${code})`;
  const address = `${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`;
  if (syscall === "getaddrinfo" && (error as { hostname?: string }).hostname === config.host) {
    return `HOST: cannot listen on ${config.host}: the name does not resolve (${code})`;
  }
  if (syscall === "listen") {
    if (code === "EADDRNOTAVAIL") return `HOST: cannot listen on ${config.host}: not an address of this machine (${code})`;
    if (code === "EADDRINUSE") return `PORT: cannot listen on ${address}: another process listens there (${code})`;
    return `${code === "EACCES" ? "PORT" : "HOST / PORT"}: cannot listen on ${address}: ${reason}`;
  }
  const directories: [string, string][] = [["ZERO_DATA_DIR", config.dataDir]];
  if (config.artifacts.kind === "file") directories.push(["ZERO_ARTIFACTS", config.artifacts.dir]);
  const owner = file && syscall ? directories.find(([, dir]) => isWithin(dir, file)) : undefined;
  if (owner) return `${owner[0]}: cannot ${syscall} ${file}: ${reason}`;
  return `failed to start: ${message}`;
}

function isWithin(dir: string, file: string): boolean {
  const relative = path.relative(dir, path.resolve(file));
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

void main();
