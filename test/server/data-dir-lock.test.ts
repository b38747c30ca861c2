import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { DataDirLockedError, lockDataDir } from "../../src/db/data-dir-lock.js";
import { createLogger } from "../../src/observability/logger.js";

describe("the embedded database's data dir belongs to one process", () => {
  it("a second app on the same dir is refused before it opens the database, and may start once the first has stopped", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-lock-"));
    const config = loadConfig({ PORT: "0", ZERO_DATA_DIR: dataDir, LOG_LEVEL: "silent" });
    const logger = createLogger("silent");
    try {
      const first = await startApp(config, { logger });
      const error = await startApp(config, { logger }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DataDirLockedError);
      expect((error as Error).message).toBe(
        `another process (pid ${process.pid}) holds the data dir ${dataDir}; stop it, or give this one its own ZERO_DATA_DIR`,
      );
      // The refused one neither listened nor touched the first's database.
      expect(await fetch(`${first.url}/readyz`).then((r) => r.status)).toBe(200);
      await first.close();
      const again = await startApp(config, { logger });
      await again.close();
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it("the lock is the kernel's: released when its holder lets go, not by a timeout", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-lock-"));
    try {
      const held = await lockDataDir(dataDir);
      await expect(lockDataDir(dataDir)).rejects.toBeInstanceOf(DataDirLockedError);
      await held.release();
      const next = await lockDataDir(dataDir);
      await next.release();
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });
});
