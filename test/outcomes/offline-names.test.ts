import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { readProject } from "../../src/outcomes/projects.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { outcomeDeps, readTree } from "./support/outcome-kit.js";
import { LONG_QUOTED_NAME } from "./support/goal-corpus.js";
import { runStages } from "./support/run-stages.js";
import { readGoal } from "../../src/outcomes/writers/goal-facts.js";
import { composeSite } from "../../src/outcomes/writers/offline-writer.js";

/**
 * The name the offline writer gives a site (and so its project) comes from
 * the goal: the name it gives, or (in English) one made of its own words,
 * its subject and place. A goal it cannot read and that quotes no name
 * gets a name that says there is none yet, never a word the goal did not
 * use passed off as one (it was "Welcome").
 */
const UNTITLED = "Untitled site";
const ENGLISH_MARK = ' lang="en" dir="ltr"';
const NAMES: [goal: string, name: string][] = [
  ["A website for a bicycle repair cafe in Utrecht", "Utrecht Bicycle Repair Cafe"],
  ["A bakery in München", "München Bakery"],
  ["A tea house in Kyoto", "Kyoto Tea House"],
  ["A sushi bar in São Paulo", "São Paulo Sushi Bar"],
  ["A small bistro in Lyon", "Lyon Bistro"],
  ['A website for "Shop Number 11", a bicycle shop in Utrecht', "Shop Number 11"],
  ["موقع لمخبز صغير في القاهرة يبيع الخبز البلدي والكعك", UNTITLED],
  ["موقع إلكتروني لـ«مخبز الأمل»، مخبز صغير في القاهرة", "مخبز الأمل"],
  ["京都の和菓子屋のウェブサイトを作ってください", UNTITLED],
  ["京都の和菓子屋「さくら堂」のウェブサイト", "さくら堂"],
  ["Make me a website", UNTITLED],
  // Words that only look like names: weekdays, acronyms, code, an address's scheme. The subject and place name the site instead.
  ["A bakery in Leeds, open Tuesday to Sunday", "Leeds Bakery"],
  ["A dentist in Leeds, open Mon-Sat", "Leeds Dentist"],
  ["A yoga studio in Berlin, open Mon-Fri 9-5", "Berlin Yoga Studio"],
  ["Website for an IT support company in London, 24/7 help", "London IT Support"],
  ["A website for Robert'); DROP TABLE plans;-- bakery", "Robert"],
  ["https://example.com/my-bakery", UNTITLED],
  // A quoted name is what the person asked for, however many words it has.
  [`A website for "${LONG_QUOTED_NAME}" in Inverness`, LONG_QUOTED_NAME],
  // "Called", "Named" or "Titled" inside the quotes is part of the name, not the word that introduces it.
  ['A website for "The Place Called Home" in York', "The Place Called Home"],
  ['A website for "Titled Gentry Antiques" in Bath', "Titled Gentry Antiques"],
  ['A website for "The Quite Remarkably Long Named Riverside Bakery" in Leeds', "The Quite Remarkably Long Named Riverside Bakery"],
  ["A website for 'The Place Called Home', a guesthouse", "The Place Called Home"],
  // Apostrophes that open and close nothing a person quoted: no name.
  ["A record shop in Leeds selling '90s vinyl and the Smiths' records", "Leeds Record Shop"],
  ['A bakery called "Crumbs" in Leeds', "Crumbs"],
  // German quotation marks: reversed guillemets, low single quotes, and a low double one closed by a straight one as typed.
  ["Eine Website für »Schlüsseldienst Großmann« in Köln", "Schlüsseldienst Großmann"],
  ["Eine Website für die Kneipe \u201AZum Goldenen Löwen\u2018 in Köln", "Zum Goldenen Löwen"],
  ['Eine Website für \u201EBäckerei Schmidt" in Hamburg', "Bäckerei Schmidt"],
  ['A website for \u201EBäckerei Schmidt" in Hamburg', "Bäckerei Schmidt"],
  ["A yoga studio called Still Water in Leeds", "Still Water"],
  // Full stops inside a quoted name: abbreviations, initials, a final one. It is the name whole, never cut at its first stop.
  ['A website for my dental clinic "Dr. Lee Dental" in Leeds', "Dr. Lee Dental"],
  ['Website for "St. Mary Bakery"', "St. Mary Bakery"],
  ['A dental clinic called "Dr. Lee Dental" in Leeds', "Dr. Lee Dental"],
  ["A dental clinic called 'Dr. Lee Dental' in Leeds", "Dr. Lee Dental"],
  ['A website for "J. R. Hartley Books" in York', "J. R. Hartley Books"],
  ['A website for "Acme Widgets Inc." in Leeds', "Acme Widgets Inc."],
  ['A website for "Who Is Afraid of Virginia Woolf?" bookshop in Leeds', "Who Is Afraid of Virginia Woolf?"],
  // A quoted sentence is no name; the site is named from the goal's other words, with no quotation mark left open.
  ['A website for my bakery "We bake bread every day." in Leeds', "Leeds Bakery"],
  ['A website for my bakery "Fresh bread. Open daily" in Leeds', "Leeds Bakery"],
  ['A website for my bakery in Leeds. "We bake bread every day."', "Leeds Bakery"],
  ['A website for "We bake bread every day." in Leeds', UNTITLED],
  ['A website for my dental clinic "Dr. Lee Dental in Leeds', "Leeds Dental Clinic"],
  ["A website for my dental clinic 'Fresh smiles. Every day' in Leeds", "Leeds Dental Clinic"],
  // A goal with nothing a person can see in it names nothing: controls, zero-width characters, bare accents, bidi overrides.
  ["\u0007".repeat(8), UNTITLED],
  ["\u200B".repeat(8), UNTITLED],
  ["\u200D".repeat(8), UNTITLED],
  ["\u0301".repeat(8), UNTITLED],
  ["\u202E".repeat(8), UNTITLED],
  [`A website for "${"\u200B".repeat(4)}"`, UNTITLED],
  ["----\n....\n!!!!", UNTITLED],
];

