import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

// The package as another program gets it: `npm pack` (which runs `prepare`,
// as an install from git does) unpacked into a consumer's node_modules, our
// dependencies beside it as npm would hoist them, and plain Node (no tsx)
// or a bundler importing it by name.

const exec = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

/** Node as a consumer runs it: no loader from this test run's environment. */
function plainNode(args: string[], cwd: string, env: Record<string, string> = {}) {
  const { NODE_OPTIONS: _loaders, ...inherited } = process.env;
  return exec(process.execPath, args, { cwd, env: { ...inherited, ...env } });
}

describe("the package, installed", () => {
  let consumer: string;
  let installed: string;
  let app: TestApp;

  beforeAll(async () => {
    consumer = await fs.mkdtemp(path.join(os.tmpdir(), "zero-consumer-"));
    installed = path.join(consumer, "node_modules/project-zero");
    await fs.mkdir(installed, { recursive: true });
    await exec("npm", ["pack", "--pack-destination", consumer], { cwd: root });
    const [tarball] = (await fs.readdir(consumer)).filter((name) => name.endsWith(".tgz"));
    await exec("tar", ["-xzf", path.join(consumer, tarball!), "-C", installed, "--strip-components=1"]);
    for (const name of await fs.readdir(path.join(root, "node_modules"))) {
      if (!name.startsWith(".") && name !== "project-zero") await fs.symlink(path.join(root, "node_modules", name), path.join(consumer, "node_modules", name));
    }
    await fs.writeFile(path.join(consumer, "package.json"), JSON.stringify({ type: "module", dependencies: { "project-zero": "*" } }));
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
    if (consumer) await fs.rm(consumer, { recursive: true, force: true });
  });

  it("imports in plain Node: createZeroClient from project-zero talks to a real service", async () => {
    await fs.writeFile(
      path.join(consumer, "capabilities.mjs"),
      [
        'import { createZeroClient, ZeroError } from "project-zero";',
        'import * as web from "project-zero/web";',
        "const zero = createZeroClient({ baseUrl: process.argv[2] });",
        "const { service, outcomes } = await zero.capabilities();",
        "console.log(JSON.stringify({ service, outcomes: outcomes.map((o) => o.id), oneZeroError: web.ZeroError === ZeroError }));",
      ].join("\n"),
    );
    const { stdout } = await plainNode(["capabilities.mjs", app.url], consumer);
    expect(JSON.parse(stdout)).toEqual({ service: "project-zero", outcomes: ["website", "ebook"], oneZeroError: true });
  });

  it("gives a bundler project-zero/web (and, for browsers, project-zero) with nothing from node:", async () => {
    const bundled = await build({
      stdin: { contents: 'export * from "project-zero/web"; export { createZeroClient as viaRoot } from "project-zero";', resolveDir: consumer },
      absWorkingDir: consumer,
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(bundled.metafile.inputs);
    expect(inputs).toContain("node_modules/project-zero/dist/client/web.js");
    expect(inputs.filter((input) => /connect-node|project-zero\/dist\/client\/node\.js|^node:/.test(input))).toEqual([]);
    expect(bundled.outputFiles[0]!.text).not.toMatch(/["']node:/);
  });

  it("types both entries for a TypeScript program", () => {
    const file = path.join(consumer, "check.ts");
    ts.sys.writeFile(
      file,
      [
        'import { createZeroClient, type Plan } from "project-zero";',
        'import { createZeroClient as createWebClient } from "project-zero/web";',
        'const zero = createZeroClient({ baseUrl: "http://127.0.0.1:8080", protocol: "grpc" });',
        "export const service: Promise<string> = zero.capabilities().then((capabilities) => capabilities.service);",
        "export const progress = (plan: Plan): number => plan.progress;",
        "// @ts-expect-error only the Node entry takes a protocol",
        'createWebClient({ baseUrl: "http://127.0.0.1:8080", protocol: "grpc" });',
        // The README's own lines, under exactOptionalPropertyTypes too: an environment variable may be unset.
        'const fromEnv = createZeroClient({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.ZERO_API_KEY });',
        'export const revised = (plan: Plan) => fromEnv.executions.revise(plan.id, "calmer", { revision: plan.revisions.at(-1)?.number });',
      ].join("\n"),
    );
    const program = ts.createProgram([file], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2023,
      strict: true,
      exactOptionalPropertyTypes: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
      typeRoots: [path.join(consumer, "node_modules/@types")],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(problems).toEqual([]);
    const declarations = program.getSourceFiles().map((source) => source.fileName);
    expect(declarations.some((name) => name.endsWith("dist/types/src/client/node.d.ts"))).toBe(true);
  });

  it("runs its command, project-zero, from the installed copy", async () => {
    const { bin } = JSON.parse(await fs.readFile(path.join(installed, "package.json"), "utf8")) as { bin: Record<string, string> };
    const { apiKey } = await createAccountWithKey(app, ["read"]);
    const { stdout } = await plainNode([path.join(installed, bin["project-zero"]!), "plans", "--json"], consumer, { ZERO_URL: app.url, ZERO_API_KEY: apiKey });
    expect(JSON.parse(stdout)).toEqual({ plans: [] });
  });
});
