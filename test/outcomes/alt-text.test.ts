import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ALT_TEXT_MAX, ebookBriefSchema, type BookContent, type EbookBrief } from "../../src/outcomes/content.js";
import { renderEpub } from "../../src/outcomes/ebook/render-book.js";
import { escapeHtml } from "../../src/outcomes/html.js";
import { settleOptional, validate } from "../../src/outcomes/json-schema.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { ART_MOTIFS, givenAlt } from "../../src/outcomes/website/hero-art.js";
import { renderSite } from "../../src/outcomes/website/render-site.js";
import { websiteUnderstandingSchema } from "../../src/outcomes/website/website-stages.js";
import { readFeedback, reviseBrief } from "../../src/outcomes/writers/offline-feedback.js";
import { completion, FakeUpstream, reply, type Behavior } from "../chat/support/fake-upstream.js";
import { CASES, GARDENER_BRIEF, modelWritingIn } from "./support/goal-corpus.js";
import { schemaNameOf } from "./support/model-answers.js";
import { EPUBCHECK, haveEpubcheck, htmlProblems, httpCompleter, outcomeDeps, readTree, readZip, xmlProblems } from "./support/outcome-kit.js";
import { runStages, type StageRun } from "./support/run-stages.js";

/**
 * Alt text for the pictures every site and book gets (the hero, the link
 * preview, the cover): asked of the model in the goal's language, written
 * by the offline writer where it can, and never a reason for a plan to fail.
 */

const BAKERY = CASES.find((c) => c.lang === "ar" && c.name !== undefined) as (typeof CASES)[number] & { name: string };
/** An Arabic description with a quote and an ampersand, so escaping is checked too. */
const SITE_ALT = 'حلقات بلون الصدأ والرمل تشرق كالشموس فوق خلفية "خوخية" & ناعمة';
const BOOK_TITLE = "البستاني الصبور";
const COVER_ALT = `موجات خضراء هادئة، وفوقها العنوان «${BOOK_TITLE}» واسم المؤلفة`;

/** A model writing an Arabic site; `brief` changes the brief it answers with. */
function arabicSite(brief: (answer: Record<string, unknown>) => Record<string, unknown> = (a) => ({ ...a, visualAlt: SITE_ALT })): Behavior {
  const write = modelWritingIn(BAKERY);
  return (exchange) => {
    const schema = schemaNameOf(exchange.body);
    const answer = write(schema, JSON.stringify(exchange.body.messages)) as Record<string, unknown>;
    return reply(completion(JSON.stringify(schema === "website_brief" ? brief(answer) : answer)))(exchange);
  };
}

const ARABIC_BOOK: EbookBrief = {
  title: BOOK_TITLE,
  subtitle: "خضروات على الشرفة، موسمًا بعد موسم",
  author: "سلمى",
  audience: "من لديه شرفة ولا حديقة له.",
  purpose: "زراعة الطعام في المساحات الصغيرة.",
  tone: "calm",
  language: "ar",
  description: "دليل قصير لزراعة الخضروات في الأصص والصناديق.",
};

/** A model writing an Arabic book with a cover description. */
const arabicBook: Behavior = (exchange) => {
  const schema = schemaNameOf(exchange.body);
  const answers: Record<string, unknown> = {
    ebook_brief: { ...ARABIC_BOOK, coverAlt: COVER_ALT },
    book_outline: { chapters: [{ title: "الضوء والمكان", summary: "قراءة الشرفة.", keyPoints: ["ساعات الشمس", "الريح"] }] },
    chapter: { title: "الضوء والمكان", sections: [{ heading: "", paragraphs: ["راقب شرفتك يومًا كاملًا قبل أن تشتري أي شيء."] }] },
  };
  return reply(completion(JSON.stringify(answers[schema])))(exchange);
};

/** The content of a `<meta>` of the page, as written (escaped). */
const metaOf = (page: string, attribute: "property" | "name", key: string) => new RegExp(`<meta ${attribute}="${key}" content="([^"]*)">`).exec(page)?.[1];

const CONTENT: BookContent = { chapters: [{ title: "الضوء والمكان", sections: [{ heading: "", paragraphs: ["راقب شرفتك."] }] }] };
const fileOf = (epub: Uint8Array, name: string) => readZip(epub).find((e) => e.name === `EPUB/${name}`)?.text ?? "";

