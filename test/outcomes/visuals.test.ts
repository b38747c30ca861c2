import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { BookContent } from "../../src/outcomes/content.js";
import { GARDENER_BRIEF as BRIEF } from "./support/goal-corpus.js";
import { renderEpub, renderReader } from "../../src/outcomes/ebook/render-book.js";
import { generatedArt } from "../../src/outcomes/website/hero-art.js";
import { renderSite } from "../../src/outcomes/website/render-site.js";
import { THEMES } from "../../src/outcomes/website/themes.js";
import { normalizeBrief, normalizeOutline } from "../../src/outcomes/website/website-stages.js";
import { createOfflineWriter } from "../../src/outcomes/writers/offline-writer.js";
import { EPUBCHECK, haveEpubcheck, htmlProblems, readZip, xmlProblems } from "./support/outcome-kit.js";

const context = { accountId: "acc_test", signal: new AbortController().signal };

async function offlineSite(goal: string) {
  const writer = createOfflineWriter();
  const brief = normalizeBrief(await writer.websiteBrief(goal, context));
  const outline = normalizeOutline(brief, await writer.siteOutline(goal, brief, context));
  const pages = [];
  for (const page of outline.pages) pages.push(await writer.page(goal, brief, outline, page.slug, context));
  return { brief, outline, pages, files: renderSite(brief, outline, pages, "https://zero.example/sites/x/") };
}

/** The kinds of a page's sections, the hero and the closing call to action left out (every page may have those). */
function bodyKinds(page: { sections: readonly { kind: string }[] }): string[] {
  return page.sections
    .slice(1)
    .map((s) => s.kind)
    .filter((k) => k !== "cta");
}

describe("generated art", () => {
  it("differs by name and by theme, and is the same for the same name and theme", () => {
    const options = { width: 480, height: 480, label: "Pattern" };
    const a = generatedArt("Lyon Bakery", THEMES.warm, options);
    expect(generatedArt("Lyon Bakery", THEMES.warm, options)).toBe(a);
    expect(generatedArt("Maison Dupont", THEMES.warm, options)).not.toBe(a);
    const byTheme = new Set(Object.values(THEMES).map((theme) => generatedArt("Lyon Bakery", theme, options)));
    expect(byTheme.size).toBe(Object.keys(THEMES).length);
  });

  it("is well-formed SVG with an accessible name, whatever the name's script or characters", () => {
    for (const name of ["Café Ñandú 🍩", "مخبز القاهرة", "Tom & Jerry's <Diner>", "東京の花屋"]) {
      for (const theme of Object.values(THEMES)) {
        const svg = generatedArt(name, theme, { width: 1200, height: 630, title: name, subtitle: "A & B", label: `${name}: a picture` });
        expect(xmlProblems(svg), `${name} ${theme.id}`).toEqual([]);
        expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" [^>]*role="img" aria-label="[^"]+"/);
        expect(svg).toMatch(/<title>[^<]+<\/title>/);
      }
    }
    // The check itself catches what it is for.
    expect(xmlProblems("<svg><g></svg>")).not.toEqual([]);
    expect(xmlProblems("<svg><text>a & b</text></svg>")).not.toEqual([]);
  });
  it("shrinks only a name too long for its line, never the tagline under it", () => {
    /** The font sizes of the name's lines (set bold) and of the tagline's, on a 1200×630 link preview. */
    const sizes = (name: string) => {
      const svg = generatedArt(name, THEMES.professional, {
        width: 1200,
        height: 630,
        title: name,
        subtitle: "Beratung für Witwen von Kapitänen",
        label: name,
      });
      const texts = [...svg.matchAll(/<text [^>]*?(font-weight="700" )?font-size="([\d.]+)"/gu)];
      return { name: texts.filter((t) => t[1]).map((t) => Number(t[2])), tagline: texts.filter((t) => !t[1]).map((t) => Number(t[2])) };
    };
    const long = sizes("Donaudampfschifffahrtsgesellschaftskapitänswitwenrentenberatungsstelle");
    const fitting = sizes("Bäckerei am Donauufer Passau");
    expect(long.tagline.length).toBeGreaterThan(0);
    expect(long.tagline).toEqual(fitting.tagline);
    expect(long.name[0]).toBeLessThan(fitting.name[0]!);
  });
});

