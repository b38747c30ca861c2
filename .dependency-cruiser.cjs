// The dependency rule CI runs (`npm run lint:deps`): no import cycles in src/, type-only imports
// included, and imports point one way only, down these layers (lowest first):
//
//   src/api/ (the contract), src/strings.ts, gen/
//   platform: src/config.ts, src/observability/, src/db/, src/server/
//   src/engine/ (the generic stage engine)
//   features: src/auth/, src/executions/, src/outcomes/, src/chat/, src/console/ (not console/web), src/capabilities/
//   src/app.ts (composition)
//   src/main.ts, src/build.ts, src/cli/
//
// Beside the layers: src/client/ (ships to browsers and other services) and src/console/web/ (the
// Console's browser bundle) import only the contract, and each other as noted below.
// test/lint/dependency-rule.test.ts proves that each kind of rule below can fail.

const api = "^src/api/";
const strings = "^src/strings[.]ts$";
const gen = "^gen/";
const observability = "^src/observability/";
const platform = "^src/(?:config[.]ts$|observability/|db/|server/)";
const engine = "^src/engine/";
const features = ["^src/(?:auth|executions|outcomes|chat|capabilities)/", "^src/console/(?!web/)"];
const app = "^src/app[.]ts$";
const top = "^src/(?:main[.]ts$|build[.]ts$|cli/)";
const client = "^src/client/";
const web = "^src/console/web/";

/** Packages from node_modules: allowed everywhere (whether a package is fit for a browser is not checked here). */
const npm = ["npm", "npm-dev", "npm-optional", "npm-peer", "npm-bundled", "npm-no-pkg", "npm-unknown"];
/** Node's built-in modules (`node:…`): allowed from the platform layer up, not in the contract, client or Console. */
const builtins = ["core"];

/**
 * A rule that lets files in `from` import only `allowed` (plus packages, and built-ins where `withBuiltins`).
 * Imports of app.ts, main.ts, build.ts and cli/ are left to `nothing-imports-composition`, so each is reported once.
 */
function onlyImports(name, comment, from, allowed, { withBuiltins }) {
  return {
    name,
    comment,
    severity: "error",
    from: { path: from },
    to: { pathNot: [...allowed, app, top], dependencyTypesNot: withBuiltins ? [...npm, ...builtins] : npm },
  };
}

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle in src/ (type-only imports count too). Break it: move the shared piece down a layer or pass it in.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "in-a-layer",
      comment: "This file is in no layer of .dependency-cruiser.cjs: move it into one, or add its folder to the layers there.",
      severity: "error",
      from: { path: "^src/", pathNot: [api, strings, platform, engine, ...features, app, top, client, web] },
      to: {},
    },
    {
      name: "strings-imports-nothing",
      comment: "src/strings.ts is the bottom of the tree: it imports nothing from src/.",
      severity: "error",
      from: { path: strings },
      to: { path: "^src/" },
    },
    onlyImports(
      "api-is-the-contract",
      "src/api/ is the contract shared by server, client, CLI and Console: it may import only gen/, src/strings.ts and packages, never node: built-ins.",
      api,
      [api, strings, gen],
      { withBuiltins: false },
    ),
    onlyImports(
      "platform-below-engine-and-features",
      "The platform (config.ts, observability/, db/, server/) may import only api/, strings.ts, gen/ and each other: never engine/, a feature folder, app.ts or above.",
      platform,
      [api, strings, gen, platform],
      { withBuiltins: true },
    ),
    onlyImports(
      "engine-is-generic",
      "The stage engine is generic: it may import only api/, strings.ts, gen/ and observability/. Plans, outcomes, the database and transports are handed to it.",
      engine,
      [api, strings, gen, observability, engine],
      { withBuiltins: true },
    ),
    onlyImports(
      "features-import-lower-layers",
      "A feature folder may import the layers below it (api/, strings.ts, gen/, platform, engine/) and other features, never app.ts, main.ts, cli/, client/ or console/web/.",
      features,
      [api, strings, gen, platform, engine, ...features],
      { withBuiltins: true },
    ),
    onlyImports(
      "app-composes-lower-layers",
      "src/app.ts composes the features: it imports the layers below it, never main.ts, build.ts, cli/, client/ or console/web/.",
      app,
      [api, strings, gen, platform, engine, ...features],
      { withBuiltins: true },
    ),
    {
      name: "nothing-imports-composition",
      comment: "Only main.ts, build.ts and cli/ may import src/app.ts, and nothing imports main.ts or cli/ but themselves.",
      severity: "error",
      from: { path: "^src/", pathNot: [app, top] },
      to: { path: [app, top] },
    },
    onlyImports(
      "client-imports-only-the-contract",
      "src/client/ ships to browsers and other services: it may import only api/, strings.ts, gen/, itself and packages.",
      client,
      [client, api, strings, gen],
      { withBuiltins: false },
    ),
    onlyImports(
      "console-web-imports-only-the-contract",
      "src/console/web/ is the Console's browser bundle: it may import only itself, api/, client/, strings.ts, gen/ and packages.",
      web,
      [web, api, client, strings, gen],
      { withBuiltins: false },
    ),
    {
      name: "not-to-unresolvable",
      comment: "An import that cannot be resolved to a file or package, so the layer rules cannot judge it.",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    preserveSymlinks: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    moduleSystems: ["es6", "cjs"],
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
