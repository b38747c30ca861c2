import path from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

/** Lints `code` as if it were a file under src/, with the config CI uses. */
async function findings(code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: root, overrideConfigFile: path.join(root, "test/lint/regex.eslint.config.js") });
  const [result] = await eslint.lintText(code, { filePath: path.join(root, "src/example.ts") });
  return result!.messages.map((m) => m.ruleId ?? m.message);
}

describe("the ReDoS check CI runs (npm run lint:regex)", () => {
  it("fails on super-linear patterns, the old e-mail check among them", async () => {
    expect(await findings("export const nested = /(a+)+$/;")).toContain("regexp/no-super-linear-backtracking");
    expect(await findings("export const email = /^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$/;")).not.toEqual([]);
    expect(await findings('export const trim = (s: string) => s.replace(/\\/+$/, "");')).toContain("regexp/no-super-linear-move");
  });

  it("passes linear ones, and the whole of src/ as it is", async () => {
    expect(await findings("export const id = /^[A-Za-z0-9._:-]{1,128}$/;")).toEqual([]);
    const eslint = new ESLint({ cwd: root, overrideConfigFile: path.join(root, "test/lint/regex.eslint.config.js") });
    const results = await eslint.lintFiles(["src"]);
    const problems = results.flatMap((r) => r.messages.map((m) => `${path.relative(root, r.filePath)}:${m.line} ${m.ruleId}`));
    expect(problems).toEqual([]);
  }, 60_000);
});