describe("sites from the offline writer", () => {
  it("get a hero picture and a link preview of their own, decorative on the page", async () => {
    const bakery = await offlineSite("A website for my small bakery in Lyon that sells sourdough bread and croissants");
    const yoga = await offlineSite("Website for a yoga studio called Still Water, for busy parents, offering morning classes and weekend retreats");
    expect(bakery.brief.tone).not.toBe(yoga.brief.tone);
    expect(bakery.files.get("hero.svg")).not.toBe(yoga.files.get("hero.svg"));
    expect(bakery.files.get("og.svg")).not.toBe(yoga.files.get("og.svg"));
    for (const { files, brief } of [bakery, yoga]) {
      expect(xmlProblems(files.get("hero.svg")!)).toEqual([]);
      expect(xmlProblems(files.get("og.svg")!)).toEqual([]);
      expect(files.get("og.svg")).toContain(`>${brief.name}</text>`);
      const home = files.get("index.html")!;
      // The heading beside it names the site, so the picture is decorative: empty alt, no initials circle.
      expect(home).toContain('<img class="hero-art" src="hero.svg" alt="" width="480" height="480">');
      expect(home).not.toContain("hero-mark");
      expect(home).toContain('<meta property="og:image" content="https://zero.example/sites/x/og.svg">');
      expect(home).toContain('<meta name="twitter:card" content="summary_large_image">');
      expect(await htmlProblems(files)).toEqual([]);
    }
  });

  it("give the menu, about and contact pages section kinds of their own, not the home page's cards", async () => {
    const { outline, pages, files } = await offlineSite(
      "A website for Café Ñandú in Lyon, selling croissants, sourdough bread and coffee, with online ordering. Contact: hola@nandu.example",
    );
    const home = pages[0]!;
    const homeKinds = new Set(bodyKinds(home));
    expect(homeKinds).toContain("features");
    expect(outline.pages.map((p) => p.slug)).toEqual(["index", "menu", "about", "contact"]);
    for (const page of pages.slice(1)) {
      const kinds = bodyKinds(page);
      expect(kinds.length, page.slug).toBeGreaterThan(0);
      expect(
        kinds.filter((k) => k === "features" || k === "steps"),
        page.slug,
      ).toEqual([]);
    }
    expect(bodyKinds(pages[1]!)).toContain("list");
    expect(bodyKinds(pages[3]!)).toEqual(expect.arrayContaining(["contact", "timeline"]));
    const menu = files.get("menu.html")!;
    expect(menu).toContain('<ul class="lines">');
    expect(menu).not.toContain('class="cards"');
    expect(files.get("contact.html")).toContain('<ol class="timeline">');
    expect(files.get("contact.html")).toContain('href="mailto:hola@nandu.example"');
  });
});

const CONTENT: BookContent = {
  chapters: [
    { title: "Light & Space", sections: [{ heading: "", paragraphs: ["Watch it for a day <b>before</b> you plant."] }] },
    { title: "Pots", sections: [{ heading: "Sizes", paragraphs: ["Bigger is better."] }] },
  ],
};

