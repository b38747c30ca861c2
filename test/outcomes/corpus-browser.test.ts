import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BookContent, EbookBrief } from "../../src/outcomes/content.js";
import { renderReader } from "../../src/outcomes/ebook/render-book.js";
import { escapeHtml } from "../../src/outcomes/html.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { type Case, CASES, GARDENER_BRIEF, modelWritingIn } from "./support/goal-corpus.js";
import { schemaNameOf } from "./support/model-answers.js";
import { completion, FakeUpstream, reply } from "../chat/support/fake-upstream.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, httpCompleter, outcomeDeps, seriousViolations, TEST_ARTIFACTS } from "./support/outcome-kit.js";
import { runStages } from "./support/run-stages.js";

const fileName = (label: string) =>
  `corpus-${label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")}`;

// Chromium renders each worst case of the goal corpus, as a visitor at 1280 and 390 px would see it.
describe.runIf(haveChromium)("the corpus's goals in a browser", () => {
  let browser: Browser;
  const shots: { label: string; file: string }[] = [];
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    await fs.mkdir(TEST_ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await upstream?.close();
  });

  it.each(CASES)(
    "$label: fits a phone, type that carries the script, no serious axe findings (screenshots kept)",
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
      shots.push({ label, file: fileName(label) });
    },
    60_000,
  );

  it.each(CASES.filter((c): c is Case & { name: string } => c.name !== undefined))(
    "$label, written by a model in the goal's language: fits a phone, no serious axe findings (screenshots kept)",
    async (c) => {
      const write = modelWritingIn(c);
      upstream.reset();
      upstream.otherwise((exchange) => reply(completion(JSON.stringify(write(schemaNameOf(exchange.body), JSON.stringify(exchange.body.messages)))))(exchange));
      const deps = await outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
      await runStages(createStageWork(deps), { planId: "pln_upshots", outcome: "website", goal: c.goal }, { until: "build" });
      const home = pathToFileURL(path.join(deps.dir, "artifacts", "preview/pln_upshots/index.html")).href;
      const file = fileName(`model ${c.label}`);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(home, { waitUntil: "load" });
      expect(await page.evaluate(() => [document.documentElement.lang, document.documentElement.dir])).toEqual([c.lang, c.dir]);
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `${file}.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `${file}-mobile.png`), fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, "no sideways scrolling on a phone").toBeLessThanOrEqual(0);
      await page.close();
      expect(await seriousViolations(browser, home)).toEqual([]);
      shots.push({ label: `${c.label}, written by a model`, file });
    },
    60_000,
  );

  // Words longer than a line (a German compound in a quoted name, a Welsh town) wrap instead of widening the page.
  it.each([
    'Eine Website für unsere Praxis „Kieferorthopädiepraxisgemeinschaft Müller" in Köln',
    "A website for Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch Bakery in Wales",
  ])(
    "%s: every page fits 375 and 1280 px without sideways scrolling",
    async (goal) => {
      const deps = await outcomeDeps();
      await runStages(createStageWork(deps), { planId: "pln_words", outcome: "website", goal }, { until: "build" });
      const site = path.join(deps.dir, "artifacts", "preview/pln_words");
      const files = (await fs.readdir(site)).filter((file) => file.endsWith(".html"));
      expect(files.length).toBeGreaterThanOrEqual(3);
      const page = await browser.newPage();
      for (const file of files) {
        for (const width of [375, 1280]) {
          await page.setViewportSize({ width, height: 800 });
          await page.goto(pathToFileURL(path.join(site, file)).href, { waitUntil: "load" });
          const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          expect(overflow, `${file} at ${width} px`).toBeLessThanOrEqual(0);
        }
      }
      await page.close();
    },
    60_000,
  );

  it("renders two books' readers, in English and in Arabic (screenshots kept)", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-book-shots-"));
    for (const [label, brief, content] of BOOKS) {
      const reader = renderReader(brief, content, "book.epub");
      const bookDir = path.join(dir, fileName(label));
      for (const [name, text] of reader) {
        await fs.mkdir(path.dirname(path.join(bookDir, name)), { recursive: true });
        await fs.writeFile(path.join(bookDir, name), text);
      }
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(pathToFileURL(path.join(bookDir, "index.html")).href, { waitUntil: "load" });
      expect(await page.evaluate(() => document.documentElement.lang)).toBe(brief.language);
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `${fileName(label)}.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `${fileName(label)}-mobile.png`), fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, "no sideways scrolling on a phone").toBeLessThanOrEqual(0);
      await page.close();
      shots.push({ label, file: fileName(label) });
    }
  }, 60_000);

  // A page to look at every screenshot side by side: desktop and phone.
  afterAll(async () => {
    if (shots.length === 0) return;
    const rows = shots
      .map(
        ({ label, file }) =>
          `<section><h2>${escapeHtml(label)}</h2><div class="pair"><img src="${file}.png" alt="${escapeHtml(label)} at 1280 px"><img src="${file}-mobile.png" alt="${escapeHtml(label)} at 390 px"></div></section>`,
      )
      .join("\n");
    await fs.writeFile(
      path.join(TEST_ARTIFACTS, "gallery.html"),
      `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Outcomes gallery</title>\n<style>body{font-family:system-ui,sans-serif;margin:2rem;background:#f5f6f8}section{margin-bottom:3rem}.pair{display:flex;gap:1.5rem;align-items:flex-start}.pair img{border:1px solid #ccc;background:#fff}.pair img:first-child{width:60%}.pair img:last-child{width:20%}</style></head>\n<body>\n<h1>What both writers build for the goal corpus, and two books</h1>\n${rows}\n</body>\n</html>\n`,
    );
  });
});

/** Two books as the reader shows them: one in English, one in Arabic (right to left). */
const BOOKS: [string, EbookBrief, BookContent][] = [
  [
    "book in English",
    GARDENER_BRIEF,
    {
      chapters: [
        { title: "Light and Space", sections: [{ heading: "", paragraphs: ["Watch your balcony for a whole day before you plant anything."] }] },
        { title: "Pots", sections: [{ heading: "Sizes", paragraphs: ["Bigger pots hold water longer, and roots like room."] }] },
      ],
    },
  ],
  [
    "book in Arabic",
    {
      title: "البستاني الصبور",
      subtitle: "خضروات على الشرفة",
      author: "",
      audience: "من لديه شرفة بلا حديقة",
      purpose: "زراعة الطعام في المساحات الصغيرة",
      tone: "warm",
      language: "ar",
      description: "دليل قصير لزراعة الخضروات في الأصص.",
    },
    {
      chapters: [
        { title: "الضوء والمساحة", sections: [{ heading: "", paragraphs: ["راقب شرفتك يوما كاملا قبل أن تزرع أي شيء."] }] },
        { title: "الأصص", sections: [{ heading: "الأحجام", paragraphs: ["الأصص الكبيرة تحفظ الماء مدة أطول، والجذور تحب المساحة."] }] },
      ],
    },
  ],
];