async function epubcheck(name: string, epub: Uint8Array): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "pz-alt-"));
  try {
    await fs.writeFile(path.join(dir, name), epub);
    const { stdout, stderr } = await promisify(execFile)("java", ["-jar", EPUBCHECK, path.join(dir, name)], { timeout: 120_000 }).catch(
      (error: { stdout: string; stderr: string }) => error,
    );
    return `${stdout}\n${stderr}`;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe("alt text from the upstream writer", () => {
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await FakeUpstream.start();
  });
  afterAll(() => upstream.close());
  beforeEach(() => upstream.reset());

  async function buildSite(planId: string, model: Behavior, options: { from?: StageRun } = {}) {
    upstream.otherwise(model);
    const deps = await outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
    const run = await runStages(createStageWork(deps), { planId, outcome: "website", goal: BAKERY.goal }, { until: "build", ...options });
    return { deps, run, site: await readTree(deps.artifacts, `preview/${planId}/`) };
  }

  it("asks for it in the goal's language, and puts the Arabic answer in the link preview's alt, the pictures' titles and the cover", async () => {
    const { run, site } = await buildSite("pln_alt_ar", arabicSite());

    // The brief's request asks for the picture's alt text, in the goal's language, telling the model what the picture is.
    const briefRequest = upstream.requests.find((r) => schemaNameOf(r.body) === "website_brief")!;
    const prompt = (briefRequest.body.messages as { content: string }[]).map((m) => m.content).join("\n");
    expect(prompt).toContain('Also write "visualAlt", the alt text of the site\'s generated picture');
    expect(prompt).toContain("in the language the goal is written in, say what it shows");
    expect(prompt).toContain(ART_MOTIFS.warm.slice(1));
    expect(prompt).toContain('Do not begin with "image of"');
    // Strict structured output: the field is in the schema sent, and required there like every other.
    const sent = (briefRequest.body.response_format as { json_schema: { schema: { properties: Record<string, unknown>; required: string[] } } }).json_schema
      .schema;
    expect(sent.properties.visualAlt).toMatchObject({ type: "string" });
    expect(sent.required).toContain("visualAlt");

    expect((run.previous.understand as { brief: { visualAlt?: string } }).brief.visualAlt).toBe(SITE_ALT);
    const alt = escapeHtml(SITE_ALT);
    const share = `${escapeHtml(BAKERY.name)} \u2014 ${alt}`;
    for (const [file, page] of [...site].filter(([f]) => f.endsWith(".html") && f !== "404.html")) {
      expect(page, file).toContain(`<html lang="ar" dir="rtl">`);
      expect(metaOf(page, "property", "og:image:alt"), file).toBe(share);
      expect(metaOf(page, "name", "twitter:image:alt"), file).toBe(share);
    }
    // The hero stays decorative on the page; its file, opened on its own, is described.
    expect(site.get("index.html")).toContain('<img class="hero-art" src="hero.svg" alt="" width="480" height="480">');
    expect(site.get("hero.svg")).toContain(`aria-label="${alt}" xml:lang="ar" direction="rtl">\n<title>${alt}</title>`);
    expect(site.get("og.svg")).toContain(`aria-label="${share}" xml:lang="ar" direction="rtl">\n<title>${share}</title>`);
    for (const file of ["hero.svg", "og.svg"]) expect(xmlProblems(site.get(file)!), file).toEqual([]);
    expect(await htmlProblems(site)).toEqual([]);

    // The book: asked for its cover's alt text, which names the title already, so it is used as written.
    upstream.reset();
    upstream.otherwise(arabicBook);
    const deps = await outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
    await runStages(createStageWork(deps), { planId: "pln_alt_book", outcome: "ebook", goal: "كتاب عن زراعة الخضروات على الشرفة" }, { until: "assemble" });
    const bookPrompt = (upstream.requests[0]!.body.messages as { content: string }[]).map((m) => m.content).join("\n");
    expect(bookPrompt).toContain('Also write "coverAlt", the alt text of the book\'s generated cover');
    expect(bookPrompt).toContain("the title (and the author, if any) set in large type over it");
    const book = await readTree(deps.artifacts, "preview/pln_alt_book/");
    const epubName = [...book.keys()].find((f) => f.endsWith(".epub"))!;
    const epub = (await deps.artifacts.get(`preview/pln_alt_book/${epubName}`))!;
    const cover = escapeHtml(COVER_ALT);
    expect(fileOf(epub, "cover.xhtml")).toContain(`<img src="cover.svg" alt="${cover}"/>`);
    expect(fileOf(epub, "cover.svg")).toContain(`aria-label="${cover}" xml:lang="ar" direction="rtl">\n<title>${cover}</title>`);
    expect(fileOf(epub, "cover.xhtml")).not.toContain("Cover of");
    expect(book.get("cover.svg")).toContain(`<title>${cover}</title>`);
    // On the reader's contents page the cover stays decorative: the heading beside it is the title.
    expect(book.get("index.html")).toContain('<img class="cover-art" src="cover.svg" alt="" width="600" height="900">');
    expect(await htmlProblems(book)).toEqual([]);
    if (haveEpubcheck) expect(await epubcheck("ar.epub", epub)).toMatch(/No errors or warnings detected/);
  }, 240_000);

  it.each([
    { label: "without the field", alt: undefined, fallback: true },
    { label: "with an empty one", alt: "", fallback: true },
    { label: "with null", alt: null, fallback: true },
    { label: "with a number", alt: 42, fallback: true },
    { label: "with a placeholder", alt: "N/A", fallback: true },
    { label: "with markup", alt: '<img src="x"> حلقات', fallback: true },
    { label: "in English for an Arabic site", alt: "Warm rings on a peach background", fallback: true },
    { label: "with one far too long", alt: "حلقات دافئة بلون الصدأ والرمل ".repeat(20), fallback: false },
  ])("builds from an answer $label, without asking again", async ({ alt, fallback }) => {
    const { run, site } = await buildSite(
      "pln_alt_odd",
      arabicSite((a) => (alt === undefined ? a : { ...a, visualAlt: alt })),
    );
    // One request per stage call: nothing was sent back to the model as a problem.
    expect(upstream.requests.filter((r) => schemaNameOf(r.body) === "website_brief")).toHaveLength(1);
    const stored = (run.previous.understand as { brief: { visualAlt?: string; tagline: string } }).brief;
    const home = site.get("index.html")!;
    if (fallback) {
      // Whatever was stored, nothing of it reaches a page or a picture.
      for (const file of ["index.html", "hero.svg", "og.svg"]) expect(site.get(file), file).not.toMatch(/N\/A|&lt;img|>42<|Warm rings/);
      // No description: the words set on the preview, in the site's language.
      expect(metaOf(home, "property", "og:image:alt")).toBe(escapeHtml(`${BAKERY.name}: ${stored.tagline}`));
      expect(site.get("hero.svg")).toContain(`<title>${BAKERY.name}</title>`);
    } else {
      // Cut at a word, within the limit, and used.
      expect([...stored.visualAlt!].length).toBeLessThanOrEqual(ALT_TEXT_MAX);
      expect(stored.visualAlt).toMatch(/^حلقات دافئة .*\p{L}\u2026$/u);
      expect(metaOf(home, "property", "og:image:alt")).toBe(`${BAKERY.name} \u2014 ${stored.visualAlt}`);
    }
    expect(metaOf(home, "property", "og:image:alt")).toBe(metaOf(home, "name", "twitter:image:alt"));
    expect(await htmlProblems(site)).toEqual([]);
  });

  it("assembles a book from an answer whose cover alt is far too long, without asking again", async () => {
    const long = `${COVER_ALT} `.repeat(6);
    upstream.next((exchange) => reply(completion(JSON.stringify({ ...ARABIC_BOOK, coverAlt: long })))(exchange));
    upstream.otherwise(arabicBook);
    const deps = await outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
    const run = await runStages(createStageWork(deps), { planId: "pln_alt_long", outcome: "ebook", goal: "كتاب عن الشرفة" }, { until: "assemble" });
    expect(upstream.requests.map((r) => schemaNameOf(r.body))).toEqual(["ebook_brief", "book_outline", "chapter"]);
    const coverAlt = (run.previous.understand as { brief: EbookBrief }).brief.coverAlt!;
    expect([...coverAlt].length).toBeLessThanOrEqual(ALT_TEXT_MAX);
    expect(coverAlt.endsWith("\u2026")).toBe(true);
    const book = await readTree(deps.artifacts, "preview/pln_alt_long/");
    expect(book.get("cover.svg")).toContain(`<title>${escapeHtml(coverAlt)}</title>`);
  });

  it("resumes a plan whose brief was stored before alt text was asked for", async () => {
    const { deps, run } = await buildSite("pln_alt_old", arabicSite(), {});
    const understood = run.previous.understand as { writer: string; brief: Record<string, JsonValue> };
    const { visualAlt: _dropped, ...oldBrief } = understood.brief;
    const stored = { writer: understood.writer, brief: oldBrief };
    expect(validate(websiteUnderstandingSchema, stored)).toEqual([]);
    // From the stored understanding on, as the engine resumes a plan.
    const resumed = await runStages(
      createStageWork(deps),
      { planId: "pln_alt_old", outcome: "website", goal: BAKERY.goal },
      { until: "build", from: { outcomes: { understand: run.outcomes.understand! }, previous: { understand: stored }, progress: {} } },
    );
    expect(resumed.outcomes.build?.previewUrl).toBeDefined();
    const site = await readTree(deps.artifacts, "preview/pln_alt_old/");
    expect(metaOf(site.get("index.html")!, "property", "og:image:alt")).toBe(escapeHtml(`${BAKERY.name}: ${oldBrief.tagline as string}`));
    expect(await htmlProblems(site)).toEqual([]);
  });
});