describe("the EPUB", () => {
  const epub = renderEpub(BRIEF, CONTENT, { planId: "pln_cover", modified: new Date("2026-11-25T08:00:00.123Z") });
  const entries = readZip(epub);
  const file = (name: string) => entries.find((e) => e.name === `EPUB/${name}`)?.text ?? "";

  it("has a generated cover first in the spine, full metadata and navigation for EPUB 3 and EPUB 2 readers", () => {
    const opf = file("package.opf");
    expect(opf).toMatch(/<dc:identifier id="pub-id">urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}<\/dc:identifier>/);
    for (const line of [
      "<dc:title>The Patient Gardener</dc:title>",
      "<dc:creator>Ada Green</dc:creator>",
      "<dc:language>en-GB</dc:language>",
      "<dc:description>A short guide to growing vegetables in pots &amp; boxes.</dc:description>",
      '<meta property="dcterms:modified">2026-11-25T08:00:00Z</meta>',
      '<item id="cover-image" href="cover.svg" media-type="image/svg+xml" properties="cover-image"/>',
      '<spine toc="ncx">\n<itemref idref="cover"/>',
      // Accessibility metadata (EPUB Accessibility 1.1): text throughout, the cover's artwork not needed to read it.
      '<meta property="schema:accessMode">textual</meta>',
      '<meta property="schema:accessModeSufficient">textual</meta>',
      '<meta property="schema:accessibilityFeature">structuralNavigation</meta>',
      '<meta property="schema:accessibilityFeature">tableOfContents</meta>',
      '<meta property="schema:accessibilityFeature">readingOrder</meta>',
      '<meta property="schema:accessibilityFeature">alternativeText</meta>',
      '<meta property="schema:accessibilityHazard">none</meta>',
    ])
      expect(opf).toContain(line);
    expect(opf).toMatch(/<meta property="schema:accessibilitySummary"( xml:lang="en")?>[^<]{20,}<\/meta>/u);
    expect(opf).not.toContain('schema:accessMode">visual');
    expect(opf).not.toContain("conformsTo");
    const cover = file("cover.svg");
    expect(xmlProblems(cover)).toEqual([]);
    expect(cover).toContain('aria-label="Cover of The Patient Gardener by Ada Green"');
    expect(cover).toContain(">The Patient</text>");
    expect(file("cover.xhtml")).toContain('<img src="cover.svg" alt="Cover of The Patient Gardener by Ada Green"/>');
    const nav = file("nav.xhtml");
    expect(nav).toContain('<nav epub:type="toc" id="toc">');
    expect(nav).toContain('<a epub:type="cover" href="cover.xhtml">Cover</a>');
    expect(nav).toContain('<a epub:type="bodymatter" href="chapter-01.xhtml">');
    const ncx = file("toc.ncx");
    expect(xmlProblems(ncx)).toEqual([]);
    expect(ncx).toContain('<navLabel><text>Light &amp; Space</text></navLabel><content src="chapter-01.xhtml"/>');
    // A different book gets a different cover.
    const other = readZip(renderEpub({ ...BRIEF, title: "Soup for Everyone", tone: "warm" }, CONTENT, { planId: "pln_other", modified: new Date() }));
    expect(other.find((e) => e.name === "EPUB/cover.svg")!.text).not.toBe(cover);
  });

  it("marks the template's English words as English in a book in another language, and leaves an English book unmarked", async () => {
    const thaiBrief = { ...BRIEF, title: "คนสวนผู้อดทน", subtitle: "ผักบนระเบียง", author: "", language: "th", tone: "bold" as const };
    const thaiNav = readZip(renderEpub(thaiBrief, CONTENT, { planId: "pln_th", modified: new Date() })).find((e) => e.name === "EPUB/nav.xhtml")!.text;
    expect(thaiNav).toContain('<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="th" xml:lang="th"');
    expect(thaiNav).toContain('<h1 lang="en" xml:lang="en" dir="ltr">Contents</h1>');
    expect(thaiNav).toContain('<title lang="en" xml:lang="en" dir="ltr">Contents</title>');
    expect(xmlProblems(thaiNav)).toEqual([]);
    const reader = renderReader(thaiBrief, CONTENT, "book.epub");
    expect(reader.get("index.html")).toContain('<h2 id="contents-title" lang="en" dir="ltr">Contents</h2>');
    expect(reader.get("index.html")).toContain('download lang="en" dir="ltr">Download the EPUB</a>');
    expect(reader.get("chapter-01.html")).toContain('<p class="chapter-number" lang="en" dir="ltr">Chapter 1</p>');
    // The pager's name is English too, so it is marked as such: no unmarked English "Chapters" in a Thai page.
    expect(reader.get("chapter-01.html")).toContain(
      '<nav class="pager" aria-labelledby="pager-name"><span id="pager-name" hidden lang="en" dir="ltr">Chapters</span>',
    );
    expect(reader.get("chapter-01.html")).not.toContain('aria-label="Chapters"');
    // The chapters' own titles keep the book's language: the pager's links to them carry no mark.
    expect(reader.get("chapter-01.html")).toMatch(/<a rel="next" href="chapter-02\.html">[^<]*<\/a>/);
    expect(await htmlProblems(new Map([...reader].filter(([name]) => name.endsWith(".html"))))).toEqual([]);

    expect(file("nav.xhtml")).toContain("<h1>Contents</h1>");
    expect(file("nav.xhtml")).toContain("<title>Contents</title>");
    expect(renderReader(BRIEF, CONTENT, "book.epub").get("index.html")).toContain('<h2 id="contents-title">Contents</h2>');
  });

  it("lays out a book in Arabic or Hebrew right to left, every page and the page turns", () => {
    for (const language of ["ar", "he"]) {
      const book = readZip(renderEpub({ ...BRIEF, language }, CONTENT, { planId: `pln_${language}`, modified: new Date() }));
      const pages = book.filter((e) => e.name.endsWith(".xhtml"));
      expect(pages.length, language).toBeGreaterThan(3);
      for (const page of pages) expect(page.text, `${language} ${page.name}`).toContain(`lang="${language}" xml:lang="${language}" dir="rtl"`);
      expect(book.find((e) => e.name === "EPUB/package.opf")!.text).toContain('<spine toc="ncx" page-progression-direction="rtl">');
    }
    for (const page of entries.filter((e) => e.name.endsWith(".xhtml"))) expect(page.text, page.name).not.toContain('dir="rtl"');
  });

  it.each([
    ["ar_SA", "ar-SA", "rtl"],
    ["Arabic", "ar", "rtl"],
    ["\u0627\u0644\u0639\u0631\u0628\u064A\u0629", "ar", "rtl"],
    ["iw", "he", "rtl"],
    ["pt_BR", "pt-BR", "ltr"],
    ["Japanese", "ja", "ltr"],
    ["Chinese (Simplified)", "zh-Hans", "ltr"],
    ["zh-CN-Hans", "zh-Hans-CN", "ltr"],
    ["EN-gb", "en-GB", "ltr"],
    ["not a language", "en", "ltr"],
  ])("takes a model's language %j as the tag %s, %s, in the package, every page, the cover and the reader", async (given, tag, direction) => {
    const brief = { ...BRIEF, language: given };
    const book = readZip(renderEpub(brief, CONTENT, { planId: "pln_language", modified: new Date() }));
    const opf = book.find((e) => e.name === "EPUB/package.opf")!.text;
    expect(opf).toContain(`<dc:language>${tag}</dc:language>`);
    expect(opf).toContain(`version="3.0" unique-identifier="pub-id" xml:lang="${tag}">`);
    expect(opf.includes('page-progression-direction="rtl"')).toBe(direction === "rtl");
    for (const page of book.filter((e) => e.name.endsWith(".xhtml")))
      expect(page.text, page.name).toContain(`lang="${tag}" xml:lang="${tag}" dir="${direction}"`);
    expect(book.find((e) => e.name === "EPUB/cover.svg")!.text).toContain(`xml:lang="${tag}"`);
    expect(renderReader(brief, CONTENT, "book.epub").get("index.html")).toContain(`<html lang="${tag}" dir="${direction}">`);
  });

  it.each([
    ["ja", '"Noto Serif CJK JP"', '"Noto Sans CJK JP"', true],
    ["zh-Hant", '"Noto Serif CJK TC"', '"Noto Sans CJK TC"', true],
    ["zh-CN", '"Noto Serif CJK SC"', '"Noto Sans CJK SC"', true],
    ["ar", '"Noto Naskh Arabic"', '"Noto Sans Arabic"', true],
    ["hi", '"Noto Serif Devanagari"', '"Noto Sans Devanagari"', true],
  ])("sets a book in %s in type for its script, the EPUB and the reader alike", (language, serif, sans, unspaced) => {
    const brief = { ...BRIEF, language };
    const epubCss = readZip(renderEpub(brief, CONTENT, { planId: "pln_fonts", modified: new Date() })).find((e) => e.name === "EPUB/style.css")!.text;
    const readerCss = renderReader(brief, CONTENT, "book.epub").get("style.css")!;
    for (const [name, css] of [
      ["epub", epubCss],
      ["reader", readerCss],
    ] as const) {
      // The script's families first, then the book's own stack as the fallback; font-family itself, which every reading system reads.
      expect(css, name).toMatch(new RegExp(`body:lang\\(${language}\\) \\{ font-family: ${serif}[^}]*Georgia[^}]*serif; \\}`));
      expect(css, name).toMatch(new RegExp(`h1:lang\\(${language}\\), h2:lang\\(${language}\\)[^{]* \\{ font-family: ${sans}[^}]*Arial, sans-serif; \\}`));
      expect(css.includes(`*:lang(${language}) { letter-spacing: normal !important; }`), name).toBe(unspaced);
    }
    expect(readerCss).toMatch(new RegExp(`\\.chapter-number:lang\\(${language}\\)[^{]*\\{ font-family: ${sans}`));
    // A book in a Latin script keeps the stacks it had.
    expect(readZip(renderEpub(BRIEF, CONTENT, { planId: "pln_fonts_en", modified: new Date() })).find((e) => e.name === "EPUB/style.css")!.text).not.toContain(
      "body:lang(",
    );
  });

  it("gives a site the same language tag from the same answer", async () => {
    const site = await offlineSite("A website for my small bakery in Lyon");
    const files = renderSite({ ...site.brief, language: "ar_SA" }, site.outline, site.pages, "https://zero.example/sites/x/");
    expect(files.get("index.html")).toContain('<html lang="ar-SA" dir="rtl">');
  });

  it("points the reader's page links the way the book reads: back to the left and on to the right, mirrored right to left", () => {
    /** The pager's words, tags and its hidden name left out, in reading order: the link back first, the link on last. */
    const pager = (page: string) =>
      /<nav class="pager"[^>]*>(.*?)<\/nav>/su
        .exec(page)![1]!
        .replace(/<span id="pager-name"[^>]*>[^<]*<\/span>/u, "")
        .replace(/<[^>]*>/gu, "");
    const english = renderReader(BRIEF, CONTENT, "book.epub");
    expect(pager(english.get("chapter-01.html")!)).toBe("\u2190 Contents Pots \u2192");
    expect(pager(english.get("chapter-02.html")!)).toBe("\u2190 Light &amp; Space Contents \u2192");
    for (const [language, contents] of [
      ["ar", "المحتويات"],
      ["he", "תוכן העניינים"],
    ] as const) {
      const book = renderReader({ ...BRIEF, language }, CONTENT, "book.epub");
      expect(pager(book.get("chapter-01.html")!), language).toBe(`\u2192 ${contents} Pots \u2190`);
      expect(pager(book.get("chapter-02.html")!), language).toBe(`\u2192 Light &amp; Space ${contents} \u2190`);
    }
  });

  it("leaves out the control characters a writer may emit, on every page and in every file", async () => {
    const controls = "\u0001\u007F\u0085\u009B";
    const noisy: BookContent = {
      chapters: [{ title: `Light${controls}`, sections: [{ heading: `Sun${controls}`, paragraphs: [`Watch it${controls} for a day.`] }] }],
    };
    const brief = { ...BRIEF, title: `The Patient${controls} Gardener`, description: `A guide${controls}.` };
    const forbidden = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/u;
    for (const entry of readZip(renderEpub(brief, noisy, { planId: "pln_noisy", modified: new Date() }))) expect(entry.text, entry.name).not.toMatch(forbidden);
    const reader = renderReader(brief, noisy, "book.epub");
    for (const [name, text] of reader) expect(text, name).not.toMatch(forbidden);
    expect(reader.get("index.html")).toContain('<h1 id="book-title">The Patient Gardener</h1>');
    const site = await offlineSite("A website for my small bakery in Lyon");
    const named = renderSite({ ...site.brief, name: `Lyon${controls} Bakery` }, site.outline, site.pages, "https://zero.example/sites/x/");
    for (const [name, text] of named) expect(text, name).not.toMatch(forbidden);
  });

  it.runIf(haveEpubcheck)(
    "passes epubcheck with no errors or warnings, in a right-to-left language and with translated navigation too",
    async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), "pz-epub-"));
      const arabic = renderEpub({ ...BRIEF, title: "البستاني الصبور", subtitle: "خضروات على الشرفة", author: "", language: "ar", tone: "bold" }, CONTENT, {
        planId: "pln_ar",
        modified: new Date(),
      });
      const hebrew = renderEpub({ ...BRIEF, title: "הגנן הסבלני", subtitle: "ירקות במרפסת", author: "", language: "he" }, CONTENT, {
        planId: "pln_he",
        modified: new Date(),
      });
      const german = renderEpub({ ...BRIEF, title: "Der geduldige Gärtner", language: "de" }, CONTENT, { planId: "pln_de", modified: new Date() });
      // A language as a model may name it, and a Japanese title long enough to wrap.
      const saudi = renderEpub({ ...BRIEF, title: "البستاني الصبور", subtitle: "خضروات على الشرفة", language: "ar_SA" }, CONTENT, {
        planId: "pln_ar_sa",
        modified: new Date(),
      });
      const japanese = renderEpub(
        {
          ...BRIEF,
          title: "東京の小さな台所で毎日つくる季節の野菜料理と保存食のきほん",
          subtitle: "ベランダで育てる野菜",
          author: "山田花子",
          language: "Japanese",
        },
        CONTENT,
        { planId: "pln_ja", modified: new Date() },
      );
      for (const [name, bytes] of [
        ["en.epub", epub],
        ["ar.epub", arabic],
        ["ar-sa.epub", saudi],
        ["ja.epub", japanese],
        ["he.epub", hebrew],
        ["de.epub", german],
      ] as const) {
        await fs.writeFile(path.join(dir, name), bytes);
        const { stdout, stderr } = await promisify(execFile)("java", ["-jar", EPUBCHECK, path.join(dir, name)], { timeout: 120_000 }).catch(
          (error: { stdout: string; stderr: string }) => error,
        );
        expect(`${stdout}\n${stderr}`, name).toMatch(/No errors or warnings detected/);
      }
      await fs.rm(dir, { recursive: true, force: true });
    },
    240_000,
  );
});

