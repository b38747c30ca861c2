import fs from "node:fs";
import path from "node:path";
import { defineConfig } from "vitest/config";

const root = path.resolve(import.meta.dirname, "..");

/**
 * The one module through which a run's database reaches a test: a file whose
 * imports never lead to it behaves the same in both projects, so the
 * postgres project leaves it out rather than run it twice (the browser
 * corpus alone was 45 s of a second run).
 */
const DATABASE_MODULE = path.join(root, "test/support/database.ts");

/** Whether `file` imports, directly or through other test modules, the run's database. */
function reachesDatabase(file: string, seen = new Set<string>()): boolean {
  if (file === DATABASE_MODULE) return true;
  if (seen.has(file) || !file.startsWith(path.join(root, "test"))) return false;
  seen.add(file);
  const source = fs.readFileSync(file, "utf8");
  // `from "…"`, `import "…"` (a side effect), `import("…")` and `vi.mock("…")`.
  for (const [, specifier] of source.matchAll(/(?:from|import\(?|vi\.mock\()\s*"(\.{1,2}\/[^"]+)"/g)) {
    const imported = path.resolve(path.dirname(file), specifier!.replace(/\.js$/, ".ts"));
    if (fs.existsSync(imported) && reachesDatabase(imported, seen)) return true;
  }
  return false;
}

const databaseFree = fs.globSync("test/**/*.test.ts", { cwd: root }).filter((file) => !reachesDatabase(path.join(root, file)));

// The same suite runs on embedded PGlite, and again on a real Postgres when
// TEST_DATABASE_URL is set (each test app gets a fresh database on it).
const projects = [
  { extends: true as const, test: { name: "pglite", env: { ZERO_TEST_DB: "pglite" } } },
  ...(process.env.TEST_DATABASE_URL ? [{ extends: true as const, test: { name: "postgres", env: { ZERO_TEST_DB: "postgres" }, exclude: databaseFree } }] : []),
];

export default defineConfig({
  // This file lives in test/; paths below are from the repository root.
  root,
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two at a time even on two cores (vitest's default is one fewer than the cores): most files wait on
    // servers, browsers and timers rather than compute, and two halve the wall time of CI's run.
    maxWorkers: 2,
    projects,
  },
});
