import { describe, expect, it } from "vitest";
import { ensureProject, slugify } from "../../src/outcomes/projects.js";
import { pageSlug } from "../../src/outcomes/website/render-site.js";
import { outcomeDeps } from "./support/outcome-kit.js";

/** A name whose numbered slug ("…-2", 56 characters before it) was cut inside "associations". */
const LONG_NAME = "The Extraordinarily Long Named Neighbourhood Associations Of Upper Riverside";

/** True when every hyphenated part of `slug` is a whole word of `text`. */
function wholeWords(slug: string, text: string): boolean {
  const words = new Set(text.toLowerCase().split(/[^a-z0-9]+/));
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