/** The fixed English words a site or book is built with: the skip link, the 404 page, the navigation's name, a book's contents and chapters. */
const ENGLISH_FIXED_WORDS = [
  ">Skip to content<",
  'aria-label="Main"',
  "Not found",
  "This page is not part of",
  "This page does not exist",
  "There is no page at this address",
  "Go to the home page",
  "Contents",
  "Landmarks",
  ">Cover<",
  "Title page",
  "Start of content",
  "Download the EPUB",
  "Chapter 1",
  'aria-label="Chapters"',
  ">Chapters<",
];

const CHINESE_GOAL = "为我在上海的小咖啡馆“晨光咖啡”做一个网站，出售手冲咖啡和蛋糕";

/** The fixed words of a site and a book in each script of Chinese. */
const IN_CHINESE = {
  Simplified: {
    site: ["跳到主要内容", 'aria-label="主菜单"', "<title>找不到页面 – 晨光咖啡</title>", "此页面不存在", "返回首页"],
    book: ["<h1>目录</h1>", ">封面<", ">扉页<", "download>下载 EPUB</a>", '<p class="chapter-number">第 1 章</p>', '<span id="pager-name" hidden>章节</span>'],
  },
  Traditional: {
    site: ["跳到主要內容", 'aria-label="主選單"', "<title>找不到頁面 – 晨光咖啡</title>", "此頁面不存在", "返回首頁"],
    book: ["<h1>目錄</h1>", ">封面<", ">扉頁<", "download>下載 EPUB</a>", '<p class="chapter-number">第 1 章</p>', '<span id="pager-name" hidden>章節</span>'],
  },
};

