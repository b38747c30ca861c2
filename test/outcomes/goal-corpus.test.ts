import { describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { websiteBriefSchema } from "../../src/outcomes/content.js";
import { validate } from "../../src/outcomes/json-schema.js";
import { htmlProblems, outcomeDeps, readTree } from "./support/outcome-kit.js";
import { readProject } from "../../src/outcomes/projects.js";
import { runStages } from "./support/run-stages.js";

/**
 * Goals as newcomers type them, in many languages and scripts, through the
 * offline writer's stages up to the built preview. Each site must keep the
 * goal's names verbatim (or invent none), carry the goal's language and
 * direction, mangle nothing and never point at something it does not have.
 */
interface Case {
  label: string;
  goal: string;
  lang: string;
  dir: "ltr" | "rtl";
  /** The name the goal gives, exactly; absent when the goal gives none. */
  name?: string;
  /** Words from the goal that must reach the pages verbatim. */
  words?: string[];
  /** True when the offline writer has phrasing for the goal's language. */
  phrased: boolean;
}

const LONG_NAME = "The Extraordinarily Long Named Neighbourhood Association Of Upper Riverside";
/** 2,000 characters of a person thinking aloud, "we want" after "we want" (the goal that gave "We want" cards). */
const LONG_GOAL = (
  "We want a website for our community garden in Leeds where neighbours grow vegetables and herbs together, and we want people to join us. " +
  "We grow tomatoes, beans and squash, and we want to share what we learn, and we want. " +
  "Ideally the site has a page about volunteering, and we want it to feel friendly, and we need. "
)
  .repeat(8)
  .slice(0, 2000);

const CASES: Case[] = [
  {
    label: "Arabic (RTL), a quoted name",
    goal: "موقع إلكتروني لـ«مخبز الأمل»، مخبز صغير في القاهرة يبيع الخبز البلدي والكعك",
    lang: "ar",
    dir: "rtl",
    name: "مخبز الأمل",
    phrased: false,
  },
  {
    label: "Arabic (RTL), no name (the goal that gave 'Project')",
    goal: "موقع لمخبز صغير في القاهرة يبيع الخبز البلدي والكعك",
    lang: "ar",
    dir: "rtl",
    phrased: false,
  },
  { label: "Hebrew (RTL)", goal: 'אתר למאפייה "לחם ושמש" בתל אביב שמוכרת חלות ועוגות', lang: "he", dir: "rtl", name: "לחם ושמש", phrased: false },
  {
    label: "Chinese, a quoted name",
    goal: "为我在上海的小咖啡馆“晨光咖啡”做一个网站，出售手冲咖啡和蛋糕",
    lang: "zh",
    dir: "ltr",
    name: "晨光咖啡",
    phrased: false,
  },
  {
    label: "Chinese, no name (the goal that became the name)",
    goal: "为我在上海的小咖啡馆做一个网站，出售手冲咖啡和蛋糕",
    lang: "zh",
    dir: "ltr",
    phrased: false,
  },
  {
    label: "Japanese",
    goal: "京都の和菓子屋「さくら堂」のウェブサイトを作ってください。営業時間と地図も載せてください。",
    lang: "ja",
    dir: "ltr",
    name: "さくら堂",
    phrased: false,
  },
  { label: "Russian", goal: "Сайт для пекарни «Колосок» в Москве: продаём хлеб, пироги и торты.", lang: "ru", dir: "ltr", name: "Колосок", phrased: false },
  {
    label: "Hindi",
    goal: 'दिल्ली में मेरी छोटी बेकरी "मीठा घर" के लिए एक वेबसाइट, जो ब्रेड और केक बेचती है',
    lang: "hi",
    dir: "ltr",
    name: "मीठा घर",
    phrased: false,
  },
  {
    label: "French",
    goal: "Un site pour la boulangerie « Au Bon Pain » à Lyon, qui vend du pain au levain et des croissants.",
    lang: "fr",
    dir: "ltr",
    name: "Au Bon Pain",
    phrased: false,
  },
  {
    label: "Spanish",
    goal: 'Un sitio web para mi panadería "La Espiga" en Madrid que vende pan y pasteles',
    lang: "es",
    dir: "ltr",
    name: "La Espiga",
    phrased: false,
  },
  {
    label: "English with emoji and accents",
    goal: "🥐 A website for Café Ñandú 🍩 in Buenos Aires selling pain au chocolat, alfajores and medialunas, with opening hours",
    lang: "en",
    dir: "ltr",
    name: "Café Ñandú",
    words: ["Buenos Aires", "Pain au chocolat", "Alfajores", "Medialunas"],
    phrased: true,
  },
  { label: "a 2,000-character English goal", goal: LONG_GOAL, lang: "en", dir: "ltr", words: ["Leeds"], phrased: true },
  {
    label: "a 75-character business name",
    goal: `We need a site for ${LONG_NAME}, a community group that runs a garden and a repair cafe.`,
    lang: "en",
    dir: "ltr",
    name: LONG_NAME,
    phrased: true,
  },
  {
    label: "English, no contact details",
    goal: "A website for my small bakery in Lyon that sells sourdough bread and croissants",
    lang: "en",
    dir: "ltr",
    words: ["Lyon", "Sourdough bread", "Croissants"],
    phrased: true,
  },
];

/** Page text without markup, entities decoded enough to read. */
function textOf(page: string): string {
  return page
    .replace(/<[^>]+>/g, " ")
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ");
}

/** Headings, card titles, questions and buttons: the short strings a fragment shows up in. */
function labelsOf(page: string): string[] {
  return [...page.matchAll(/<(h[1-3]|summary|a)\b[^>]*>([^<]*)<\/\1>/g)].map((m) => textOf(m[2] ?? "").trim());
}

const FOREIGN_SCRIPT = /[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Cyrillic}\p{Script=Devanagari}]/u;

describe("the offline writer on a corpus of goals in many languages and scripts", () => {
  expect(CASES.length).toBeGreaterThanOrEqual(8);
  expect([...LONG_GOAL].length).toBe(2000);
  expect(LONG_NAME.length).toBe(75);

  it.each(CASES)("$label", async ({ goal, lang, dir, name, words, phrased }) => {
    const deps = await outcomeDeps();
    const run = await runStages(createStageWork(deps), { planId: "pln_corpus", outcome: "website", goal }, { until: "build" });
    const { brief } = run.previous.understand as { brief: { name: string; language: string; tagline: string } };
    expect(validate(websiteBriefSchema, brief)).toEqual([]);
    const site = await readTree(deps.artifacts, "preview/pln_corpus/");
    const pages = [...site].filter(([file]) => file.endsWith(".html"));
    expect(pages.length).toBeGreaterThanOrEqual(2);
    const all = pages.map(([, page]) => page).join("\n");
    const text = textOf(all);

    // The goal's language and direction, on every page.
    expect(brief.language).toBe(lang);
    for (const [file, page] of pages) expect(page, file).toContain(`<html lang="${lang}" dir="${dir}">`);

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
    const siteUrl = `${deps.config.publicUrl}/sites/${project.slug}/`;
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
    }
  });
});
