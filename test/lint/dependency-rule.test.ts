import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { cruise, type ICruiseResult, type IViolation } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const config = path.join(root, ".dependency-cruiser.cjs");

const tsconfig = JSON.stringify({
  compilerOptions: { target: "es2023", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true },
  include: ["src"],
});

/** One file in each layer, every import pointing down: the shape src/ is to have. */
const clean: Record<string, string> = {
  "src/strings.ts": 'export const NAME = "zero";\n',
  "src/api/plans.ts": 'import { NAME } from "../strings.js";\nexport type Plan = { id: string };\nexport const ALIAS = NAME;\n',
  "src/config.ts": 'import { ALIAS } from "./api/plans.js";\nexport const config = { alias: ALIAS };\n',
  "src/observability/logger.ts": "export const log = (line: string): void => console.log(line);\n",
  "src/db/database.ts": 'import { config } from "../config.js";\nexport const db = { config };\n',
  "src/server/listener.ts":
    'import http from "node:http";\nimport type { Plan } from "../api/plans.js";\nimport { db } from "../db/database.js";\nexport const listen = (plan: Plan) => [http.STATUS_CODES, db, plan];\n',
  "src/engine/stage-engine.ts":
    'import type { Plan } from "../api/plans.js";\nimport { log } from "../observability/logger.js";\nexport const run = (plan: Plan): void => log(plan.id);\n',
  "src/executions/plan-repository.ts":
    'import { db } from "../db/database.js";\nimport { run } from "../engine/stage-engine.js";\nexport const plans = { db, run };\n',
  "src/chat/chat-router.ts": 'import { plans } from "../executions/plan-repository.js";\nexport const router = { plans };\n',
  "src/console/console-routes.ts": 'import { router } from "../chat/chat-router.js";\nexport const routes = { router };\n',
  "src/app.ts":
    'import { routes } from "./console/console-routes.js";\nimport { listen } from "./server/listener.js";\nexport const startApp = () => ({ routes, listen });\n',
  "src/main.ts": 'import { startApp } from "./app.js";\nstartApp();\n',
  "src/client/zero-client.ts": 'import type { Plan } from "../api/plans.js";\nexport const show = (plan: Plan): string => plan.id;\n',
  "src/console/web/main.ts": 'import { show } from "../../client/zero-client.js";\nexport const view = show;\n',
  "src/cli/cli.ts": 'import { show } from "../client/zero-client.js";\nexport const cli = show;\n',
};

/** Writes `files` into a fresh tree in the temporary directory and cruises its src/ with the config CI uses. */
async function cruiseTree(files: Record<string, string>): Promise<IViolation[]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-dependency-rule-"));
  try {
    for (const [file, text] of Object.entries({ "tsconfig.json": tsconfig, ...files })) {
      await fs.mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await fs.writeFile(path.join(dir, file), text);
    }
    const options = await extractDepcruiseOptions(config);
    const tsConfigFile = path.join(dir, "tsconfig.json");
    const result = await cruise(["src"], { ...options, baseDir: dir, tsConfig: { fileName: tsConfigFile } }, {}, { tsConfig: extractTSConfig(tsConfigFile) });
    const output = result.output as ICruiseResult;
    expect(output.summary.totalCruised).toBeGreaterThanOrEqual(Object.keys(files).length);
    return output.summary.violations;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Each violation as `rule: from → to`; for a cycle, the whole cycle. */
async function violations(files: Record<string, string>): Promise<string[]> {
  return (await cruiseTree(files)).map((v) => `${v.rule.name}: ${[v.from, ...(v.cycle ? v.cycle.map((step) => step.name) : [v.to])].join(" → ")}`);
}

describe("the dependency rule CI runs (npm run lint:deps)", () => {
  it("passes a tree whose imports all point down the layers", async () => {
    expect(await violations(clean)).toEqual([]);
  });

  it("fails on an upward import: the engine importing a feature", async () => {
    const found = await violations({
      ...clean,
      "src/engine/a.ts": 'import { b } from "../executions/b.js";\nexport const a = b;\n',
      "src/executions/b.ts": "export const b = 1;\n",
    });
    expect(found).toEqual(["engine-is-generic: src/engine/a.ts → src/executions/b.ts"]);
  });

  it("fails on an import cycle made only of type-only imports", async () => {
    const found = await cruiseTree({
      ...clean,
      "src/chat/chat-request.ts": 'import type { Router } from "./chat-router-types.js";\nexport type ChatRequest = { router: Router };\n',
      "src/chat/chat-router-types.ts": 'import type { ChatRequest } from "./chat-request.js";\nexport type Router = (request: ChatRequest) => void;\n',
    });
    expect(found.map((v) => v.rule.name)).toEqual(["no-circular"]);
    const cycle = [found[0]!.from, ...found[0]!.cycle!.map((step) => step.name)];
    expect(cycle).toHaveLength(3);
    expect(new Set(cycle)).toEqual(new Set(["src/chat/chat-request.ts", "src/chat/chat-router-types.ts"]));
    expect(found[0]!.cycle!.every((step) => step.dependencyTypes.includes("type-only"))).toBe(true);
  });

  const oneBadImport = [
    {
      what: "the contract importing a built-in",
      rule: "api-is-the-contract",
      file: "src/api/clock.ts",
      text: 'import os from "node:os";\nexport const host = os.hostname();\n',
    },
    {
      what: "the platform importing the engine",
      rule: "platform-below-engine-and-features",
      file: "src/server/engine-route.ts",
      text: 'import { run } from "../engine/stage-engine.js";\nexport const r = run;\n',
    },
    {
      what: "a feature importing the composition",
      rule: "nothing-imports-composition",
      file: "src/chat/chat-part.ts",
      text: 'import type { startApp } from "../app.js";\nexport type Part = typeof startApp;\n',
    },
    {
      what: "the client importing the server",
      rule: "client-imports-only-the-contract",
      file: "src/client/node.ts",
      text: 'import { listen } from "../server/listener.js";\nexport const l = listen;\n',
    },
    {
      what: "the Console's browser code importing the database",
      rule: "console-web-imports-only-the-contract",
      file: "src/console/web/keys.ts",
      text: 'import { db } from "../../db/database.js";\nexport const k = db;\n',
    },
    {
      what: "strings.ts importing from src/",
      rule: "strings-imports-nothing",
      file: "src/strings.ts",
      text: 'import { log } from "./observability/logger.js";\nexport const NAME = "zero";\nlog(NAME);\n',
    },
    { what: "a file in no layer", rule: "in-a-layer", file: "src/misc/helper.ts", text: 'import { NAME } from "../strings.js";\nexport const h = NAME;\n' },
  ];

  it.each(oneBadImport)("fails on $what ($rule)", async ({ rule, file, text }) => {
    const found = await violations({ ...clean, [file]: text });
    expect(found.length).toBeGreaterThan(0);
    expect(found.filter((line) => !line.startsWith(`${rule}: ${file} → `))).toEqual([]);
  });
});
