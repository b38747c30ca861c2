import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { bundleServer } from "../../src/build.js";

const root = path.resolve(import.meta.dirname, "../..");

/** What to spawn: `argv` with `env` added to the environment. */
export interface ServerCommand {
  argv: string[];
  env: Record<string, string>;
}

/**
 * The command that runs a server entry the way `npm start` runs the service:
 * compiled by the same build into one file under `outDir` (inside the
 * repository, so the bundle resolves node_modules), on Node with the
 * environment and V8 flags of the `start` script. Benchmarks use it so that
 * tsx's loader is not in their figures, and the process tests so that the
 * build is what they test.
 */
export async function serverCommand(entry: string, outDir = "dist/bench"): Promise<ServerCommand> {
  const outfile = path.join(root, outDir, `${path.basename(entry, ".ts")}.js`);
  await bundleServer(path.join(root, entry), outfile);
  const { env, nodeFlags } = startScript();
  return { argv: [process.execPath, ...nodeFlags, outfile], env };
}

/** `NAME=value … node --flag … dist/main.js` in package.json's `start` script, taken apart. */
function startScript(): { env: Record<string, string>; nodeFlags: string[] } {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const words = scripts.start!.split(/\s+/);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0] ?? "")) {
    const assignment = words.shift()!;
    const equals = assignment.indexOf("=");
    env[assignment.slice(0, equals)] = assignment.slice(equals + 1);
  }
  if (words[0] !== "node") throw new Error(`the start script no longer runs node directly: ${scripts.start}`);
  return { env, nodeFlags: words.slice(1).filter((word) => word.startsWith("--")) };
}

/**
 * Removes a service's data dir once its embedded Postgres has let go of it.
 * A service killed with SIGKILL takes its postmaster down through the parent-death
 * signal, but that postmaster still writes while it shuts down: removing the dir
 * under it fails with ENOTEMPTY. Its pid file goes last, so wait for that first.
 */
export async function removeDataDir(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, "postgres", "postmaster.pid");
  for (let waited = 0; fs.existsSync(pidFile) && waited < 15_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  await fs.promises.rm(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}

/**
 * Whether this process may mount a file system that only its children see (a
 * mount namespace of their own: root, or CAP_SYS_ADMIN), as the tests of a
 * read-only or full data dir need.
 */
export function canMountPrivately(): boolean {
  try {
    execFileSync("unshare", ["--mount", "--", "mount", "-t", "tmpfs", "tmpfs", os.tmpdir()], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * `argv`, run with a tmpfs mounted at `dir` (`options` as `mount -o` takes
 * them: `ro`, `size=8m`) in a mount namespace of its own, so the mount ends
 * with it and nothing else sees it.
 */
export function onPrivateTmpfs(dir: string, options: string, argv: string[]): string[] {
  return ["unshare", "--mount", "--", "sh", "-c", 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && exec "$@"', "sh", options, dir, ...argv];
}
