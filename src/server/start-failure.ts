import path from "node:path";
import { getSystemErrorMessage } from "node:util";
import type { Config } from "../config.js";
import { DataDirLockedError } from "../db/data-dir-lock.js";
import { DatabaseUnavailableError } from "../db/database.js";

/**
 * Why the service did not start, in one line. What the operator fixes in the
 * configuration names its variable and value: an address it cannot listen on
 * (HOST, PORT), a file it cannot use in a directory it was given.
 */
export function startFailure(error: unknown, config: Pick<Config, "host" | "port" | "dataDir" | "artifacts">): string {
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
  // The innermost: `file:` artifacts may be inside the data dir, or the data dir inside them.
  // Else a parent of one, which making it made first.
  const owner =
    file && syscall
      ? (directories.filter(([, dir]) => isWithin(dir, file)).sort(([, a], [, b]) => b.length - a.length)[0] ??
        directories.find(([, dir]) => isWithin(file, dir)))
      : undefined;
  if (owner) return `${owner[0]}: cannot ${syscall} ${file}: ${reason}`;
  return `failed to start: ${message}`;
}

function isWithin(dir: string, file: string): boolean {
  const relative = path.relative(dir, path.resolve(file));
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}
