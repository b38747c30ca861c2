import path from "node:path";
import { defineConfig } from "vitest/config";

// The same suite runs on embedded PGlite, and again on a real Postgres when
// TEST_DATABASE_URL is set (each test app gets a fresh database on it).
const projects = [
  { extends: true as const, test: { name: "pglite", env: { ZERO_TEST_DB: "pglite" } } },
  ...(process.env.TEST_DATABASE_URL ? [{ extends: true as const, test: { name: "postgres", env: { ZERO_TEST_DB: "postgres" } } }] : []),
];

export default defineConfig({
  // This file lives in test/; paths below are from the repository root.
  root: path.resolve(import.meta.dirname, ".."),
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    projects,
  },
});
