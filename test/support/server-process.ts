import fs from "node:fs";
import path from "node:path";
import { bundleServer } from "../../src/build.js";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * The command that runs a server entry the way `npm start` runs the service:
 * compiled by the same build into one file under `outDir` (inside the
 * repository, so the bundle resolves node_modules), on Node with the V8
 * flags of the `start` script. Benchmarks use it so that tsx's loader is not
 * in their figures, and the process tests so that the build is what they test.
 */
export async function serverCommand(entry: string, outDir = "dist/bench"): Promise<string[]> {
  const outfile = path.join(root, outDir, `${path.basename(entry, ".ts")}.js`);
  await bundleServer(path.join(root, entry), outfile);
  return [process.execPath, ...startScriptNodeFlags(), outfile];
}

/** The flags between `node` and the entry in package.json's `start` script. */
function startScriptNodeFlags(): string[] {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const words = scripts.start!.split(/\s+/);
  if (words[0] !== "node") throw new Error(`the start script no longer runs node directly: ${scripts.start}`);
  return words.slice(1).filter((word) => word.startsWith("--"));
}
