import type { EbookBrief } from "../../../src/outcomes/content.js";
/**
 * Goals as newcomers type them, in many languages and scripts: the corpus
 * both writers are checked on (goal-corpus.test.ts) and whose worst cases are
 * looked at in a browser (corpus-browser.test.ts).
 */
export interface Case {
  label: string;
  goal: string;
  lang: string;
  dir: "ltr" | "rtl";
  /** The name the goal gives, exactly; absent when the goal gives none. */
  name?: string;
  /** Words from the goal that must reach the pages verbatim. */
  words?: string[];
  /** Words that must not reach the pages (any case): facts the goal did not give, fragments it was cut into. */
  absent?: string[];
  /** True when the offline writer has phrasing for the goal's language. */
  phrased: boolean;
}

export const LONG_NAME = "The Extraordinarily Long Named Neighbourhood Association Of Upper Riverside";
/** A quoted name of ten words: quoted names of more than eight words were thrown away ("Untitled site"). */
export const LONG_QUOTED_NAME = "The Grand Northern Highlands Artisan Coffee Roastery and Community Bookshop";
/** 2,000 characters of a person thinking aloud, "we want" after "we want" (the goal that gave "We want" cards). */
export const LONG_GOAL = (
  "We want a website for our community garden in Leeds where neighbours grow vegetables and herbs together, and we want people to join us. " +
  "We grow tomatoes, beans and squash, and we want to share what we learn, and we want. " +
  "Ideally the site has a page about volunteering, and we want it to feel friendly, and we need. "
)
  .repeat(8)
  .slice(0, 2000);

export const CASES: Case[] = [
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
    label: "Chinese in Traditional characters, as Taiwan writes it",
    goal: "為我在台北的小咖啡館「晨光咖啡」做一個網站，出售手沖咖啡和蛋糕",
    lang: "zh-Hant",
    dir: "ltr",
    name: "晨光咖啡",
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
  {
    label: "Japanese, a phone number and an e-mail address written against its words",
    goal: "「珈琲館みどり」のウェブサイトを作ってください。京都の小さな喫茶店です。電話は075-123-4567、メールはinfo@midori-coffee.jpです。",
    lang: "ja",
    dir: "ltr",
    name: "珈琲館みどり",
    words: ["info@midori-coffee.jp", "075-123-4567"],
    absent: ["メールはinfo", "jpです"],
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
    label: "a quoted business name of ten words",
    goal: `A website for "${LONG_QUOTED_NAME}" in Inverness`,
    lang: "en",
    dir: "ltr",
    name: LONG_QUOTED_NAME,
    words: ["Inverness"],
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
  {
    label: "English, a repair cafe open on Saturdays (a time is no offering, a repair cafe serves no food)",
    goal: "A website for a neighbourhood bicycle repair cafe in Lyon, open on Saturdays",
    lang: "en",
    dir: "ltr",
    words: ["A neighbourhood bicycle repair cafe in Lyon.", "Open on Saturdays."],
    absent: ["for cafe in Lyon", "good food", "allergens", "menu"],
    phrased: true,
  },
  {
    label: "English, seasons after an offering (the goal that gave an 'Autumn' card)",
    goal: "A website for Wearside Rowing Club in Durham. We offer learn-to-row courses every spring and autumn, junior sessions on Saturday mornings and social rowing.",
    lang: "en",
    dir: "ltr",
    name: "Wearside Rowing Club",
    words: ["Learn-to-row courses every spring and autumn", "Junior sessions on Saturday mornings", "Social rowing"],
    phrased: true,
  },
];

/** A book brief as a model would write it, for the book tests and the gallery. */
export const GARDENER_BRIEF: EbookBrief = {
  title: "The Patient Gardener",
  subtitle: "Vegetables on a balcony, one season at a time",
  author: "Ada Green",
  audience: "People with a balcony and no garden",
  purpose: "Grow food in small spaces",
  tone: "calm",
  language: "en-GB",
  description: "A short guide to growing vegetables in pots & boxes.",
};

/** The first `max` code points of `text`, so a fake answer stays within the schema's limits in any script. */
export const upTo = (text: string, max: number) => [...text].slice(0, max).join("");

/**
 * A model that writes in the goal's language: its copy is the goal's own
 * words, its name the goal's name, its `language` the goal's. What the test
 * then checks is everything of ours between the model and the page.
 */
export function modelWritingIn(c: Case & { name: string }) {
  const sentence = upTo(c.goal, 400);
  return (schema: string, prompt: string): unknown => {
    switch (schema) {
      case "website_brief":
        return {
          name: c.name,
          tagline: upTo(c.goal, 140),
          audience: sentence,
          purpose: sentence,
          tone: "warm",
          language: c.lang,
          pages: [
            { slug: "index", title: upTo(c.name, 60), purpose: sentence },
            { slug: "about", title: upTo(c.goal, 30), purpose: sentence },
          ],
          callToAction: { label: upTo(c.name, 40), page: "about" },
        };
      case "site_outline":
        return {
          pages: ["index", "about"].map((slug) => ({
            slug,
            title: upTo(slug === "index" ? c.name : c.goal, 60),
            navLabel: upTo(slug === "index" ? c.name : c.goal, 12),
            description: upTo(c.goal, 200),
            sections: [
              { kind: "hero", heading: upTo(c.name, 90), summary: sentence },
              { kind: "features", heading: upTo(c.goal, 40), summary: sentence },
            ],
          })),
        };
      case "page_content": {
        const slug = /Write the page \\"([a-z0-9-]+)\\"/.exec(prompt)?.[1] ?? "index";
        return {
          slug,
          sections: [
            { kind: "hero", heading: upTo(c.name, 90), paragraphs: [sentence], items: [], link: { label: "", page: "" } },
            {
              kind: "features",
              heading: upTo(c.goal, 40),
              paragraphs: [],
              items: [1, 2, 3].map((n) => ({ title: `${upTo(c.name, 60)} ${n}`, text: sentence })),
              link: { label: "", page: "" },
            },
          ],
        };
      }
      default:
        throw new Error(`no answer for ${schema}`);
    }
  };
}