/** Chinese tags as writers give them, and the script each names: its script subtag's, else Traditional for Taiwan, Hong Kong and Macau. */
const CHINESE_TAGS = [
  ["zh-CN", "Simplified"],
  ["zh_SG", "Simplified"],
  ["zh-Hans", "Simplified"],
  ["zh-Hans-TW", "Simplified"],
  ["cmn", "Simplified"],
  ["zh-US", "Simplified"],
  ["zh-TW", "Traditional"],
  ["zh_TW", "Traditional"],
  ["zh-HK", "Traditional"],
  ["ZH-mo", "Traditional"],
  ["zh-Hant", "Traditional"],
  ["zh-Hant-CN", "Traditional"],
] as const;

/** The fonts a stylesheet names for each script of Chinese: their glyphs take the forms its readers learnt. */
const CHINESE_FONTS = { Simplified: ['"Noto Sans CJK SC"', '"PingFang SC"'], Traditional: ['"Noto Sans CJK TC"', '"PingFang TC"'] };

/** The site's stylesheet names the fonts of Chinese in `script`, and none of the other script's. */
function expectChineseFonts(files: ReadonlyMap<string, string>, script: "Simplified" | "Traditional") {
  const css = files.get("style.css")!;
  for (const font of CHINESE_FONTS[script]) expect(css).toContain(font);
  for (const font of CHINESE_FONTS[script === "Simplified" ? "Traditional" : "Simplified"]) expect(css).not.toContain(font);
}

