import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { readFeedback } from "../../src/outcomes/writers/offline-feedback.js";
import { FakeUpstream } from "../chat/support/fake-upstream.js";
import { schemaNameOf, writerModel } from "./support/model-answers.js";
import { httpCompleter, outcomeDeps, readTree } from "./support/outcome-kit.js";
import { revise, runStages } from "./support/run-stages.js";

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await FakeUpstream.start();
  upstream.otherwise(writerModel);
});
afterAll(() => upstream.close());

describe("a revision with the upstream writer", () => {
  it("sends the feedback with the previous brief and outline in every writer prompt, and builds the revision at its own preview", async () => {
    const chat = httpCompleter(upstream.url);
    const deps = { ...(await outcomeDeps({ chat, upstream: true })), chat };
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev1", goal: "Sea kayaking trips for beginners" };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    upstream.reset();
    upstream.otherwise(writerModel);

    const feedback = "Put the safety briefing first and make the tone calmer";
    const draft = first.previous.outline!;
    const outcomes = await revise(work, first, plan, { number: 1, feedback, draft });

    expect(upstream.requests.map((r) => schemaNameOf(r.body))).toEqual([
      "revised_website_brief",
      "site_outline",
      "page_content",
      "page_content",
      "page_content",
    ]);
    const brief = (first.previous.understand as { brief: unknown }).brief;
    const prompts = upstream.requests.map((request) => (request.body.messages as { role: string; content: string }[]).find((m) => m.role === "user")!.content);
    for (const user of prompts) {
      expect(user).toContain(feedback);
      expect(user).toContain(`Outline of the previous draft:\n${JSON.stringify(draft, null, 2)}`);
    }
    // The brief is revised first, from the previous one; the prompts after it work from the revised brief.
    expect(prompts[0]).toContain(`Brief of the previous draft:\n${JSON.stringify(brief, null, 2)}`);
    expect(prompts[0]).toContain("everything else as it was in the previous draft");
    const revised = (outcomes.outline!.output as { brief: Record<string, unknown> }).brief;
    expect(revised).toMatchObject({ name: "Harbour Lights Kayaks", tone: "calm" });
    for (const user of prompts.slice(1)) {
      expect(user).toContain(`"tone": "calm"`);
      expect(user).toContain("keep everything else as it was");
    }
    expect(outcomes.build!.output).toMatchObject({ theme: "calm" });
    expect(outcomes.build!.previewUrl).toBe("http://zero.test/preview/pln_rev1-r1/");
    // Both drafts stay, each under its own key; publishing copies the revision's.
    expect((await readTree(deps.artifacts, "preview/pln_rev1/")).size).toBeGreaterThan(0);
    expect((await readTree(deps.artifacts, "preview/pln_rev1-r1/")).size).toBeGreaterThan(0);
    const slug = outcomes.publish!.publishedUrl!.split("/").at(-2)!;
    const site = await readTree(deps.artifacts, `sites/${slug}/`);
    const revisionTree = await readTree(deps.artifacts, "preview/pln_rev1-r1/");
    expect(site.get("index.html")).toBe(revisionTree.get("index.html"));
  });

  it("renames the site when the feedback asks, in its project, its preview and its address", async () => {
    const chat = httpCompleter(upstream.url);
    const deps = { ...(await outcomeDeps({ chat, upstream: true })), chat };
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev3", goal: "Sea kayaking trips for beginners" };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    expect(first.outcomes.understand!.project).toMatchObject({ name: "Harbour Lights Kayaks", slug: "harbour-lights-kayaks" });

    const outcomes = await revise(work, first, plan, { number: 1, feedback: 'Call it "Spoke & Wheel" please', draft: first.previous.outline! });
    expect(outcomes.build!.project).toMatchObject({ id: first.outcomes.understand!.project!.id, name: "Spoke & Wheel", slug: "spoke-wheel" });
    const preview = await readTree(deps.artifacts, "preview/pln_rev3-r1/");
    expect(preview.get("index.html")).toContain("<title>Spoke &amp; Wheel");
    expect(outcomes.publish!.publishedUrl).toBe("http://zero.test/sites/spoke-wheel/");

    // A second revision that names nothing keeps the new name: its brief is revised from the first draft's with both feedbacks.
    upstream.reset();
    upstream.otherwise(writerModel);
    const second = await revise(work, first, plan, {
      number: 2,
      feedback: "Make it calmer",
      earlier: ['Call it "Spoke & Wheel" please'],
      draft: outcomes.outline!.output!,
    });
    expect((second.outline!.output as { brief: { name: string; tone: string } }).brief).toMatchObject({ name: "Spoke & Wheel", tone: "calm" });
  });

  it("retitles a book when the feedback asks: its project and its EPUB's name follow", async () => {
    const chat = httpCompleter(upstream.url);
    const deps = { ...(await outcomeDeps({ chat, upstream: true })), chat };
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev4", goal: "A book on growing vegetables on a balcony", outcome: "ebook" as const };
    const first = await runStages(work, plan, { until: "assemble" });
    expect(first.outcomes.understand!.project).toMatchObject({ name: "The Patient Gardener" });

    const outcomes = await revise(work, first, plan, { number: 1, feedback: 'Call it "Balcony Harvest"', draft: first.previous.outline! });
    expect(outcomes.assemble!.project).toMatchObject({ name: "Balcony Harvest", slug: "balcony-harvest" });
    expect(outcomes.assemble!.output).toMatchObject({ epub: "balcony-harvest.epub" });
    const preview = await readTree(deps.artifacts, "preview/pln_rev4-r1/");
    expect([...preview.values()].some((file) => file.includes("Balcony Harvest"))).toBe(true);
    expect(outcomes.publish!.publishedUrl).toBe("http://zero.test/books/balcony-harvest/");
  });
});

