import { describe, expect, it } from "vitest";
import type { WebsiteBrief } from "../../src/outcomes/content.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { readGoal } from "../../src/outcomes/writers/goal-facts.js";
import { outcomeDeps, readTree, textOf } from "./support/outcome-kit.js";
import { runStages } from "./support/run-stages.js";

/**
 * Goals testers typed into the built server, and what a visitor saw on the
 * site the offline writer made of each: a Japanese page marked English,
 * prices cut at the decimal point, opening hours offered as a phone number,
 * a phone number left out, a contact page with nothing on it. Each is
 * checked on the built pages, as a visitor reads them.
 */
async function builtSite(goal: string) {
  const deps = await outcomeDeps();
  const run = await runStages(createStageWork(deps), { planId: "pln_facts", outcome: "website", goal }, { until: "build" });
  const { brief } = run.previous.understand as { brief: WebsiteBrief };
  const files = await readTree(deps.artifacts, "preview/pln_facts/");
  const pages = [...files].filter(([file]) => file.endsWith(".html"));
  return { brief, files, pages, text: textOf(pages.map(([, page]) => page).join("\n")), warning: run.outcomes.build?.warning ?? "" };
}

/** The buttons of a set of pages: where each leads and what it says. */
function buttonsOf(pages: readonly (readonly [string, string])[]): { href: string; label: string }[] {
  return pages.flatMap(([, page]) => [...page.matchAll(/<a class="button" href="([^"]+)">([^<]*)<\/a>/g)].map((m) => ({ href: m[1]!, label: m[2]! })));
}

describe("a goal in a script written without spaces, with numbers in it", () => {
  it.each([
    [
      "ja",
      "東京の小さなラーメン屋「麺屋はなび」のウェブサイトを作ってください。営業時間は11時から22時まで、電話番号は03-1234-5678です。",
      "麺屋はなび",
      "Japanese",
    ],
    ["zh", "为我在上海的茶馆“清风茶舍”做一个网站，提供绿茶和点心。营业时间每天10点到22点", "清风茶舍", "Chinese"],
  ])("%s: keeps its language, and its sentences stay out of the English copy", async (lang, goal, name, language) => {
    const site = await builtSite(goal);
    for (const [file, page] of site.pages) expect(page, file).toContain(`<html lang="${lang}" dir="ltr">`);
    expect(site.brief.name).toBe(name);
    expect(site.files.get("index.html")).toContain(`<h1 id="section-1">${name}</h1>`);
    expect(site.text).not.toMatch(/\b(?:a|an|the|for) [\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u);
    expect(site.warning).toContain(`the offline writer has no phrasing for ${language}`);
  });

  it("still finds the phone number in it", async () => {
    const site = await builtSite(
      "東京の小さなラーメン屋「麺屋はなび」のウェブサイトを作ってください。営業時間は11時から22時まで、電話番号は03-1234-5678です。",
    );
    expect(textOf(site.files.get("contact.html")!)).toContain("Call 03-1234-5678.");
  });
});

describe("numbers as the goal wrote them", () => {
  it("keeps a price's pence and cents in the cards, the tagline and the description", async () => {
    const site = await builtSite('A cafe called "Bean There" in Leeds selling espresso £2.20, carrot cake £3.50 and tea for $1.99');
    const home = site.files.get("index.html")!;
    expect(home).toContain('<meta name="description" content="A cafe in Leeds for espresso £2.20, carrot cake £3.50 and tea for $1.99.">');
    for (const card of ["Espresso £2.20", "Carrot cake £3.50", "Tea for $1.99"]) expect(home).toContain(`<h3>${card}</h3>`);
    // No price anywhere without its pennies ("£2." or "£2").
    expect(site.text).not.toMatch(/[£$]\d+\.?(?![\d.])/);
    expect(home).not.toMatch(/content="[^"]*[£$]\d+\.?"/);
  });

  it("keeps a time's minutes, after a colon or a dot", async () => {
    const offered = await builtSite("A yoga studio in Leeds offering a beginners class at 10:00");
    expect(offered.files.get("index.html")).toContain("<h3>Beginners class at 10:00</h3>");
    const asked = await builtSite("A yoga studio in Leeds with a morning class at 7.30");
    expect(asked.text).toContain("Ask us about morning class at 7.30:");
  });
});

describe("phone numbers", () => {
  it.each([
    ['A bakery called "Crumbs" in Leeds, open 08.00-18.00 every day', "opening hours"],
    ['A plumber called "Fix It" in Leeds, established 01.02.2003', "a date"],
  ])("%s: %s is no phone number", async (goal) => {
    const site = await builtSite(goal);
    expect(site.text).not.toContain("Call ");
    expect(site.text).not.toContain("How do I get in touch?");
  });

  it.each([
    ["A plumber in Leeds, phone (555) 123-4567", "(555) 123-4567"],
    ["A plumber in Leeds. Call 718-555-0199", "718-555-0199"],
  ])("%s: the contact page gives the number", async (goal, phone) => {
    const site = await builtSite(goal);
    const contact = textOf(site.files.get("contact.html")!);
    expect(contact).toContain(`Call ${phone}.`);
    expect(contact).toContain("How to reach us");
  });

  // What the goal says, and the number a visitor may call, if any: numbers that are dates, times, prices, years or postcodes are none.
  it.each([
    ["Call us on +44 20 7946 0000", "+44 20 7946 0000"],
    ["A bakery in Leeds, tel 0113 496 0000", "0113 496 0000"],
    ["A bakery in Leeds, 0113 496 0000", "0113 496 0000"],
    ["A bakery in Leeds. Tel:0113 496 0000", "0113 496 0000"],
    ["A café in Paris, téléphone 01 23 45 67 89", "01 23 45 67 89"],
    ["A barber in Boston, phone 555-0199 or 617.555.0123", "555-0199"],
    ["A barber in Boston: 617-555-0123", "617-555-0123"],
    ["A barber in Boston: (617) 555-0123", "(617) 555-0123"],
    ["A barber in Boston, call +1 617 555 0123", "+1 617 555 0123"],
    ["A bakery in Leeds, open 08.00 - 18.00", undefined],
    ["A bakery in Leeds, open 0800-1800", undefined],
    ["A gym in Leeds, call between 09:00-17:00", undefined],
    ["A plumber in Leeds since 01/02/2003", undefined],
    ["A plumber in Leeds since 2003-02-01", undefined],
    ["A tutor in Boston, MA 02139-4307", undefined],
    ["A shop in Leeds selling sofas from £1,299.00 to £2,499.00", undefined],
    ["A club founded in 1987, 2003 and 2011", undefined],
  ])("%s → %s", (goal, phone) => {
    expect(readGoal(goal).phone).toBe(phone);
  });

  // The word for "phone" in the goal's own language introduces a number as "phone" does in English; without it, a
  // number that is neither international nor a long national one is still none.
  it.each([
    ["el", "Ιστοσελίδα για έναν φούρνο στη Θεσσαλονίκη, τηλέφωνο 2310 123456", "2310 123456"],
    ["el", "Ιστοσελίδα για έναν φούρνο στη Θεσσαλονίκη, τηλ. 2310 123456", "2310 123456"],
    ["el", "Ιστοσελίδα για έναν φούρνο στη Θεσσαλονίκη, 2310 123456", undefined],
    ["ar", "موقع لمخبز في بيروت، الهاتف 01 234 567", "01 234 567"],
    ["ar", "موقع لمخبز في بيروت، 01 234 567", undefined],
    ["ru", "Сайт для пекарни в Новосибирске, телефон 8 (383) 555-12-34", "8 (383) 555-12-34"],
    ["ru", "Сайт для пекарни в Новосибирске, тел. 8 (383) 555-12-34", "8 (383) 555-12-34"],
    ["ru", "Сайт для пекарни в Новосибирске, с 1995 года, 8 (383) 555-12-34", undefined],
    ["ja", "京都の喫茶店のウェブサイト。お店の電話は75-123-4567です。", "75-123-4567"],
    ["ja", "京都の喫茶店のウェブサイト。電話番号：75-123-4567", "75-123-4567"],
    ["zh", "成都花店的网站，电话 28-8765-4321", "28-8765-4321"],
    ["zh", "成都花店的网站，电话是28-8765-4321", "28-8765-4321"],
    ["ko", "부산 빵집 웹사이트, 전화 51-123-4567", "51-123-4567"],
    ["ko", "부산 빵집 웹사이트, 전화번호는 51-123-4567", "51-123-4567"],
    ["hi", "दिल्ली में बेकरी की वेबसाइट, फ़ोन 98765 43210", "98765 43210"],
    ["hi", "दिल्ली में बेकरी की वेबसाइट, फोन 98765 43210", "98765 43210"],
    // फ़ typed as one character, which NFC writes as फ and a nukta.
    ["hi", "दिल्ली में बेकरी की वेबसाइट, \u095E\u094Bन 98765 43210", "98765 43210"],
    ["hi", "दिल्ली में बेकरी की वेबसाइट, 98765 43210", undefined],
    ["tr", "İzmir'de bir fırın için web sitesi, telefon 232 123 45 67", "232 123 45 67"],
    ["tr", "İzmir'de bir fırın için web sitesi, tel: 232 123 45 67", "232 123 45 67"],
    ["de", "Eine Website für eine Bäckerei in Köln, Telefon 221 1234567", "221 1234567"],
    ["nl", "Een website voor een bakkerij in Utrecht, bel 30 123 4567", "30 123 4567"],
    ["es", "Una web para una panadería en Madrid, teléfono 912 345 678", "912 345 678"],
    ["pt", "Um site para uma padaria em Lisboa, telefone 213 456 789", "213 456 789"],
    ["it", "Un sito per una pasticceria a Roma, telefono 612 345 678", "612 345 678"],
    ["pl", "Strona dla piekarni w Krakowie, tel. 12 345 67 89", "12 345 67 89"],
    ["sv", "En webbplats för ett bageri i Malmö, telefon 40 123 45 67", "40 123 45 67"],
    ["fi", "Verkkosivut leipomolle Helsingissä, puh. 9 123 4567", "9 123 4567"],
    ["id", "Situs untuk toko roti di Bandung, telepon 22 123 4567", "22 123 4567"],
  ])("%s: %s → %s", (language, goal, phone) => {
    expect(readGoal(goal, language).phone).toBe(phone);
  });

  it("a Greek goal's number after its word for phone is on the contact page", async () => {
    const site = await builtSite("Ιστοσελίδα για έναν φούρνο στη Θεσσαλονίκη, τηλέφωνο 2310 123456");
    expect(textOf(site.files.get("contact.html")!)).toContain("Call 2310 123456.");
  });
});

describe("a goal with no contact details", () => {
  it("gets no contact page, and no button leads to one", async () => {
    const site = await builtSite("A website for a dog grooming business");
    expect(site.files.has("contact.html")).toBe(false);
    for (const [file, page] of site.pages) expect(page, file).not.toContain('href="contact.html"');
    const buttons = buttonsOf(site.pages);
    expect(buttons.length).toBeGreaterThan(0);
    for (const { href, label } of buttons) {
      expect(site.files.has(href), href).toBe(true);
      expect(label).not.toMatch(/get in touch/i);
    }
  });

  it("keeps a contact page that says where it is, but no button asks to get in touch", async () => {
    const site = await builtSite("A plumber in Leeds");
    expect(textOf(site.files.get("contact.html")!)).toContain("You will find Leeds Plumber in Leeds.");
    for (const { href, label } of buttonsOf(site.pages)) {
      expect(href).not.toBe("contact.html");
      expect(label).not.toMatch(/get in touch/i);
    }
  });
});

describe("an e-mail address with letters beyond ASCII", () => {
  it.each([
    ["A website for a dental clinic in Madrid, email josé.garcía@clinica.es or call +34 912 345 678", "josé.garcía@clinica.es"],
    ["A website for a butcher in Munich, write to jürgen@schmidt.de", "jürgen@schmidt.de"],
    ["A website for a bakery in Berlin, email info@müller.de", "info@müller.de"],
  ])("%s: the site gives the address whole, never a part of it", async (goal, address) => {
    expect(readGoal(goal).email).toBe(address);
    const site = await builtSite(goal);
    expect(site.text).toContain(address);
    const mailto = site.pages.flatMap(([, page]) => [...page.matchAll(/href="mailto:([^"]+)"/g)].map((m) => m[1]));
    expect(mailto.length).toBeGreaterThan(0);
    for (const href of mailto) expect(decodeURIComponent(href!)).toBe(address);
  });
});

describe("an e-mail address written against the words of a script without spaces", () => {
  it.each([
    [
      "ja",
      "「珈琲館みどり」のウェブサイトを作ってください。京都の小さな喫茶店です。電話は075-123-4567、メールはinfo@midori-coffee.jpです。",
      "info@midori-coffee.jp",
    ],
    ["zh", "为我在成都的花店“绿意花坊”做一个网站，出售鲜花和绿植。电话028-8765-4321，邮箱info@lv.cn，欢迎光临。", "info@lv.cn"],
    ["ko", "부산에 있는 작은 빵집 「봄날」의 웹사이트를 만들어 주세요. 문의는 hello@bomnal.kr로 해 주세요.", "hello@bomnal.kr"],
  ])("%s: the site is in the goal's language and gives the address, none of the words beside it", async (lang, goal, address) => {
    expect(readGoal(goal, lang).email).toBe(address);
    const site = await builtSite(goal);
    for (const [file, page] of site.pages) expect(page, file).toContain(`<html lang="${lang}" dir="ltr">`);
    const mailto = site.pages.flatMap(([, page]) => [...page.matchAll(/href="mailto:([^"]+)"/g)].map((m) => m[1]));
    expect(mailto.length).toBeGreaterThan(0);
    for (const href of mailto) expect(decodeURIComponent(href!)).toBe(address);
    // No English pattern cut the goal's sentences ("A のウェブサイトを…").
    expect(site.text).not.toMatch(/\b(?:a|an|the|for) [\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u);
  });
});

/** The card titles of a page, as a visitor reads them. */
function cardTitlesOf(page: string): string[] {
  return [...page.matchAll(/<h3>([^<]*)<\/h3>/g)].map((m) => textOf(m[1]!));
}

describe("times in a goal", () => {
  it("a bicycle repair cafe open on Saturdays: one sane opening line, no menu, no food; the hours where it is found, no offering", async () => {
    const site = await builtSite("A website for a neighbourhood bicycle repair cafe in Lyon, open on Saturdays");
    const home = site.files.get("index.html")!;
    expect(home).toContain('<meta name="description" content="A neighbourhood bicycle repair cafe in Lyon.">');
    expect(home).toContain('<p class="lead">A neighbourhood bicycle repair cafe in Lyon.</p>');
    expect(site.files.has("menu.html")).toBe(false);
    expect(site.text).not.toMatch(/for cafe in Lyon|good food|allergens|made fresh/i);
    expect(home).not.toMatch(/open on Saturdays/i);
    expect(site.files.get("contact.html")).toContain("<p>Open on Saturdays.</p>");
  });

  it.each([
    ["A bakery in Leeds selling bread and cakes, open daily 9-5", ["Bread", "Cakes"], "Open daily 9-5."],
    ["A florist in York selling bouquets and wreaths, open on Saturdays", ["Bouquets", "Wreaths"], "Open on Saturdays."],
    ["A pottery studio in Bath teaching wheel throwing and glazing, every Sunday", ["Wheel throwing", "Glazing"], undefined],
  ])("%s: the time is no card", async (goal, offered, hours) => {
    const site = await builtSite(goal);
    const home = site.files.get("index.html")!;
    const cards = cardTitlesOf(home);
    for (const title of offered) expect(cards).toContain(title);
    for (const title of cards) expect(title).not.toMatch(/^(?:open|every)\b/i);
    expect(home).not.toMatch(/open daily|open on Saturdays|ask us about every|every Sunday/i);
    // What the goal said of when it is open is said once, where the place is.
    const contact = site.files.get("contact.html") ?? "";
    if (hours) expect(contact).toContain(`<p>${hours}</p>`);
    expect(site.text.split(hours ?? "\u0000").length - 1).toBe(hours ? 1 : 0);
  });

  it.each([
    ["Website for a bakery in Leeds. Opening hours: Tue-Sat 8:00-16:00. Phone 0113 496 0000.", "Tue-Sat 8:00-16:00"],
    ["A site for a bike shop that sells helmets and repairs bikes, open Monday to Friday 9am-6pm", "Monday to Friday 9am-6pm"],
    ["A cafe in Hull, open Mon-Fri 9-5, Sat 10-2, closed Sundays", "Mon-Fri 9-5, Sat 10-2"],
    ["A florist in York, hours are 9am to 5pm weekdays", "9am to 5pm weekdays"],
    ["A rowing club open to beginners", undefined],
    ["A pub with open mic nights", undefined],
  ])("%s: open %s", (goal, hours) => {
    expect(readGoal(goal).hours).toBe(hours);
  });

  it("seasons after an offering stay with it, and the description keeps the sessions the goal lists", async () => {
    const site = await builtSite(
      "A website for Wearside Rowing Club in Durham. We offer learn-to-row courses every spring and autumn, junior sessions on Saturday mornings and social rowing.",
    );
    const home = site.files.get("index.html")!;
    expect(cardTitlesOf(home)).toEqual(
      expect.arrayContaining(["Learn-to-row courses every spring and autumn", "Junior sessions on Saturday mornings", "Social rowing"]),
    );
    expect(cardTitlesOf(home)).not.toContain("Autumn");
    expect(home).toContain(
      '<meta name="description" content="Learn-to-row courses every spring and autumn, junior sessions on Saturday mornings and social rowing in Durham.">',
    );
  });
});

describe("a trade before \u201Ccafe\u201D says what the place is", () => {
  it.each(["A website for a repair cafe in Leeds", "A website for a bicycle repair café in Lyon", "A website for an internet cafe in Leeds"])(
    "%s: no menu and no food copy",
    async (goal) => {
      const site = await builtSite(goal);
      expect(site.files.has("menu.html")).toBe(false);
      expect(site.text).not.toMatch(/good food|allergens|made fresh|our menu/i);
    },
  );

  it("a trade word before a business noun is no verb, and what the business offers after it still is", async () => {
    const site = await builtSite("A website for a design studio in Bath offering logos and posters");
    const cards = cardTitlesOf(site.files.get("index.html")!);
    expect(cards).toEqual(expect.arrayContaining(["Logos", "Posters"]));
    for (const title of cards) expect(title).not.toMatch(/studio|Bath/i);
  });

  it.each(["A website for a cafe in Leeds", "A website for a café in Lyon", "A website for a crêpe café in Rennes", "A website for a pâtisserie in Paris"])(
    "%s: a cafe is still a cafe, its accent and all",
    async (goal) => {
      const site = await builtSite(goal);
      expect(site.files.has("menu.html")).toBe(true);
    },
  );
});

// Left from earlier reviews: a river taken for the club's name, and a noun taken for a verb.
describe("where a place is, and what a business does", () => {
  it("a capitalised place after 'on the' is where the club is, not its name", () => {
    const facts = readGoal("A website for our rowing club on the River Wear in Durham, open to beginners");
    expect(facts).toMatchObject({ name: "Durham Rowing Club", namedInGoal: false, subject: "rowing club", place: "Durham" });
  });

  it("'we do' names what is offered, and 'design' after a noun is a noun, not the verb that starts an offering", () => {
    const facts = readGoal("A landing page for Green Thumb Landscaping, we do garden design and lawn care in Bristol");
    expect(facts).toMatchObject({ name: "Green Thumb Landscaping", place: "Bristol", offerings: ["garden design", "lawn care"] });
    // After a pronoun, the same word is the verb, and what follows it is offered.
    expect(readGoal("A site for my workshop where we repair bikes").offerings).toEqual(["bikes"]);
  });
});
