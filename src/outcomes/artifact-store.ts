import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { ServiceError } from "../server/errors.js";
import { withoutTrailingSlashes } from "../strings.js";

/**
 * Where built sites and books live. Keys are `/`-separated paths such as
 * `preview/pln_x/index.html`; the interface is the smallest an object store
 * also offers (S3's conditional PUT gives `ifAbsent`), so one can replace the
 * file system later without touching the stages.
 *
 * A store that cannot be reached, does not answer in time or refuses the
 * service rejects with `artifactStoreUnavailable`'s error; a call whose
 * `signal` aborts rejects with the signal's reason.
 */
export interface ArtifactStore {
  /** Writes `key`, replacing it. With `ifAbsent`, writes only a new key and answers whether it did. */
  put(key: string, body: Uint8Array | string, options?: StoreCallOptions & { ifAbsent?: boolean }): Promise<boolean>;
  /** The bytes at `key`, or undefined. */
  get(key: string, options?: StoreCallOptions): Promise<Uint8Array | undefined>;
  /** Every key under `prefix` (which ends with `/`), sorted. */
  list(prefix: string, options?: StoreCallOptions): Promise<string[]>;
  /** Removes `key`; removing a missing key is not an error. */
  remove(key: string, options?: StoreCallOptions): Promise<void>;
  /** Removes every key under `prefix` (which ends with `/`), e.g. a deleted plan's files; answers how many. */
  removeAll(prefix: string, options?: StoreCallOptions): Promise<number>;
}

export interface StoreCallOptions {
  /** Stops the call: a client that hung up, a stage cancelled, lost or shut down. */
  signal?: AbortSignal;
}

/**
 * The error of a store that cannot be reached, does not answer in time or
 * refuses the service (a rotated key, say): 503 `unavailable` to a client,
 * and a transient failure, tried again, to a stage. `message` names the
 * store and what it answered, never a credential.
 */
export function artifactStoreUnavailable(message: string, cause?: unknown, retryAfterSeconds = 1): ServiceError {
  return new ServiceError("unavailable", message, { headers: { "Retry-After": String(retryAfterSeconds) }, cause });
}

/** `store` with `signal` on every call: what a stage run or a request hands the code it calls. */
export function withSignal(store: ArtifactStore, signal: AbortSignal): ArtifactStore {
  return {
    put: (key, body, options) => store.put(key, body, { ...options, signal }),
    get: (key) => store.get(key, { signal }),
    list: (prefix) => store.list(prefix, { signal }),
    remove: (key) => store.remove(key, { signal }),
    removeAll: (prefix) => store.removeAll(prefix, { signal }),
  };
}

const SEGMENT = /^[\p{L}\p{N}_][\p{L}\p{M}\p{N}._-]{0,127}$/u;
/** The longest file name most file systems take, in bytes. */
const MAX_SEGMENT_BYTES = 255;

/**
 * True for a key every store accepts: segments of letters and digits of any
 * script (a slug in Cyrillic or Japanese), their marks, `.`, `_` and `-`,
 * none starting with a dot (so no `..`, no hidden files) or a mark, no empty
 * segment. This is what makes path traversal impossible: a key that passes
 * cannot name anything outside the store's root.
 */
export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > 1024) return false;
  return key.split("/").every((segment) => SEGMENT.test(segment) && Buffer.byteLength(segment) <= MAX_SEGMENT_BYTES);
}

function checkKey(key: string): void {
  if (!isValidKey(key)) throw new Error(`invalid artifact key: ${JSON.stringify(key)}`);
}

/** How long a stage that met a full disk waits before it tries again. */
const DISK_FULL_RETRY_AFTER_SECONDS = 30;