describe("a revision with the offline writer", () => {
  it("applies a quoted name, a tone and a dropped page, and warns about the rest", async () => {
    const deps = await outcomeDeps({});
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev2", goal: 'A website for "Rosa Bakery", a small bakery in Lyon selling sourdough bread' };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    const outcomes = await revise(work, first, plan, {
      number: 1,
      feedback: "Rename it to 'Maison Lumière', make it playful; remove the about page and add a blog",
      draft: first.previous.outline!,
    });
    const tree = await readTree(deps.artifacts, "preview/pln_rev2-r1/");
    expect(tree.has("about.html")).toBe(false);
    expect(tree.get("index.html")).toContain("Maison Lumière");
    expect(tree.get("index.html")).not.toContain("Rosa Bakery");
    expect(outcomes.build!.output).toMatchObject({ theme: "playful" });
    expect(outcomes.build!.warning).toContain('"add a blog"');
    expect(outcomes.build!.warning).not.toContain("Maison");
    // The first draft is untouched.
    expect((await readTree(deps.artifacts, "preview/pln_rev2/")).has("about.html")).toBe(true);
  });

  it("renames nothing for a quoted name with nothing visible in it, and keeps controls out of a new name", async () => {
    const deps = await outcomeDeps({});
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev3", goal: "A bakery in Leeds" };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    for (const [number, feedback, name] of [
      [1, 'Call it "\u0007\u0007\u0007"', "Leeds Bakery"],
      [2, 'Call it "\u200B\u200B\u200B"', "Leeds Bakery"],
      [3, 'Call it "Bak\u202Eery\u0085"', "Bakery"],
    ] as const) {
      const outcomes = await revise(work, first, plan, { number, feedback, draft: first.previous.outline! });
      const home = (await readTree(deps.artifacts, `preview/pln_rev3-r${number}/`)).get("index.html")!;
      expect(home, feedback).toContain(`<h1 id="section-1">${name}</h1>`);
      expect(home, feedback).toContain(`Welcome to ${name}. Take a look around.`);
      expect(outcomes.build!.project?.name, feedback).toBe(name);
    }
    expect(readFeedback('Call it "\u0007\u0007"', ["index"])).toEqual({ drop: [], unread: ['Call it "\u0007\u0007"'] });
  });

  it("reads feedback clause by clause; quoted names are kept whole", () => {
    const reading = readFeedback('Call it "Bread and Butter", drop the services page. More photos please', ["index", "services", "about", "contact"]);
    expect(reading).toEqual({ name: "Bread and Butter", drop: ["services"], unread: ["More photos please"] });
    expect(readFeedback("friendlier? no, make it formal", ["index"])).toMatchObject({ tone: "professional" });
    // A comma or full stop between two digits is part of a number (thousands, decimals), not the end of a clause.
    expect(readFeedback("Make the prices £1,299 and 2.5 kg", ["index"])).toEqual({ drop: [], unread: ["Make the prices £1,299", "2.5 kg"] });
    expect(readFeedback("Say 2,5 kg of flour, calmer. Open at 9. From 1.30pm", ["index"])).toEqual({
      tone: "calm",
      drop: [],
      unread: ["Say 2,5 kg of flour", "Open at 9", "From 1.30pm"],
    });
  });

  it("reads a new name in the quotation marks of any script, as the goal reader does", async () => {
    for (const [feedback, name] of [
      ["Nenne es „Schlüsseldienst Großmann & Söhne“ und mach es freundlicher", "Schlüsseldienst Großmann & Söhne"],
      ["Nenne es „Schlüsseldienst Großmann & Söhne”", "Schlüsseldienst Großmann & Söhne"],
      ["名前を「喫茶みどり」に変えてください", "喫茶みどり"],
      ["名前を『喫茶みどり』にしてください", "喫茶みどり"],
      // The apostrophe inside a double-quoted name is part of it.
      ['Adını "Ayşe\'nin Kuruyemişi" yap', "Ayşe'nin Kuruyemişi"],
      ["Adını “Ayşe’nin Kuruyemişi” yap", "Ayşe’nin Kuruyemişi"],
      ["Appelle-le « Chez Paul » s'il te plaît", "Chez Paul"],
    ] as const) {
      expect(readFeedback(feedback, ["index"]).name, feedback).toBe(name);
    }
    // Single quotation marks outside a word, a name starting as a title does; an apostrophe opens nothing.
    expect(readFeedback("Rename it to 'Maison Lumière'", ["index"]).name).toBe("Maison Lumière");
    expect(readFeedback("Don't change the 'about' page", ["index", "about"]).name).toBeUndefined();

    const deps = await outcomeDeps({});
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev6", goal: "A bakery in Leeds" };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    const outcomes = await revise(work, first, plan, { number: 1, feedback: 'Adını "Ayşe\'nin Kuruyemişi" yap', draft: first.previous.outline! });
    expect(outcomes.build!.project).toMatchObject({ name: "Ayşe'nin Kuruyemişi", slug: "ayse-nin-kuruyemisi" });
    expect((await readTree(deps.artifacts, "preview/pln_rev6-r1/")).get("index.html")).toContain("Ayşe&#39;nin Kuruyemişi");
  });

  it("names in the warning what it could not apply beside a new name, in any language", async () => {
    // A clause that gives a name holds nothing else the offline writer can read in another language: it is named, the name left out.
    expect(readFeedback("Nenne es „Schlüsseldienst Großmann & Söhne“ und mach es freundlicher", ["index"])).toEqual({
      name: "Schlüsseldienst Großmann & Söhne",
      drop: [],
      unread: ["Nenne es „…“ und mach es freundlicher"],
    });
    expect(readFeedback("سمّه «مخبز النور» واجعله أكثر هدوءًا", ["index"]).unread).toEqual(["سمّه «…» واجعله أكثر هدوءًا"]);
    // Clauses end at every script's punctuation: the Arabic comma, the ideographic comma and full stop.
    expect(readFeedback("سمّه «مخبز النور»، واجعله أكثر هدوءًا", ["index"]).unread).toContain("واجعله أكثر هدوءًا");
    expect(readFeedback("名前を「喫茶みどり」に変えて、もっと落ち着いた感じに。", ["index"])).toMatchObject({
      name: "喫茶みどり",
      unread: expect.arrayContaining(["もっと落ち着いた感じに"]),
    });
    // In English, the words that ask for the name are read; anything more is named.
    for (const feedback of [
      'Call it "Bread and Butter"',
      'Change the name of the site to "Bread and Butter" please',
      "Let's call the website 'Bread and Butter' instead",
    ]) {
      expect(readFeedback(feedback, ["index"]), feedback).toEqual({ name: "Bread and Butter", drop: [], unread: [] });
    }
    expect(readFeedback('Call it "Bread and Butter" with a bigger logo', ["index"]).unread).toEqual(['Call it "…" with a bigger logo']);

    const deps = await outcomeDeps({});
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev7", goal: "A bakery in Leeds" };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    const outcomes = await revise(work, first, plan, { number: 1, feedback: "سمّه «مخبز النور»، واجعله أكثر هدوءًا", draft: first.previous.outline! });
    expect(outcomes.build!.project).toMatchObject({ name: "مخبز النور" });
    expect(outcomes.build!.warning).toContain('"واجعله أكثر هدوءًا"');
  });

  it("drops every page of a list after one drop verb, and still never the home page", async () => {
    const slugs = ["index", "menu", "about", "contact"];
    for (const feedback of ["Drop the about page and the contact page", "Remove the about and contact pages", "Delete about, contact"]) {
      expect(readFeedback(feedback, slugs), feedback).toEqual({ drop: ["about", "contact"], unread: [] });
    }
    expect(readFeedback("Drop the menu page, the about page and the contact page", slugs)).toEqual({ drop: ["menu", "about", "contact"], unread: [] });
    expect(readFeedback("Drop the home page, the menu page and the about page", slugs)).toEqual({ drop: ["menu", "about"], unread: ["Drop the home page"] });
    // The list ends with its sentence, and at a clause that is more than a page.
    expect(readFeedback("Drop the about page. Contact.", slugs)).toEqual({ drop: ["about"], unread: ["Contact"] });
    expect(readFeedback("Remove the menu page and make the contact page warmer", slugs)).toEqual({ tone: "warm", drop: ["menu"], unread: [] });
    expect(readFeedback("Keep the about page and the contact page", slugs)).toEqual({ drop: [], unread: ["Keep the about page", "the contact page"] });

    const deps = await outcomeDeps({});
    const work = createStageWork(deps);
    const plan = { planId: "pln_rev5", goal: "A website for a bakery in Lyon selling croissants and baguettes" };
    const first = await runStages(work, { ...plan, outcome: "website" }, { until: "build" });
    const before = await readTree(deps.artifacts, "preview/pln_rev5/");
    expect([...before.keys()]).toEqual(expect.arrayContaining(["index.html", "about.html", "contact.html"]));
    const outcomes = await revise(work, first, plan, { number: 1, feedback: "Drop the about page and the contact page", draft: first.previous.outline! });
    const revised = await readTree(deps.artifacts, "preview/pln_rev5-r1/");
    expect(revised.has("about.html")).toBe(false);
    expect(revised.has("contact.html")).toBe(false);
    expect(revised.has("index.html")).toBe(true);
    expect(outcomes.build!.warning ?? "").not.toContain("could not apply");
  });
});
