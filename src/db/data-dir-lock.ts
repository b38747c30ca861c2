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
  await makeDirectory(dir);
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

/**
 * `mkdir -p`, one level at a time. Node's recursive mkdir retries for ever,
 * at full CPU, where mkdir answers ENOENT under a parent that exists (/proc,
 * which root may write in): here that ENOENT is the answer, naming the
 * directory that could not be made.
 */
async function makeDirectory(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST" && (await fs.stat(dir)).isDirectory()) return;
    if (code !== "ENOENT" || path.dirname(dir) === dir) throw error;
  }
  await makeDirectory(path.dirname(dir));
  await fs.mkdir(dir).catch(async (error: NodeJS.ErrnoException) => {
    // Made meanwhile by another process.
    if (error.code !== "EEXIST" || !(await fs.stat(dir)).isDirectory()) throw error;
  });
}