const IN_OTHER_LANGUAGES = [
  {
    language: "de",
    goal: "Eine Webseite für unsere Bäckerei «Brotzeit» in München, wir backen Brezeln und Kuchen",
    site: ["Zum Inhalt springen", 'aria-label="Hauptmenü"', "<title>Nicht gefunden – Brotzeit</title>", "Diese Seite gibt es nicht", "Zur Startseite"],
    book: [
      "<h1>Inhalt</h1>",
      ">Umschlag<",
      ">Titelseite<",
      "download>EPUB herunterladen</a>",
      '<p class="chapter-number">Kapitel 1</p>',
      '<span id="pager-name" hidden>Kapitel</span>',
    ],
  },
  {
    language: "fr",
    goal: "Un site pour notre boulangerie « Le Fournil » à Lyon, avec nos pains et nos gâteaux",
    site: [
      "Aller au contenu",
      'aria-label="Menu principal"',
      "<title>Page introuvable – Le Fournil</title>",
      "Cette page n’existe pas",
      "Aller à la page d’accueil",
    ],
    book: [
      "<h1>Sommaire</h1>",
      ">Couverture<",
      ">Page de titre<",
      "download>Télécharger l’EPUB</a>",
      '<p class="chapter-number">Chapitre 1</p>',
      '<span id="pager-name" hidden>Chapitres</span>',
    ],
  },
  { language: "zh", goal: CHINESE_GOAL, ...IN_CHINESE.Simplified },
];

