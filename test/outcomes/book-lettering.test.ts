import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import type { BookContent, EbookBrief } from "../../src/outcomes/content.js";
import { renderEpub, renderReader } from "../../src/outcomes/ebook/render-book.js";
import { generatedArt } from "../../src/outcomes/website/hero-art.js";
import { THEMES } from "../../src/outcomes/website/themes.js";
import { GARDENER_BRIEF as BRIEF } from "./support/goal-corpus.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, readZip, TEST_ARTIFACTS, xmlProblems } from "./support/outcome-kit.js";

const CONTENT: BookContent = { chapters: [{ title: "One", sections: [{ heading: "", paragraphs: ["Text."] }] }] };

function coverOf(brief: EbookBrief): string {
  const book = readZip(renderEpub(brief, CONTENT, { planId: "pln_lettering", modified: new Date("2026-01-01T00:00:00Z") }));
  return book.find((e) => e.name === "EPUB/cover.svg")!.text;
}

/** The lines set on a cover, in order: their words, size, and whether they are the title's (set bold). */
function coverLines(svg: string): { text: string; size: number; title: boolean }[] {
  return [...svg.matchAll(/<text ([^>]*)>([^<]*)<\/text>/gu)].map(([, attributes, text]) => ({
    text: text!
      .replace(/&amp;/g, "&")
      .replace(/&#39;/g, "'")
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">"),
    size: Number(/font-size="([\d.]+)"/u.exec(attributes!)![1]),
    title: attributes!.includes('font-weight="700"'),
  }));
}

/** Han, Kana and Hangul, and the full-width punctuation set with them: a character as wide as it is high. */
const FULL_WIDTH = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303F\u30FC\uFF01-\uFF60]/u;
/** Punctuation a line in Chinese or Japanese never begins with. */
const CLOSING = /^[\u3001\u3002\uFF0C\uFF0E\uFF1A\uFF1B\uFF01\uFF1F\u300D\u300F\uFF09\u3011\u30FC]/u;

const JAPANESE_TITLE = "東京の小さな台所で毎日つくる季節の野菜料理と保存食のきほん";
const CHINESE_TITLE = "我的阳台菜园：在城市里种植新鲜蔬菜的完全指南";
const QUOTED_TITLE = "「静かな庭」、はじめての園芸。ベランダの野菜づくり";

