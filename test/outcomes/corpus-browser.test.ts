import fs from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { CASES } from "./support/goal-corpus.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, outcomeDeps, seriousViolations, TEST_ARTIFACTS } from "./support/outcome-kit.js";
import { runStages } from "./support/run-stages.js";

/** The goals that broke first for newcomers: right to left, CJK, emoji, a very long goal, a very long name. */
const WORST = [
  "Arabic (RTL), a quoted name",
  "Chinese, no name (the goal that became the name)",
  "Hindi",
  "English with emoji and accents",
  "a 2,000-character English goal",
  "a 75-character business name",
];

const fileName = (label: string) =>
  `corpus-${label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")}`;

// Chromium renders each worst case of the goal corpus, as a visitor at 1280 and 390 px would see it.
describe.runIf(haveChromium)("the corpus's worst goals in a browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    await fs.mkdir(TEST_ARTIFACTS, { recursive: true });
  });
  afterAll(() => browser?.close());

  it.each(CASES.filter((c) => WORST.includes(c.label)))(
    "$label: fits a phone, no serious axe findings, type that carries the script (screenshots kept)",
    async ({ label, goal, lang }) => {
      const deps = await outcomeDeps();
      await runStages(createStageWork(deps), { planId: "pln_shots", outcome: "website", goal }, { until: "build" });
      const home = pathToFileURL(path.join(deps.dir, "artifacts", "preview/pln_shots/index.html")).href;

      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(home, { waitUntil: "load" });
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `${fileName(label)}.png`), fullPage: true });
      expect(await page.evaluate(() => document.documentElement.lang)).toBe(lang);

      // Every glyph of the heading drawn by a font the page asked for, not a last-resort fallback (no tofu).
      const heading = await page.evaluate(() => {
        const h1 = document.querySelector("h1")!;
        return { text: h1.textContent ?? "", family: getComputedStyle(h1).fontFamily };
      });
      const families = heading.family.split(",").map((f) => f.trim().replace(/^"|"$/g, ""));
      const drawn = await page.evaluate(
        ({ families, text }) => families.some((family) => document.fonts.check(`16px "${family}"`, text) && family !== "serif" && family !== "sans-serif"),
        { families, text: heading.text },
      );
      expect(drawn, `${heading.family} for "${heading.text}"`).toBe(true);

      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `${fileName(label)}-mobile.png`), fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, "no sideways scrolling on a phone").toBeLessThanOrEqual(0);
      await page.close();

      expect(await seriousViolations(browser, home)).toEqual([]);
    },
    60_000,
  );
});
