import { describe, expect, it } from "vitest";
import { asciiHyphenated, ensureProject, slugify } from "../../src/outcomes/projects.js";
import { pageSlug } from "../../src/outcomes/website/render-site.js";
import { outcomeDeps } from "./support/outcome-kit.js";

/** A name whose numbered slug ("…-2", 56 characters before it) was cut inside "associations". */
const LONG_NAME = "The Extraordinarily Long Named Neighbourhood Associations Of Upper Riverside";

/** True when every hyphenated part of `slug` is a whole word of `text` (its Latin accents folded and ß written ss, as slugs have them). */
function wholeWords(slug: string, text: string): boolean {
  const folded = text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replaceAll("ß", "ss")
    .normalize("NFC");
  const words = new Set(folded.split(/[^\p{L}\p{M}\p{N}]+/u));
  return slug.split("-").every((part) => words.has(part));
}

describe("slugs (the addresses of sites and books, and the EPUB's file name)", () => {
  it("are never cut mid-word", () => {
    const slug = slugify(LONG_NAME);
    expect(slug.length).toBeLessThanOrEqual(60);
    expect(wholeWords(slug, LONG_NAME), slug).toBe(true);
    expect(slug).toBe("the-extraordinarily-long-named-neighbourhood-associations-of");
    // Cut at 60 characters this one read "…-artisana".
    expect(slugify("Maison Dupont Boulangerie Pâtisserie Traditionnelle Artisanale Lyonnaise")).toBe("maison-dupont-boulangerie-patisserie-traditionnelle");

    const page = pageSlug("Frequently asked questions about our sourdough bread");
    expect(page.length).toBeLessThanOrEqual(40);
    expect(wholeWords(page, "Frequently asked questions about our sourdough bread"), page).toBe(true);
  });

  it("cut inside a word only when one word alone is too long", () => {
    expect(slugify("a".repeat(80))).toBe("a".repeat(60));
    expect(pageSlug("b".repeat(50))).toBe("b".repeat(40));
  });

  it("keep whole German compounds, their ß written ss: cut at the last hyphen within 60 characters", () => {
    for (const name of [
      "Schlüsseldienst Straßenverkehrsordnungswidrigkeitenberatungsgesellschaft Süd",
      "Fußpflegepraxis Weiß Gesundheitsförderungsmaßnahmenbegleitung Großraum",
      "Großhandelsgesellschaft für Landwirtschaftsmaschinenersatzteile und Zubehör",
    ]) {
      const slug = slugify(name);
      expect(slug.length, name).toBeLessThanOrEqual(60);
      expect(wholeWords(slug, name), slug).toBe(true);
    }
    expect(slugify("Schlüsseldienst Straßenverkehrsordnungswidrigkeitenberatungsgesellschaft Süd")).toBe("schlusseldienst");
    // Read "fu-pflegepraxis-wei-gesundheitsforderungsma-nahmenbegleitung" when ß separated words.
    expect(slugify("Fußpflegepraxis Weiß Gesundheitsförderungsmaßnahmenbegleitung Großraum")).toBe("fusspflegepraxis-weiss");
    expect(slugify("Großbäckerei Weißbrot & Brezeln")).toBe("grossbackerei-weissbrot-brezeln");
    // One word longer than the limit is cut inside itself, as nothing else would fit.
    expect(slugify("Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft")).toBe(
      "donaudampfschifffahrtselektrizitatenhauptbetriebswerkbauunte",
    );
  });

  it("fold the Latin letters that have no accent to take off, as a Latin name's slug is ASCII", () => {
    expect(slugify("Işıklı Kuruyemiş İğdır")).toBe("isikli-kuruyemis-igdir");
    expect(slugify("Großmann")).toBe(slugify("GROSSMANN"));
    expect(slugify("Großmann")).toBe("grossmann");
    expect(slugify("Łódź Smørrebrød Đakovo Æbleskiver Œuvre")).toBe("lodz-smorrebrod-dakovo-aebleskiver-oeuvre");
    expect(slugify("Þingvellir Ðorð Ħamrun ẞ")).toBe("thingvellir-dord-hamrun-ss");
    expect(asciiHyphenated("Işıklı Kuruyemiş İğdır")).toBe("isikli-kuruyemis-igdir");
    expect(pageSlug("Über Großmann")).toBe("uber-grossmann");
    // Other scripts keep their letters.
    expect(slugify("Кофейня Москва")).toBe("кофейня-москва");
  });

  it("keep the letters and digits of any script, lower-cased where the script has case", () => {
    expect(slugify("東京カフェ")).toBe("東京カフェ");
    expect(slugify("Кофейня Москва")).toBe("кофейня-москва");
    expect(slugify("مطعم بيروت")).toBe("مطعم-بيروت");
    // Vowel signs and other marks stay with their letters; a Cyrillic й is not folded to и.
    expect(slugify('"मीठा घर" 2')).toBe("मीठा-घर-2");
    expect(slugify("Чайный дом Йошкар-Олы")).toBe("чайный-дом-йошкар-олы");
    expect(slugify("Ταβέρνα Ο Νίκος")).toBe("ταβέρνα-ο-νίκος");
    expect(slugify("서울 빵집")).toBe("서울-빵집");
    // Latin accents still fold, as before.
    expect(slugify("Café Ünïcode & Co.")).toBe("cafe-unicode-co");
    // Nothing to keep: the fallback.
    expect(slugify("🍩 ☕ !!!")).toBe("project");
  });

  // Found reviewing slugs in any script: each of these published at an address that reads as "sunrise-bakery".
  it("never read as another name's: no invisible characters, and no word mixing scripts whose letters pass for each other's", () => {
    expect(slugify("Sunrise Bakery")).toBe("sunrise-bakery");
    for (const invisible of ["\ufe0f", "\u3164", "\u115f", "\u1160", "\u200b", "\u200d", "\u180b", "\u{e0100}", "\u20dd", "\u0489", "\u00ad"]) {
      expect(slugify(`Sunrise Bakery${invisible}`), escape(invisible)).toBe("sunrise-bakery");
      expect(slugify(`Sunrise${invisible}Bakery`), escape(invisible)).toMatch(/^sunrise-?bakery$/);
    }
    // A Cyrillic а or С in a Latin word, a Latin s in a Greek one: the script most of the word is in stays, the stray letter separates.
    expect(slugify("Sunrise B\u0430kery")).toBe("sunrise-b-kery");
    expect(slugify("\u0421unrise Bakery")).toBe("unrise-bakery");
    expect(slugify("Ταβέρνα Νίκοs")).toBe("ταβέρνα-νίκο");
    // Words each in one script keep theirs, and the scripts of Japanese mix as they are written.
    expect(slugify("Кофейня Moskva")).toBe("кофейня-moskva");
    expect(slugify("東京カフェの本")).toBe("東京カフェの本");
    expect(slugify("Café 24")).toBe("cafe-24");
  });

  // Left from the review above: a word wholly in Cyrillic or Greek letters that pass for Latin ones read as the Latin word.
  it("spell a word made only of Cyrillic or Greek look-alikes of Latin letters in Latin, so its address is the Latin word's", async () => {
    expect(slugify("аррӏе")).toBe("apple");
    expect(slugify("ѕра серо")).toBe("spa-cepo");
    expect(slugify("ονο")).toBe("ovo");
    // A word with one letter of its own is a word of that script, as written.
    expect(slugify("Кофейня Москва")).toBe("кофейня-москва");
    expect(slugify("сыр")).toBe("сыр");
    expect(slugify("Ταβέρνα")).toBe("ταβέρνα");
    // So the look-alike of a claimed address is a visibly different one.
    const deps = await outcomeDeps();
    expect((await ensureProject(deps.artifacts, "pln_real", "Apple")).slug).toBe("apple");
    expect((await ensureProject(deps.artifacts, "pln_lookalike", "АррӀе")).slug).toBe("apple-2");
  });

  it("cut a long word of any script between two of its characters, never inside one", () => {
    // A character outside the BMP is two UTF-16 units; "a" first puts the 60th unit inside one.
    const astral = slugify(`a${"𠮷".repeat(40)}`);
    expect(astral).toBe(`a${"𠮷".repeat(29)}`);
    expect(astral).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    // A consonant and its vowel sign are one character to a reader.
    expect(slugify(`क${"कि".repeat(40)}`)).toBe(`क${"कि".repeat(29)}`);
  });

  it("of pages fold accents as project slugs do", () => {
    expect(pageSlug("Über uns")).toBe("uber-uns");
    expect(pageSlug("Café-Menü.html")).toBe(slugify("Café-Menü"));
  });

  it("keep whole words when a second plan with the same name gets a numbered slug", async () => {
    const deps = await outcomeDeps();
    const first = await ensureProject(deps.artifacts, "pln_a", LONG_NAME);
    const second = await ensureProject(deps.artifacts, "pln_b", LONG_NAME);
    expect(first.slug).toBe("the-extraordinarily-long-named-neighbourhood-associations-of");
    expect(second.slug).toMatch(/-2$/);
    expect(second.slug.length).toBeLessThanOrEqual(60);
    expect(wholeWords(second.slug.replace(/-2$/, ""), LONG_NAME), second.slug).toBe(true);
  });
});