describe("the offline writer's site names", () => {
  it.each(NAMES)("%s → %s", async (goal, name) => {
    const deps = await outcomeDeps();
    const run = await runStages(createStageWork(deps), { planId: "pln_names", outcome: "website", goal }, { until: "build" });
    const { brief } = run.previous.understand as { brief: { name: string } };
    expect(brief.name).toBe(name);
    expect(run.outcomes.understand?.project?.name).toBe(name);
    expect((await readProject(deps.artifacts, "pln_names"))?.name).toBe(name);
    const home = (await readTree(deps.artifacts, "preview/pln_names/")).get("index.html")!;
    // The placeholder is the writer's English: marked so on a site in another language (see below).
    const heading = name === UNTITLED && !home.includes('<html lang="en"') ? `<h1 id="section-1"${ENGLISH_MARK}>` : '<h1 id="section-1">';
    expect(home).toContain(`${heading}${name}</h1>`);
    expect(home).not.toMatch(/>Welcome</);
    // A name made of the goal's words uses only words the goal has; a goal without one is told how to give one.
    if (name !== UNTITLED) {
      for (const word of name.split(" ")) expect(goal.toLowerCase()).toContain(word.toLowerCase());
      expect(run.outcomes.build?.warning).not.toContain(UNTITLED);
    } else {
      expect(run.outcomes.build?.warning).toContain(`gives no name the offline writer can read, so the site is called "${UNTITLED}"`);
    }
  });
});

/** The site the offline writer builds for `goal`: its brief's name, its project's, its home page and its warning. */
async function namedSite(goal: string) {
  const deps = await outcomeDeps();
  const run = await runStages(createStageWork(deps), { planId: "pln_names", outcome: "website", goal }, { until: "build" });
  const { brief } = run.previous.understand as { brief: { name: string; tagline: string } };
  const files = await readTree(deps.artifacts, "preview/pln_names/");
  return { brief, project: run.outcomes.understand?.project?.name, files, home: files.get("index.html")!, warning: run.outcomes.build?.warning ?? "" };
}

/** Control characters and the bidi embedding, override and isolate controls: none may reach a page. */
const CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/u;