describe("alt text without a writer's description", () => {
  it("labels an old Arabic book's cover with its title and author, with no English", async () => {
    expect(validate(ebookBriefSchema, ARABIC_BOOK)).toEqual([]);
    const epub = renderEpub(ARABIC_BOOK, CONTENT, { planId: "pln_old_ar", modified: new Date("2026-11-25T08:00:00Z") });
    const label = `${BOOK_TITLE} \u2014 سلمى`;
    expect(fileOf(epub, "cover.xhtml")).toContain(`<img src="cover.svg" alt="${label}"/>`);
    expect(fileOf(epub, "cover.svg")).toContain(`<title>${label}</title>`);
    expect(fileOf(epub, "cover.xhtml") + fileOf(epub, "cover.svg")).not.toMatch(/Cover of/);
    // An English book keeps its English label; a description without the title gets it put first.
    expect(fileOf(renderEpub(GARDENER_BRIEF, CONTENT, { planId: "p", modified: new Date() }), "cover.xhtml")).toContain(
      'alt="Cover of The Patient Gardener by Ada Green"',
    );
    const described = renderEpub({ ...GARDENER_BRIEF, coverAlt: "Soft green waves" }, CONTENT, { planId: "p", modified: new Date() });
    expect(fileOf(described, "cover.xhtml")).toContain('alt="The Patient Gardener \u2014 Soft green waves"');
    if (haveEpubcheck) expect(await epubcheck("old-ar.epub", epub)).toMatch(/No errors or warnings detected/);
  }, 150_000);

  it("describes the motif on an English site rendered from a brief without the field", () => {
    const brief = {
      name: "Harbour Lights",
      tagline: "Sea kayaking for beginners",
      audience: "Beginners.",
      purpose: "Book a trip.",
      tone: "calm" as const,
      language: "en",
      pages: [{ slug: "index", title: "Home", purpose: "Home" }],
      callToAction: { label: "Book", page: "index" },
    };
    const outline = {
      pages: [{ slug: "index", title: "Home", navLabel: "Home", description: "Home.", sections: [{ kind: "hero" as const, heading: "Hi", summary: "" }] }],
    };
    const files = renderSite(
      brief,
      outline,
      [{ slug: "index", sections: [{ kind: "hero", heading: "Hi", paragraphs: ["Hello."], items: [], link: { label: "", page: "" } }] }],
      "https://zero.example/sites/h/",
    );
    expect(metaOf(files.get("index.html")!, "property", "og:image:alt")).toBe(`Harbour Lights \u2014 ${ART_MOTIFS.calm}`);
    expect(files.get("hero.svg")).toContain(`<title>${ART_MOTIFS.calm}</title>`);
  });
});