describe("the lettering on a book's cover", () => {
  it.each([
    ["Japanese", JAPANESE_TITLE, "ja"],
    ["Chinese", CHINESE_TITLE, "zh"],
    ["Japanese in quotation marks", QUOTED_TITLE, "ja"],
  ])("breaks a %s title between its characters, on several lines that fit the cover, every character kept", (_, title, language) => {
    const subtitle = "ベランダで育てる、はじめての野菜づくり入門ガイドブック";
    const svg = coverOf({ ...BRIEF, title, subtitle, author: "", language });
    expect(xmlProblems(svg)).toEqual([]);
    const lines = coverLines(svg);
    const titleLines = lines.filter((l) => l.title);
    expect(titleLines.length).toBeGreaterThan(1);
    expect(titleLines.map((l) => l.text).join("")).toBe(title);
    expect(
      lines
        .filter((l) => !l.title)
        .map((l) => l.text)
        .join(""),
    ).toBe(subtitle);
    for (const line of lines) {
      expect(line.text, line.text).not.toMatch(CLOSING);
      // Every character here is as wide as the type is high, so a line of n of them is n times its size wide.
      expect([...line.text].every((c) => FULL_WIDTH.test(c))).toBe(true);
      expect([...line.text].length * line.size, line.text).toBeLessThanOrEqual(600 * 0.8);
    }
  });

  it("sets the subtitle the same size under a short title as under a long one", () => {
    const subtitle = (title: string) => coverLines(coverOf({ ...BRIEF, title })).filter((l) => !l.title && l.text !== BRIEF.author);
    const short = subtitle("Pots");
    expect(short.length).toBeGreaterThan(0);
    expect(short).toEqual(subtitle("The Patient Gardener of the Twelve Balconies"));
  });

  it("gives the author a line of their own, whatever the subtitle's length", () => {
    const subtitle =
      "Vegetables, herbs and a few flowers on a small city balcony, one season at a time, from the first seeds in March to the last tomatoes of October";
    const lines = coverLines(coverOf({ ...BRIEF, subtitle }));
    expect(lines.at(-1)!.text).toBe("Ada Green");
    expect(lines.filter((l) => l.text.includes("Ada Green"))).toHaveLength(1);
    // An English book says "by" in the cover's name; the author is on the picture too.
    expect(coverOf({ ...BRIEF, subtitle })).toContain('aria-label="Cover of The Patient Gardener by Ada Green"');
  });

  it("ends a title or subtitle too long for the cover with an ellipsis, never cut silently", () => {
    const title = "The Patient Gardener: Growing Vegetables, Herbs, Salad Leaves and Flowers in Pots and Boxes on Small City Balconies, Roofs and Sills";
    const subtitle =
      "Vegetables, herbs and a few flowers on a small city balcony, one season at a time, from the first seeds in March to the last tomatoes of late October and the garlic you plant for next year";
    const lines = coverLines(coverOf({ ...BRIEF, title: title.slice(0, 120), subtitle: subtitle.slice(0, 160) }));
    const titleLines = lines.filter((l) => l.title).map((l) => l.text);
    const subtitleLines = lines.filter((l) => !l.title && l.text !== "Ada Green").map((l) => l.text);
    expect(titleLines.at(-1)).toMatch(/\u2026$/u);
    expect(subtitleLines.at(-1)).toMatch(/\u2026$/u);
    // What is shown is the start of each, in order, up to the ellipsis.
    expect(title.replace(/\s+/gu, " ").startsWith(titleLines.join(" ").replace(/[,:]?\u2026$/u, ""))).toBe(true);
    expect(subtitle.startsWith(subtitleLines.join(" ").replace(/[,:]?\u2026$/u, ""))).toBe(true);
    // A title that fits is never given one.
    expect(coverLines(coverOf(BRIEF)).some((l) => l.text.includes("\u2026"))).toBe(false);
  });

  it("sets the lettering right to left in a book in Arabic or Hebrew, and left to right otherwise", () => {
    for (const language of ["ar", "he", "ar_SA"]) {
      expect(coverOf({ ...BRIEF, title: "Python للمبتدئين", language }), language).toMatch(/<svg [^>]*direction="rtl"/u);
    }
    expect(coverOf(BRIEF)).not.toContain("rtl");
    expect(coverOf({ ...BRIEF, language: "ja" })).not.toContain("rtl");
  });
});

/** A cover in a page of its own, as Chromium lays it out. */
const COVERS: Record<string, EbookBrief> = {
  english: BRIEF,
  "long-english": {
    ...BRIEF,
    title: "The Patient Gardener: Growing Vegetables, Herbs, Salad Leaves and Flowers in Pots and Boxes on Small City Balconies",
    subtitle: "Vegetables, herbs and a few flowers on a small city balcony, one season at a time, from the first seeds in March to the last tomatoes",
    author: "Ada Green-Montgomery and Bartholomew Featherstonehaugh-Smith",
  },
  german: { ...BRIEF, title: "Donaudampfschifffahrtsgesellschaftskapitänswitwenrentenberatungsstelle", language: "de" },
  japanese: { ...BRIEF, title: JAPANESE_TITLE, subtitle: "ベランダで育てる、はじめての野菜づくり入門ガイドブック", author: "山田花子", language: "ja" },
  chinese: { ...BRIEF, title: CHINESE_TITLE, subtitle: "从播种到收获，一年四季的阳台种植计划与实用技巧", author: "", language: "zh-Hans" },
  korean: { ...BRIEF, title: "작은 발코니에서 채소와 허브를 기르는 사계절 안내서", subtitle: "도시 정원사를 위한 첫걸음", author: "", language: "ko" },
  arabic: { ...BRIEF, title: "Python للمبتدئين: دليل عملي خطوة بخطوة", subtitle: "تعلم البرمجة من الصفر", author: "", language: "ar", tone: "bold" },
};

