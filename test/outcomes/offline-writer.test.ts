import { describe, expect, it } from "vitest";
import { siteContentSchema, siteOutlineSchema, websiteBriefSchema } from "../../src/outcomes/content.js";
import { validate } from "../../src/outcomes/json-schema.js";
import { renderSite } from "../../src/outcomes/website/render-site.js";
import { normalizeBrief, normalizeOutline } from "../../src/outcomes/website/website-stages.js";
import { readGoal } from "../../src/outcomes/writers/goal-facts.js";
import { createOfflineWriter } from "../../src/outcomes/writers/offline-writer.js";
import { htmlProblems } from "./support/outcome-kit.js";

const context = { accountId: "acc_test", signal: new AbortController().signal };

/** Goals of every kind the offline writer knows, with what it must have read from each. */
const GOALS: { goal: string; name: string; tone: string; words: string[] }[] = [
  {
    goal: "A website for my small bakery in Lyon that sells sourdough bread and croissants",
    name: "Lyon Bakery",
    tone: "warm",
    words: ["Sourdough bread", "Croissants", "Lyon"],
  },
  { goal: "Build a landing page for Maison Dupont, a family-run florist in Bordeaux", name: "Maison Dupont", tone: "warm", words: ["florist", "Bordeaux"] },
  {
    goal: "Website for a yoga studio called Still Water, for busy parents, offering morning classes and weekend retreats",
    name: "Still Water",
    tone: "calm",
    words: ["Morning classes", "Weekend retreats", "busy parents"],
  },
  {
    goal: "A portfolio site for a wedding photographer based in Edinburgh. Contact: anna@example.com",
    name: "Edinburgh Wedding Photographer",
    tone: "bold",
    words: ['href="mailto:anna@example.com"', "Edinburgh"],
  },
  {
    goal: "Site for our neighbourhood running club with a training schedule and how to join",
    name: "Neighbourhood Running Club",
    tone: "playful",
    words: ["Training schedule", "How to join"],
  },
  { goal: "A landing page for Tidy, a to-do app for small teams", name: "Tidy", tone: "bold", words: ["to-do app", "small teams"] },
  {
    goal: "I need a site for my plumbing business in Leeds, with prices and a way to book a visit",
    name: "Leeds Plumbing",
    tone: "professional",
    words: ["Prices", "How to book a visit"],
  },
  { goal: "Spanish lessons for beginners, online, with a free first lesson", name: "Spanish Lessons for Beginners", tone: "calm", words: ["beginners"] },
  { goal: "zzzz qqqq", name: "Zzzz Qqqq", tone: "professional", words: ["Zzzz Qqqq"] },
];

describe("the offline writer", () => {
  it.each(GOALS)("writes a complete, valid site for: $goal", async ({ goal, name, tone, words }) => {
    const writer = createOfflineWriter();
    const brief = normalizeBrief(await writer.websiteBrief(goal, context));
    expect(validate(websiteBriefSchema, brief)).toEqual([]);
    expect(brief.name).toBe(name);
    expect(brief.tone).toBe(tone);
    const outline = normalizeOutline(brief, await writer.siteOutline(goal, brief, context));
    expect(validate(siteOutlineSchema, outline)).toEqual([]);
    const pages = [];
    for (const page of outline.pages) pages.push(await writer.page(goal, brief, outline, page.slug, context));
    expect(validate(siteContentSchema, { pages })).toEqual([]);

    const site = renderSite(brief, outline, pages);
    expect(site.size).toBe(outline.pages.length + 5); // the pages, the stylesheet, the favicon, the hero and preview pictures, the 404 page
    const text = [...site]
      .filter(([name]) => name.endsWith(".html"))
      .map(([, page]) => page)
      .join("\n");
    for (const word of words) expect(text).toContain(word);
    // Honest generic copy: no filler, no placeholders, no invented numbers.
    expect(text).not.toMatch(/lorem|ipsum|\bTODO\b|\bTBD\b|\[[^\]]*\]|\{\{|undefined|null|NaN/i);
    expect(text.replace(/<[^>]+>/g, "")).not.toMatch(/\d{3,}|€|\$|£|%/);
    expect(await htmlProblems(site)).toEqual([]);
    // Every page is reachable from the navigation of the home page.
    for (const page of outline.pages) expect(site.get("index.html")).toContain(`href="${page.slug}.html"`);
  });

  it("reads the goal's own facts and only those", () => {
    expect(
      readGoal(
        "A website for my small bakery in Lyon that sells sourdough bread, croissants and birthday cakes, with opening hours and a way to order cakes ahead.",
      ),
    ).toEqual({
      name: "Lyon Bakery",
      namedInGoal: false,
      subject: "small bakery",
      place: "Lyon",
      offerings: ["sourdough bread", "croissants", "birthday cakes"],
      features: ["opening hours", "way to order cakes ahead"],
      audience: undefined,
      email: undefined,
      phone: undefined,
    });
  });

  it("is deterministic, so re-running a stage writes the same words", async () => {
    const writer = createOfflineWriter();
    const goal = GOALS[0]!.goal;
    expect(await writer.websiteBrief(goal, context)).toEqual(await writer.websiteBrief(goal, context));
  });
});