describe("names as the goal wrote them, less what no one can see", () => {
  it("keeps a quoted name's words out of the tagline when a word in it introduces names elsewhere", async () => {
    const site = await namedSite('A website for "The Place Called Home" in York');
    expect(site.brief.name).toBe("The Place Called Home");
    expect(site.brief.tagline).not.toMatch(/Place(?! Called Home)/);
  });

  it("drops control and bidi override characters from a name, so nothing after it is reversed", async () => {
    const site = await namedSite('A website for "Bak\u202Eery\u0007\u007F\u0085" in Leeds');
    expect(site.brief.name).toBe("Bakery");
    expect(site.project).toBe("Bakery");
    expect(site.home).toContain("<title>Bakery");
    for (const [file, text] of site.files) expect(text, file).not.toMatch(CONTROLS);
  });

  it("reads decomposed accents (text pasted from macOS) as the letters they make", async () => {
    const site = await namedSite("Cafe\u0301 Ame\u0301lie\u0301 in Pa\u0301ris with cre\u0300pes");
    const composed = await namedSite("Café Amélié in Páris with crèpes");
    expect(site.brief).toEqual(composed.brief);
    expect(site.home).toContain('<h1 id="section-1">Páris Café Amélié</h1>');
  });

  it("shortens a quoted name longer than a name may be at a word, and cuts nothing else into a name", async () => {
    const site = await namedSite(`A website for "${"Very ".repeat(30)}Long Bakery" in Leeds`);
    expect(site.brief.name).toBe(`${"Very ".repeat(15)}Very\u2026`);
    expect(site.project).toBe(site.brief.name);
    expect(site.home).toContain(`<h1 id="section-1">${site.brief.name}</h1>`);
    expect(site.home).toContain(`Welcome to ${site.brief.name}.`);
    expect(site.brief.tagline).not.toMatch(/^A\W*$/);

    const oneWord = await namedSite(`A website for "${"B".repeat(300)}" in Leeds`);
    expect(oneWord.brief.name).toBe(`${"B".repeat(79)}\u2026`);
    expect(oneWord.brief.tagline).not.toMatch(/^A\W*$/);
    expect(oneWord.brief.name).not.toContain("Leeds");
  });

  it("shortens a long quoted name at a word, never at the full stop of its first abbreviation", async () => {
    const site = await namedSite(
      'A website for a clinic called "Dr. Smith and Sons Family Dentistry, Orthodontics and Oral Surgery for the Whole Greater Manchester Area"',
    );
    expect(site.brief.name).toBe("Dr. Smith and Sons Family Dentistry, Orthodontics and Oral Surgery\u2026");
    expect(site.project).toBe(site.brief.name);
    const saint = await namedSite(`A website for "St. Mary ${"Parish ".repeat(12)}Bakery" in Leeds`);
    expect(saint.brief.name).toBe(`St. Mary ${"Parish ".repeat(9)}Parish\u2026`);
  });

  it("takes a long quoted name in a script written without spaces, and reads the goal in its own language", async () => {
    const site = await namedSite(`網站「${"麵".repeat(100)}」`);
    expect(site.brief.name).toBe(`${"麵".repeat(79)}\u2026`);
    // 網 and 麵 are Traditional characters (网, 面 in Simplified).
    expect(site.home).toContain('<html lang="zh-Hant" dir="ltr">');
    expect(site.warning).toContain("no phrasing for Traditional Chinese");
  });

  it("marks the placeholder name as English wherever a page in another language shows it, and leaves an English page unmarked", async () => {
    for (const goal of ["موقع لمخبز صغير في القاهرة يبيع الخبز البلدي والكعك", "京都の和菓子屋のウェブサイトを作ってください"]) {
      const site = await namedSite(goal);
      expect(site.brief.name).toBe(UNTITLED);
      for (const [file, page] of site.files) {
        if (!file.endsWith(".html")) continue;
        expect(page, file).toContain(`<a class="brand" href="index.html"${ENGLISH_MARK}>${UNTITLED}</a>`);
        expect(page, file).toContain(`<p><span${ENGLISH_MARK}>${UNTITLED}</span> \u00B7`);
      }
      expect(site.home).toContain(`<h1 id="section-1"${ENGLISH_MARK}>${UNTITLED}</h1>`);
    }
    const english = await namedSite("Make me a website");
    expect(english.brief.name).toBe(UNTITLED);
    expect(english.home.slice(english.home.indexOf("<body"))).not.toContain('lang="en"');
  });

  it("says what the site is without the word that introduced its quoted name", async () => {
    const called = await namedSite('A website called "Crumbs"');
    expect(called.brief.name).toBe("Crumbs");
    expect(called.brief.tagline).not.toMatch(/\bcalled\b/i);
    const named = await namedSite('A website named "Crumbs" in Leeds');
    expect(named.brief.name).toBe("Crumbs");
    expect(named.brief.tagline).not.toMatch(/\bnamed\b/i);
  });
});