describe("alt text from the offline writer", () => {
  async function offlineBuild(planId: string, goal: string) {
    const deps = await outcomeDeps();
    const run = await runStages(createStageWork(deps), { planId, outcome: "website", goal }, { until: "build" });
    return { run, site: await readTree(deps.artifacts, `preview/${planId}/`) };
  }

  it("describes the picture in English for an English goal", async () => {
    const { run, site } = await offlineBuild("pln_alt_en", "A website for my small bakery in Lyon that sells sourdough bread and croissants");
    const brief = (run.previous.understand as { brief: { name: string; tone: keyof typeof ART_MOTIFS; visualAlt?: string } }).brief;
    expect(brief.visualAlt).toBe(ART_MOTIFS[brief.tone]);
    expect(brief.visualAlt).toMatch(/^[A-Z][a-z]+ .* background$/);
    expect(metaOf(site.get("index.html")!, "property", "og:image:alt")).toBe(escapeHtml(`${brief.name} \u2014 ${brief.visualAlt}`));
    expect(site.get("hero.svg")).toContain(`<title>${brief.visualAlt}</title>`);
    expect(run.outcomes.build?.warning).not.toMatch(/in English/);
  });

  it("puts no English words into an Arabic site's picture descriptions, and still says the copy is English", async () => {
    const { run, site } = await offlineBuild("pln_alt_off_ar", BAKERY.goal);
    expect((run.previous.understand as { brief: { visualAlt?: string } }).brief.visualAlt).toBe(BAKERY.name);
    for (const [file, page] of [...site].filter(([f]) => f.endsWith(".html") && f !== "404.html")) {
      expect(metaOf(page, "property", "og:image:alt"), file).toBe(BAKERY.name);
      expect(metaOf(page, "name", "twitter:image:alt"), file).toBe(BAKERY.name);
    }
    for (const file of ["hero.svg", "og.svg"]) {
      expect(site.get(file), file).toContain(`aria-label="${BAKERY.name}" xml:lang="ar" direction="rtl">\n<title>${BAKERY.name}</title>`);
    }
    expect(run.outcomes.build?.warning).toContain("The copy is in English: the offline writer has no phrasing for Arabic");
  });

  it("describes the picture anew when a revision changes the tone or the name", async () => {
    const { run } = await offlineBuild("pln_alt_rev", "A website for my small bakery in Lyon that sells sourdough bread and croissants");
    const brief = (run.previous.understand as { brief: Parameters<typeof reviseBrief>[0] }).brief;
    const revised = reviseBrief(brief, readFeedback('Call it "Pain Perdu" and make it playful', []));
    expect(revised.visualAlt).toBe(ART_MOTIFS.playful);
    const arabic = reviseBrief({ ...brief, language: "ar", visualAlt: "old" }, readFeedback("Call it «مخبز النور»", []));
    expect(arabic.visualAlt).toBe("مخبز النور");
  });
});