/** Every page of a site carries `words`, and no fixed word in English: the skip link and the 404 page are unmarked. */
async function expectSiteInOwnWords(files: ReadonlyMap<string, string>, words: readonly string[]) {
  const pages = [...files].filter(([name]) => name.endsWith(".html"));
  const all = pages.map(([, page]) => page).join("\n");
  for (const word of words) expect(all).toContain(word);
  for (const english of ENGLISH_FIXED_WORDS) expect(all, english).not.toContain(english);
  expect(files.get("404.html")).toContain('<main id="main">');
  for (const [name, page] of pages) expect(page, name).toContain('<a class="skip-link" href="#main">');
  expect(await htmlProblems(files)).toEqual([]);
}

/** The EPUB and the reader of a book in `language` carry `words`, and no fixed word in English, marked or not. */
async function expectBookInOwnWords(language: string, words: readonly string[]) {
  const brief = { ...BRIEF, language };
  const epub = readZip(renderEpub(brief, CONTENT, { planId: "pln_words", modified: new Date() }))
    .filter((e) => e.name.endsWith(".xhtml") || e.name.endsWith(".ncx"))
    .map((e) => e.text);
  const reader = [...renderReader(brief, CONTENT, "book.epub")].filter(([name]) => name.endsWith(".html"));
  const all = [...epub, ...reader.map(([, page]) => page)].join("\n");
  for (const word of words) expect(all).toContain(word);
  for (const english of ENGLISH_FIXED_WORDS) expect(all, english).not.toContain(english);
  expect(all).not.toContain('lang="en"');
  for (const page of epub) expect(xmlProblems(page)).toEqual([]);
  expect(await htmlProblems(new Map(reader))).toEqual([]);
}