/** Every string in `value`, however deep. */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([key, item]) => [key, ...stringsOf(item)]);
  return [];
}

/** Quotes inside quotes of another kind, a "Called" inside single quotes: the goals that put NUL in a plan's stored result. */
const QUOTES_IN_QUOTES = [
  `A website for 'my "Best" shop' in Paris`,
  `A website for a bakery 'with "fresh" bread' and cakes`,
  `A website for "my 'Best' shop" in Paris`,
  "A website for \u2018my \u201CBest\u201D shop\u2019 in Paris",
  "A website for \u00ABmy 'Best' shop\u00BB in Paris",
  `A website for 'The Place Called "Home"', a guesthouse`,
];

describe("quotes inside quotes", () => {
  it.each(QUOTES_IN_QUOTES)("%s: nothing of the site holds NUL, a plan's result could not be stored", async (goal) => {
    for (const text of stringsOf(composeSite(goal))) expect(text).not.toContain("\u0000");
    const site = await namedSite(goal);
    for (const [file, text] of site.files) expect(text, file).not.toContain("\u0000");
  });

  it("reads the outer quotes as one, the inner ones part of it", () => {
    expect(readGoal(`A website for 'my "Best" shop' in Paris`)).toMatchObject({ subject: 'my "Best" shop', place: "Paris" });
    expect(readGoal(`A website for a bakery 'with "fresh" bread' and cakes`).subject).toBe(`bakery 'with "fresh" bread' and cakes`);
    expect(readGoal(`A website for "my 'Best' shop" in Paris`)).toMatchObject({ name: "my 'Best' shop", place: "Paris" });
    expect(readGoal(`A website for 'The Place Called "Home"', a guesthouse`).name).toBe('The Place Called "Home"');
  });

  it("reads a name in quotation marks of one script whole, with straight quotes inside it, as French and German write them", () => {
    expect(readGoal(`A website for «Chez "Paul" Bistro» in Lyon`).name).toBe('Chez "Paul" Bistro');
    expect(readGoal(`Eine Webseite für \u201EBäckerei "Zum Goldenen Löwen" GmbH\u201C in Köln`, "de").name).toBe('Bäckerei "Zum Goldenen Löwen" GmbH');
    expect(readGoal(`Un site pour \u00ABLe Bistro \u2039Chez Paul\u203A\u00BB à Lyon`, "fr").name).toBe("Le Bistro \u2039Chez Paul\u203A");
    expect(readGoal(`A website for "my «Best» shop" in Leeds`).name).toBe("my «Best» shop");
    expect(readGoal(`A website for \u201CThe \u300CBest\u300D Shop\u201D in Leeds`).name).toBe("The \u300CBest\u300D Shop");
    expect(readGoal(`Eine Webseite für \u00BBCafé \u203AZur Post\u2039\u00AB in Bonn`, "de").name).toBe("Café \u203AZur Post\u2039");
    expect(readGoal(`Eine Webseite für \u201ACafé "Zur Post"\u2018 in Bonn`, "de").name).toBe('Café "Zur Post"');
  });

  it("no goal of quotes of every kind, inside one another or left open, and words gives a fact or a site with NUL in it", () => {
    const marks: [open: string, close: string][] = [
      ['"', '"'],
      ["'", "'"],
      ["\u2018", "\u2019"],
      ["\u201C", "\u201D"],
      ["\u201E", "\u201C"],
      ["\u00AB", "\u00BB"],
      ["\u2039", "\u203A"],
      ["\u300C", "\u300D"],
      ["\u300E", "\u300F"],
    ];
    const words = ["A", "website", "for", "my", "bakery", "called", "named", "Called", "The", "Place", "Home", "Dr.", "St.", "in", "Paris", "with", "and"];
    const word = fc.constantFrom(...words, "selling", "bread,", "cakes.", "(Leeds)", "\u3002", "Caf\u00E9", "Robert's", "'90s", ...marks.flat());
    const { goal } = fc.letrec<{ goal: string; quoted: string }>((tie) => ({
      goal: fc.array(fc.oneof({ depthSize: "small" }, word, word, tie("quoted")), { minLength: 1, maxLength: 8 }).map((parts) => parts.join(" ")),
      quoted: fc.tuple(fc.constantFrom(...marks), tie("goal")).map(([[open, close], inner]) => `${open}${inner}${close}`),
    }));
    fc.assert(
      fc.property(goal, fc.constantFrom("en", "fr"), (text, language) => {
        for (const fact of stringsOf(readGoal(text, language))) expect(fact).not.toContain("\u0000");
        for (const part of stringsOf(composeSite(text, language))) expect(part).not.toContain("\u0000");
      }),
      { numRuns: 400 },
    );
  });
});