describe("settling a model's optional properties", () => {
  const schema = {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 5 },
      items: {
        type: "array",
        items: { type: "object", properties: { note: { type: "string", maxLength: 12 } }, required: [], additionalProperties: false },
      },
      alt: { type: "string", maxLength: 12 },
    },
    required: ["name", "items"],
    additionalProperties: false,
  } as const;

  it("cuts a long one at a word, drops one of the wrong kind, and leaves required ones to validation", () => {
    expect(settleOptional(schema, { name: "far too long", items: [{ note: "one two three four" }, { note: 7 }], alt: null })).toEqual({
      name: "far too long",
      items: [{ note: "one two\u2026" }, {}],
    });
    expect(settleOptional(schema, { name: "ok", items: [], alt: "short" })).toEqual({ name: "ok", items: [], alt: "short" });
  });

  it("takes a writer's alt text only when it describes something", () => {
    expect(givenAlt("  Image of warm   rings\nof sand ")).toBe("Warm rings of sand");
    expect(givenAlt("An illustration showing waves")).toBe("Waves");
    for (const junk of [undefined, 3, "", "   ", "N/A", "none", "…", "---", "{visualAlt}", "[describe the image]", "Lorem ipsum dolor"]) {
      expect(givenAlt(junk), String(junk)).toBeUndefined();
    }
    expect([...givenAlt("波".repeat(400))!].length).toBe(ALT_TEXT_MAX);
    // Not one letter of the page's script: the model ignored the language asked for.
    expect(givenAlt("Warm rings on peach", "ar")).toBeUndefined();
    expect(givenAlt("Warm rings on peach", "zh")).toBeUndefined();
    expect(givenAlt("桜色の丸と輪", "ja")).toBe("桜色の丸と輪");
    expect(givenAlt("Волны", "ru")).toBe("Волны");
    expect(givenAlt("Des anneaux chauds", "fr")).toBe("Des anneaux chauds");
    expect(givenAlt("Warm rings", "not a language")).toBe("Warm rings");
  });
});
