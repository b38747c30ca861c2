import os from "node:os";
import { type Config, loadConfig } from "../../../src/config.js";

/**
 * The service's config for a benchmark that starts it in-process on `databaseUrl`:
 * any free port, no log output, a generation limit no run reaches; `env` adds or overrides.
 */
export function benchConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    PORT: "0",
    HOST: "127.0.0.1",
    ZERO_DATA_DIR: os.tmpdir(),
    LOG_LEVEL: "silent",
    ZERO_GENERATION_LIMIT: "1000000000",
    ...env,
  });
}