describe("the fixed words of a site or book", () => {
  it.each(IN_OTHER_LANGUAGES)("are in the site's language on a site in $language, English ones none", async ({ language, goal, site }) => {
    const { brief, files } = await offlineSite(goal);
    expect(brief.language).toBe(language);
    await expectSiteInOwnWords(files, site);
  });

  it.each(IN_OTHER_LANGUAGES)("are in the book's language in a book in $language, English ones none", async ({ language, book }) => {
    await expectBookInOwnWords(language, book);
  });

  // Found writing in Chinese: one entry for "zh" cannot serve both scripts, so Chinese sites and books had them in English.
  it.each(CHINESE_TAGS)("are in the script of Chinese its tag names on a site and in a book in %s: %s", async (language, script) => {
    const other = IN_CHINESE[script === "Simplified" ? "Traditional" : "Simplified"];
    const { brief, outline, pages } = await offlineSite(CHINESE_GOAL);
    const files = renderSite({ ...brief, language }, outline, pages, "https://zero.example/sites/x/");
    await expectSiteInOwnWords(files, IN_CHINESE[script].site);
    for (const word of other.site) expect([...files.values()].join("\n")).not.toContain(word);
    await expectBookInOwnWords(language, IN_CHINESE[script].book);
  });

  // Found typing a goal in Traditional characters: a Han goal was plain "zh", so a Taiwanese or Hong Kong site had
  // Simplified fixed words and Simplified fonts beside its own Traditional text.
  it.each([
    ["Traditional", "zh-Hant", "幫我做一個台北咖啡店的網站，我們賣手沖咖啡和甜點"],
    ["Simplified", "zh", "帮我做一个北京咖啡店的网站，我们卖手冲咖啡和甜点"],
    ["Simplified", "zh", "北京的咖啡和甜品"],
  ] as const)("on a site for a goal in %s characters are in that script, the site tagged %s: %s", async (script, tag, goal) => {
    const { brief, files } = await offlineSite(goal);
    expect(brief.language).toBe(tag);
    expect(files.get("index.html")).toContain(`<html lang="${tag}" dir="ltr">`);
    expect(files.get("index.html")).toContain(`<a class="skip-link" href="#main">${script === "Simplified" ? "跳到主要内容" : "跳到主要內容"}</a>`);
    expect(files.get("404.html")).toContain(script === "Simplified" ? "此页面不存在" : "此頁面不存在");
    expectChineseFonts(files, script);
  });
});

describe("the fonts of a Chinese site", () => {
  // Every Chinese page had Simplified fonts, whose glyphs take other forms than Taiwan and Hong Kong readers learnt.
  it.each(CHINESE_TAGS)("are those of the script its tag names in %s: %s", async (language, script) => {
    const { brief, outline, pages } = await offlineSite(CHINESE_GOAL);
    expectChineseFonts(renderSite({ ...brief, language }, outline, pages), script);
  });
});
