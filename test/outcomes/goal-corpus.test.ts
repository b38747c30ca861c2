import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completion, FakeUpstream, reply } from "../chat/support/fake-upstream.js";
import { schemaNameOf } from "./support/model-answers.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { type Tone, websiteBriefSchema } from "../../src/outcomes/content.js";
import { escapeHtml } from "../../src/outcomes/html.js";
import { ART_MOTIFS } from "../../src/outcomes/website/hero-art.js";
import { validate } from "../../src/outcomes/json-schema.js";
import { htmlProblems, httpCompleter, outcomeDeps, readTree, textOf } from "./support/outcome-kit.js";
import { readProject } from "../../src/outcomes/projects.js";
import { runStages } from "./support/run-stages.js";
import { type Case, CASES, LONG_GOAL, LONG_NAME, modelWritingIn, upTo } from "./support/goal-corpus.js";

/**
 * Goals as newcomers type them, in many languages and scripts, through the
 * offline writer's stages up to the built preview. Each site must keep the
 * goal's names verbatim (or invent none), carry the goal's language and
 * direction, mangle nothing and never point at something it does not have.
 */
/** Headings, card titles, questions and buttons: the short strings a fragment shows up in. */
function labelsOf(page: string): string[] {
  return [...page.matchAll(/<(h[1-3]|summary|a)\b[^>]*>([^<]*)<\/\1>/g)].map((m) => textOf(m[2] ?? "").trim());
}

/** The skip link and the navigation's name in the corpus's languages that have them; any other's are English. */
const FIXED_WORDS: Record<string, { skip: string; nav: string }> = {
  en: { skip: "Skip to content", nav: "Main" },
  es: { skip: "Saltar al contenido", nav: "Menú principal" },
  fr: { skip: "Aller au contenu", nav: "Menu principal" },
  ar: { skip: "انتقل إلى المحتوى", nav: "القائمة الرئيسية" },
  he: { skip: "דילוג לתוכן", nav: "תפריט ראשי" },
  ja: { skip: "本文へスキップ", nav: "メインメニュー" },
  ko: { skip: "본문으로 건너뛰기", nav: "주 메뉴" },
  ru: { skip: "Перейти к содержанию", nav: "Главное меню" },
  el: { skip: "Μετάβαση στο περιεχόμενο", nav: "Κύριο μενού" },
  zh: { skip: "跳到主要内容", nav: "主菜单" },
  "zh-Hant": { skip: "跳到主要內容", nav: "主選單" },
};
const ENGLISH_MARK = ' lang="en" dir="ltr"';
/** The skip link every page starts with: in the page's language, or English marked as such. */
const skipLink = (lang: string) => {
  const own = FIXED_WORDS[lang];
  return own ? `<a class="skip-link" href="#main">${own.skip}</a>` : `<a class="skip-link" href="#main"${ENGLISH_MARK}>Skip to content</a>`;
};
/** The main navigation's opening tag: its name in the page's language, or English marked as such. */
const mainNav = (lang: string) => {
  const own = FIXED_WORDS[lang];
  return own ? `<nav class="site-nav" aria-label="${own.nav}">` : `<nav class="site-nav" aria-label="Main"${ENGLISH_MARK}>`;
};

const FOREIGN_SCRIPT = /[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Cyrillic}\p{Script=Devanagari}]/u;

