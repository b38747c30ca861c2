// The ReDoS check CI runs (`npm run lint:regex`): every regular expression in
// src/ is analysed by eslint-plugin-regexp (scslre underneath) for
// super-linear backtracking and super-linear moves. Nothing else is linted here.
import tsParser from "@typescript-eslint/parser";
import regexp from "eslint-plugin-regexp";

export default [
  {
    files: ["src/**/*.ts"],
    languageOptions: { parser: tsParser },
    plugins: { regexp },
    rules: {
      "regexp/no-super-linear-backtracking": ["error", { report: "potential" }],
      // Off for sticky and anchored-start patterns is the rule's default; partial matches of our patterns run on
      // bounded input, but we want to see them all: a regex that moves super-linearly on unbounded input is a bug.
      "regexp/no-super-linear-move": ["error", { report: "potential", ignoreSticky: false, ignorePartial: false }],
      "regexp/no-misleading-unicode-character": "error",
    },
  },
];
