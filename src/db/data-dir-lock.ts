import fs from "node:fs/promises";
import path from "node:path";

/** Raised when another process holds the data directory; the message is one line for the operator. */
export class DataDirLockedError extends Error {
  override name = "DataDirLockedError";
}

/** Held for the life of the process that opened the data directory. */
export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * Takes the data directory for this process alone. PGlite is a single-process
 * database: two servers on one directory each keep their own view and the
 * last to write wins, losing accepted plans. The lock is the kernel's
 * (`flock`-style, on an open file), so it ends with the process however the
 * process ends: a crash or `kill -9` never leaves a stale lock behind.
 */
export async function lockDataDir(dir: string): Promise<DataDirLock> {
  await fs.mkdir(dir, { recursive: true });
  const file = path.join(dir, "lock");
  // "a+": open without truncating, so a holder's pid is still there to read when the lock is refused.
  const handle = await fs.open(file, "a+");
  // Loaded only when used, like PGlite: a server on real Postgres takes no lock and needs no native addon.
  const { tryLock, unlock } = await import("fs-native-extensions");
  let locked = false;
  try {
    locked = tryLock(handle.fd);
    if (!locked) {
      const holder = (await handle.readFile("utf8")).trim();
      throw new DataDirLockedError(
        `another process${/^\d+$/.test(holder) ? ` (pid ${holder})` : ""} holds the data dir ${dir}; stop it, or give this one its own ZERO_DATA_DIR`,
      );
    }
    await handle.truncate(0);
    await handle.write(`${process.pid}\n`, 0);
  } catch (error) {
    if (locked) unlock(handle.fd);
    await handle.close();
    throw error;
  }
  return {
    async release() {
      unlock(handle.fd);
      await handle.close();
    },
  };
}