/** The store on the local file system, under `root` (normally `ZERO_DATA_DIR/artifacts`). */
export function createFileArtifactStore(root: string): ArtifactStore {
  const resolved = path.resolve(root);
  const fileOf = (key: string): string => {
    checkKey(key);
    const file = path.join(resolved, ...key.split("/"));
    // Belt and braces: valid keys cannot escape, and this proves it for each call.
    if (!file.startsWith(resolved + path.sep)) throw new Error(`invalid artifact key: ${JSON.stringify(key)}`);
    return file;
  };

  return {
    async put(key, body, options = {}) {
      try {
        return await putFile(fileOf(key), body, options);
      } catch (error) {
        // A full disk passes once someone makes room: the stage that wrote is tried again, half a minute later (the
        // path is the operator's to see, in the log, not the client's).
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOSPC" || code === "EDQUOT") throw artifactStoreUnavailable("the artifact store's disk is full", error, DISK_FULL_RETRY_AFTER_SECONDS);
        throw error;
      }
    },

    async get(key, options = {}) {
      if (!isValidKey(key)) return undefined;
      try {
        const bytes = await fs.readFile(fileOf(key), { signal: options.signal });
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "EISDIR" || code === "ENOTDIR") return undefined;
        throw error;
      }
    },

    async list(prefix, options = {}) {
      options.signal?.throwIfAborted();
      const base = withoutTrailingSlashes(prefix);
      if (!isValidKey(base)) return [];
      const dir = fileOf(base);
      let entries: string[];
      try {
        entries = await fs.readdir(dir, { recursive: true });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ENOTDIR") return [];
        throw error;
      }
      const keys: string[] = [];
      for (const entry of entries) {
        const key = `${base}/${entry.split(path.sep).join("/")}`;
        if (!isValidKey(key) || key.endsWith(".tmp")) continue;
        const stat = await fs.stat(path.join(dir, entry)).catch(() => undefined);
        if (stat?.isFile()) keys.push(key);
      }
      return keys.sort();
    },

    async remove(key, options = {}) {
      options.signal?.throwIfAborted();
      await fs.rm(fileOf(key), { force: true });
    },

    async removeAll(prefix, options = {}) {
      const base = withoutTrailingSlashes(prefix);
      if (!isValidKey(base)) return 0;
      const count = (await this.list(`${base}/`, options)).length;
      await fs.rm(fileOf(base), { recursive: true, force: true });
      return count;
    },
  };
}

/**
 * Makes `prefix` hold exactly `files` (relative names → bytes): writes every
 * file, then removes the keys left over from an earlier run. Re-running a
 * stage therefore overwrites its own output and never leaves stale pages.
 */
export async function replaceTree(store: ArtifactStore, prefix: string, files: ReadonlyMap<string, Uint8Array | string>): Promise<void> {
  const base = prefix.endsWith("/") ? prefix : `${prefix}/`;
  for (const [name, body] of files) await store.put(base + name, body);
  const wanted = new Set([...files.keys()].map((name) => base + name));
  for (const key of await store.list(base)) if (!wanted.has(key)) await store.remove(key);
}

/** Copies every key under `from` to `to`, replacing what `to` held. */
export async function copyTree(store: ArtifactStore, from: string, to: string): Promise<number> {
  const base = from.endsWith("/") ? from : `${from}/`;
  const files = new Map<string, Uint8Array>();
  for (const key of await store.list(base)) {
    const body = await store.get(key);
    if (body) files.set(key.slice(base.length), body);
  }
  await replaceTree(store, to, files);
  return files.size;
}

/** Writes `body` at `file`: if absent only, or whole through a temporary file renamed over it. */
async function putFile(file: string, body: string | Uint8Array, options: { ifAbsent?: boolean; signal?: AbortSignal }): Promise<boolean> {
  const { signal } = options;
  signal?.throwIfAborted();
  await fs.mkdir(path.dirname(file), { recursive: true });

  if (options.ifAbsent) {
    try {
      // Without the signal: Node checks it between creating the file and writing it, and a claim left empty
      // (a slug's) would name no one and be refused to everyone for good. The write is a few bytes.
      await fs.writeFile(file, body, { flag: "wx" });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
      // Made here but not written (a full disk): an empty claim would name no one, for good.
      await fs.rm(file, { force: true });
      throw error;
    }
  }
  // Write then rename, so a reader never sees half a file and a crash leaves the old one.
  const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await fs.writeFile(temp, body, { signal });
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
  await fs.rename(temp, file);
  return true;
}