describe("quoted names with ampersands, brackets and abbreviations", () => {
  it.each([
    ['A website for "Four (Paris) & Co." bakery in Paris', "Four (Paris) & Co.", "Four (Paris) &amp; Co.", "four-paris-co"],
    // An entity typed as such is what the person typed: kept, and escaped on the page like any "&".
    ['A website for "Tom &amp; Jerry" bakery in Paris', "Tom &amp; Jerry", "Tom &amp;amp; Jerry", "tom-amp-jerry"],
  ])("%s is called %s", async (goal, name, onPage, slug) => {
    const site = await namedSite(goal);
    expect(site.brief.name).toBe(name);
    expect(site.project).toBe(name);
    expect(site.home).toContain(`<h1 id="section-1">${onPage}</h1>`);
    expect(site.home).toContain(`<title>${onPage}`);
    const deps = await outcomeDeps();
    const run = await runStages(createStageWork(deps), { planId: "pln_amp", outcome: "website", goal }, { until: "understand" });
    expect(run.outcomes.understand?.project?.slug).toBe(slug);
  });

  it("ends a sentence on a name with the name's own full stop", async () => {
    const site = await namedSite('A website for "Four (Paris) & Co." bakery in Paris');
    expect(site.home).toContain("Welcome to Four (Paris) &amp; Co. Take a look around.");
    for (const [file, text] of site.files) expect(text, file).not.toContain("Co..");
  });

  it("reads what the site is from the words beside the quoted name", async () => {
    const site = await namedSite('A website for my dental clinic "Dr. Lee Dental" in Leeds');
    expect(site.brief.tagline).toBe("A dental clinic in Leeds.");
  });
});

describe("the reported goal, through the real API", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  }, 60_000);
  afterAll(() => app?.close());

  it("is English, named from its words, with no warning about Dutch", async () => {
    const account = await createAccountWithKey(app, ["build", "read"]);
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A website for a bicycle repair cafe in Utrecht" });
    expect(created.status).toBe(202);
    const plan = await waitForPlan(app.url, credential, created.body.plan.id, (p) => p.status === "awaiting_approval", 60_000);
    expect(plan.project).toMatchObject({ name: "Utrecht Bicycle Repair Cafe", slug: "utrecht-bicycle-repair-cafe" });
    expect(plan.warning).toMatch(/offline without a language model/);
    expect(plan.warning).not.toMatch(/Dutch|in English/);
    const home = await (await fetch(plan.previewUrl!)).text();
    expect(home).toContain('<html lang="en" dir="ltr">');
    expect(home).toContain('<h1 id="section-1">Utrecht Bicycle Repair Cafe</h1>');
  }, 90_000);

  it("with quotes inside quotes, reaches the review gate: its stages' results are stored", async () => {
    const account = await createAccountWithKey(app, ["build", "read"]);
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: QUOTES_IN_QUOTES[0] });
    expect(created.status).toBe(202);
    const plan = await waitForPlan(app.url, credential, created.body.plan.id, (p) => p.status !== "running", 60_000);
    expect(plan.stages.filter((s) => s.state === "failed").map((s) => s.error)).toEqual([]);
    expect(plan.status).toBe("awaiting_approval");
  }, 90_000);
});