/** The little of the DOM the page scripts below use: these tests compile without the DOM library. */
interface SvgText {
  textContent: string | null;
  getBBox(): { x: number; width: number };
  getStartPositionOfChar(index: number): { x: number };
  getNumberOfChars(): number;
}
interface Dom {
  document: { querySelectorAll(selector: string): Iterable<SvgText>; querySelector(selector: string): SvgText };
  getComputedStyle(element: SvgText): { fontStyle: string };
}

describe.runIf(haveChromium)("a book's cover and reader in headless Chromium", () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "pz-lettering-"));
  });
  afterAll(async () => {
    await browser?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it.each(Object.keys(COVERS))("keeps every line of the %s cover inside its 600 pixels (screenshot kept)", async (name) => {
    const svg = coverOf(COVERS[name]!);
    const page = await browser.newPage({ viewport: { width: 600, height: 900 } });
    try {
      await page.setContent(svg);
      const boxes = await page.evaluate(() =>
        [...(globalThis as unknown as Dom).document.querySelectorAll("text")].map((t) => {
          const box = t.getBBox();
          return { text: t.textContent, left: box.x, right: box.x + box.width };
        }),
      );
      expect(boxes.length).toBeGreaterThan(1);
      for (const box of boxes) {
        expect(box.left, box.text!).toBeGreaterThanOrEqual(0);
        expect(box.right, box.text!).toBeLessThanOrEqual(600);
      }
      await fs.mkdir(TEST_ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `book-cover-${name}.png`) });
    } finally {
      await page.close();
    }
  });

  it("shows a mixed Arabic and Latin title in Arabic word order: the first word at the right", async () => {
    const page = await browser.newPage({ viewport: { width: 600, height: 900 } });
    try {
      // Short enough for one line, so its two words are set on the same line.
      await page.setContent(coverOf({ ...BRIEF, title: "Python بسهولة", subtitle: "", author: "", language: "ar" }));
      const [first, last] = await page.evaluate(() => {
        const text = (globalThis as unknown as Dom).document.querySelector("text");
        return [text.getStartPositionOfChar(0).x, text.getStartPositionOfChar(text.getNumberOfChars() - 1).x];
      });
      expect(first).toBeGreaterThan(last!);
    } finally {
      await page.close();
    }
  });

  it("slants a subtitle in a Latin-script book, and not one in Japanese, Chinese, Korean, Arabic or Hebrew", async () => {
    const styles: Record<string, string> = {};
    for (const language of ["en", "ja", "zh", "ko", "ar", "he"]) {
      const book = path.join(dir, language);
      await fs.mkdir(book, { recursive: true });
      for (const [name, text] of renderReader({ ...BRIEF, language }, CONTENT, "book.epub")) await fs.writeFile(path.join(book, name), text);
      const page = await browser.newPage();
      await page.goto(`file://${path.join(book, "index.html")}`);
      styles[language] = await page.evaluate(() => {
        const { document, getComputedStyle } = globalThis as unknown as Dom;
        return getComputedStyle(document.querySelector(".subtitle")).fontStyle;
      });
      await page.close();
    }
    expect(styles).toEqual({ en: "italic", ja: "normal", zh: "normal", ko: "normal", ar: "normal", he: "normal" });
  });
});

it("draws a site's link preview in Japanese on several lines too", () => {
  const svg = generatedArt(JAPANESE_TITLE, THEMES.calm, {
    width: 1200,
    height: 630,
    title: JAPANESE_TITLE,
    subtitle: "季節の野菜",
    label: JAPANESE_TITLE,
    lang: "ja",
  });
  const titleLines = coverLines(svg).filter((l) => l.title);
  expect(titleLines.length).toBeGreaterThan(1);
  expect(titleLines.map((l) => l.text).join("")).toBe(JAPANESE_TITLE);
});