describe("the offline writer on a corpus of goals in many languages and scripts", () => {
  expect(CASES.length).toBeGreaterThanOrEqual(8);
  expect([...LONG_GOAL].length).toBe(2000);
  expect(LONG_NAME.length).toBe(75);

  it.each(CASES)("$label", async ({ goal, lang, dir, name, words, absent, phrased }) => {
    const deps = await outcomeDeps();
    const run = await runStages(createStageWork(deps), { planId: "pln_corpus", outcome: "website", goal }, { until: "build" });
    const { brief } = run.previous.understand as { brief: { name: string; language: string; tagline: string; tone: Tone } };
    expect(validate(websiteBriefSchema, brief)).toEqual([]);
    const site = await readTree(deps.artifacts, "preview/pln_corpus/");
    const pages = [...site].filter(([file]) => file.endsWith(".html"));
    expect(pages.length).toBeGreaterThanOrEqual(2);
    const all = pages.map(([, page]) => page).join("\n");
    const text = textOf(all);

    // The goal's language and direction, on every page.
    expect(brief.language).toBe(lang);
    for (const [file, page] of pages) {
      expect(page, file).toContain(`<html lang="${lang}" dir="${dir}">`);
      expect(page, file).toContain(skipLink(lang));
    }

    // English copy on a site in another language says so, so it reads left to right and is spoken as English;
    // the names from the goal keep the page's language.
    const english = ENGLISH_MARK;
    for (const [file, page] of pages) {
      expect(page, file).toContain(mainNav(lang));
      if (file === "404.html") continue;
      if (phrased) expect(page.slice(page.indexOf("<body")), file).not.toContain(english);
      else {
        // The navigation's labels are the writer's English.
        expect(page, file).toMatch(new RegExp(`${mainNav(lang)}\n<ul${english}>`));
        for (const section of page.match(/<section class="section[^>]*>/g) ?? []) expect(section, file).toContain(english);
      }
    }
    if (!phrased && name) expect(site.get("index.html")).toContain(`<h1 id="section-1">${name}</h1>`);

    // Names verbatim, or none invented.
    if (name) {
      expect(brief.name).toBe(name);
      expect(site.get("index.html")).toContain(`<h1 id="section-1">${name}</h1>`);
    } else {
      expect(brief.name).not.toMatch(/^project$/i);
      // No sentence of the goal passed off as a name.
      expect(brief.name.length).toBeLessThanOrEqual(40);
      if (FOREIGN_SCRIPT.test(goal)) expect(goal).not.toContain(brief.name);
    }
    for (const word of words ?? []) expect(text).toContain(word);
    for (const word of absent ?? []) expect(text.toLowerCase()).not.toContain(word.toLowerCase());

    // No mangled fragments: the failures newcomers saw.
    expect(text).not.toMatch(/\bProject is an? project\b|\bA project\./i);
    expect(text).not.toMatch(/See get involved/);
    // A name used as its own description ("Café Ñandú is a Café Ñandú 🍩").
    expect(text).not.toContain(`is a ${brief.name}`);
    expect(text).not.toContain(`A ${brief.name}`);
    expect(text).not.toMatch(/\b(?:we|I) (?:want|need)\.|\band\.(?:\s|$)/i);
    // English grammar glued onto words of another script ("A 为我在上海…").
    expect(text).not.toMatch(
      /\b(?:a|an|the|is a|for) [\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Cyrillic}\p{Script=Devanagari}]/iu,
    );
    for (const label of labelsOf(all)) {
      expect(label, "a heading, card, question or button").not.toMatch(/^(?:we|i|and|or|but|so) (?:want|need)\b|\b(?:and|or|we want|we need)$/i);
    }
    expect(brief.tagline).not.toMatch(/\b(?:and|or|we want|we need)\.$/i);

    // Nothing the site does not have: links reach real pages, contact details are only mentioned when there are some.
    for (const [, target] of all.matchAll(/href="([^"#:]+\.html)"/g)) expect(site.has(target!), target).toBe(true);
    if (!/@|\+\d/.test(goal)) expect(text).not.toMatch(/contact page|contact details|use the details|details below/i);

    // The plan says when the copy is not in the goal's language.
    const warning = run.outcomes.build?.warning ?? "";
    expect(warning).toMatch(/offline without a language model/);
    if (phrased) expect(warning).not.toMatch(/in English/);
    else expect(warning).toContain(`in English: the offline writer has no phrasing for ${new Intl.DisplayNames(["en"], { type: "language" }).of(lang)}`);

    expect(await htmlProblems(site)).toEqual([]);

    // Publish-ready: canonical on ZERO_PUBLIC_URL, a sitemap with every page, robots.txt naming it, a favicon, a 404 page.
    const project = (await readProject(deps.artifacts, "pln_corpus"))!;
    // The slug keeps the name's own letters ("مخبز-الأمل"); in a URL they are percent-encoded.
    const siteUrl = `${deps.config.publicUrl}/sites/${encodeURIComponent(project.slug)}/`;
    if (name) expect(project.slug).toMatch(/^[\p{L}\p{M}\p{N}]+(?:-[\p{L}\p{M}\p{N}]+)*$/u);
    if (name && !/\p{Script=Latin}/u.test(name)) expect(project.slug).not.toBe("project");
    const sitePages = pages.map(([file]) => file).filter((file) => file !== "404.html");
    expect(site.has("404.html")).toBe(true);
    expect(site.get("favicon.svg")).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(site.get("robots.txt")).toContain(`Sitemap: ${siteUrl}sitemap.xml`);
    const listed = [...site.get("sitemap.xml")!.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]);
    expect(listed.sort()).toEqual(sitePages.map((file) => (file === "index.html" ? siteUrl : `${siteUrl}${file}`)).sort());
    for (const [file, page] of pages) {
      expect(page, file).toContain('<link rel="icon" href="favicon.svg" type="image/svg+xml">');
      if (file === "404.html") continue;
      const url = file === "index.html" ? siteUrl : `${siteUrl}${file}`;
      expect(page, file).toContain(`<link rel="canonical" href="${url}">`);
      expect(page, file).toContain(`<meta property="og:url" content="${url}">`);
      expect(page, file).toMatch(/<meta property="og:title" content="[^"]+">/);
      // The link preview is the site's generated picture (og.svg), so the card is the large one.
      expect(page, file).toContain('<meta name="twitter:card" content="summary_large_image">');
      expect(page, file).toMatch(/<meta property="og:image" content="https?:\/\/[^"]+\/og\.svg">/);
      // The preview's alt text: the pattern described in English on an English site, else the name alone (no English words).
      const alt = phrased ? `${brief.name} \u2014 ${ART_MOTIFS[brief.tone]}` : brief.name;
      expect(page, file).toContain(`<meta property="og:image:alt" content="${escapeHtml(alt)}">`);
      expect(page, file).toContain(`<meta name="twitter:image:alt" content="${escapeHtml(alt)}">`);
    }
  });
});

/** The font families a site in this language must name before the theme's Latin ones. */
const SCRIPT_FONT: Record<string, RegExp> = {
  ar: /"Noto (?:Naskh|Sans) Arabic"/,
  he: /"Noto Sans Hebrew"/,
  zh: /"Noto Sans CJK SC"/,
  "zh-Hant": /"Noto Sans CJK TC"/,
  ja: /"Noto Sans CJK JP"/,
  hi: /"Noto Sans Devanagari"/,
};

describe("the upstream writer on the same corpus, through a fake model that answers in the goal's language", () => {
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await FakeUpstream.start();
  });
  afterAll(() => upstream.close());
  const named = CASES.filter((c): c is Case & { name: string } => c.name !== undefined);

  it.each(named)("$label", async (c) => {
    const write = modelWritingIn(c);
    upstream.reset();
    upstream.otherwise((exchange) => reply(completion(JSON.stringify(write(schemaNameOf(exchange.body), JSON.stringify(exchange.body.messages)))))(exchange));
    const deps = await outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
    const run = await runStages(createStageWork(deps), { planId: "pln_upcorpus", outcome: "website", goal: c.goal }, { until: "build" });

    // The writer asked for the goal's language and its names as written.
    const system = (upstream.requests[0]!.body.messages as { role: string; content: string }[])[0]!.content;
    expect(system).toContain("in the language the goal is written in");
    expect(system).toContain("names the goal gives exactly as written");

    const { brief } = run.previous.understand as { brief: { name: string; language: string } };
    expect(brief).toMatchObject({ name: c.name, language: c.lang });
    const site = await readTree(deps.artifacts, "preview/pln_upcorpus/");
    const pages = [...site].filter(([file]) => file.endsWith(".html") && file !== "404.html");
    expect(pages.map(([file]) => file).sort()).toEqual(["about.html", "index.html"]);
    for (const [file, page] of pages) {
      expect(page, file).toContain(`<html lang="${c.lang}" dir="${c.dir}">`);
      expect(page, file).toContain(skipLink(c.lang));
      // The model's words reach the page as written: nothing cut, re-cased or glued to English.
      expect(textOf(page), file).toContain(upTo(c.goal, 400).replace(/\s+/g, " ").trim());
    }
    expect(site.get("index.html")).toContain(`<h1 id="section-1">${c.name}</h1>`);
    // A model that wrote in the goal's language leaves no warning about English copy.
    expect(run.outcomes.build?.warning ?? "").not.toMatch(/in English/);

    // Type for the script: the stylesheet names a family that carries it, for this language.
    const css = site.get("style.css")!;
    const fonts = SCRIPT_FONT[c.lang];
    if (fonts) expect(new RegExp(`html:lang\\(${c.lang}\\) \\{ --heading: [^}]*${fonts.source}`).test(css), css).toBe(true);

    expect(await htmlProblems(site)).toEqual([]);
  });
});
