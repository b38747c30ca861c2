import { createHash } from "node:crypto";
import type { ArtifactStore } from "./artifact-store.js";
import { trimEndOf, trimOf } from "../strings.js";

/** A plan's project, as the plan shows it after `understand`. */
export interface Project {
  id: string;
  name: string;
  slug: string;
}

const decoder = new TextDecoder();

/**
 * Gives a plan its project: the same id and slug on every re-run of
 * `understand` (so URLs stay stable), a fresh slug claimed for a new plan.
 *
 * Slugs are unique across plans through the artifact index: claiming
 * `index/slugs/{slug}` is a create-if-absent, atomic on a file system and
 * on object stores with conditional writes, so two plans racing for
 * "bakery" end up with "bakery" and "bakery-2", never both with one.
 */
export async function ensureProject(store: ArtifactStore, planId: string, name: string): Promise<Project> {
  const recordKey = `index/plans/${planId}/project.json`;
  const existing = await readProject(store, planId);
  if (existing) {
    const renamed = { ...existing, name };
    if (existing.name !== name) await store.put(recordKey, JSON.stringify(renamed));
    return renamed;
  }
  const project = { id: projectIdFor(planId), name, slug: await claimSlug(store, planId, slugify(name)) };
  await store.put(recordKey, JSON.stringify(project));
  return project;
}

/**
 * Gives a plan's project the name its newest draft uses: a revision can
 * rename the site, and the API, CLI and Console show the project's name.
 * A revision is taken at the approval gate, before anything is published,
 * so the address follows the name too: the new name's slug is claimed and
 * the old one let go (no site was ever served there). A project already
 * published keeps its address. Undefined before `understand`.
 */
export async function renameProject(store: ArtifactStore, planId: string, name: string): Promise<Project | undefined> {
  const existing = await readProject(store, planId);
  if (!existing || existing.name === name) return existing;
  const published = await wasPublished(store, existing.slug);
  // The claim finds this plan's own slug again when the new name makes it ("Bakery" for "bakery-2").
  const slug = published ? existing.slug : await claimSlug(store, planId, slugify(name));
  const project = { ...existing, name, slug };
  await store.put(`index/plans/${planId}/project.json`, JSON.stringify(project));
  // Let go only once the record names the new slug: a crash in between leaves an unused claim, never a plan without one.
  if (slug !== existing.slug && (await slugOwner(store, existing.slug)) === planId) await store.remove(`index/slugs/${existing.slug}`);
  return project;
}

/** Plans of one name that get `base-2` … `base-5`; later ones get a suffix of their own (see claimSlug). */
const NUMBERED_SLUGS = 5;

/**
 * Claims for `planId` the first slug no other plan holds: `base`, `base-2`
 * … `base-5`, then `base-` and digits of the plan id's hash, longer until
 * free. Counting on (`base-6`, `base-7`…) cost a try per plan ever named so,
 * and a common name made each new plan's claim slower than the last (1,922
 * "Harbour Lights Kayaks" took 2.7 s); now a claim takes at most a few tries.
 * Every slug tried is the same on a re-run, so a plan finds its own claim
 * again (a crash between claim and record, a rename back).
 */
async function claimSlug(store: ArtifactStore, planId: string, base: string): Promise<string> {
  // A claim left by this very plan (a crash between claim and record) is ours.
  const claimed = async (slug: string) => (await store.put(`index/slugs/${slug}`, planId, { ifAbsent: true })) || (await slugOwner(store, slug)) === planId;
  const suffixed = (suffix: string) => `${cutSlug(base, 60 - 1 - suffix.length)}-${suffix}`;
  if (await claimed(base)) return base;
  for (let n = 2; n <= NUMBERED_SLUGS; n++) {
    const slug = suffixed(String(n));
    if (await claimed(slug)) return slug;
  }
  const digits = hashDigits(planId);
  for (let length = 5; ; length++) {
    const slug = suffixed(ownSuffix(digits, length));
    if (await claimed(slug)) return slug;
  }
}

/** The project recorded for a plan, if `understand` has run. */
export async function readProject(store: ArtifactStore, planId: string): Promise<Project | undefined> {
  const bytes = await store.get(`index/plans/${planId}/project.json`);
  return bytes ? (JSON.parse(decoder.decode(bytes)) as Project) : undefined;
}

/**
 * Marks a slug as an address a site or book was published at, before the
 * files go there: such an address stays its plan's after the plan is deleted.
 */
export async function markPublished(store: ArtifactStore, slug: string, planId: string): Promise<void> {
  await store.put(`index/published/${slug}`, planId, { ifAbsent: true });
}

/** True when a site or book was published at `slug` (marked, or, for one published before marks, its files are there). */
export async function wasPublished(store: ArtifactStore, slug: string): Promise<boolean> {
  if ((await store.get(`index/published/${slug}`)) !== undefined) return true;
  return (await store.list(`sites/${slug}/`)).length > 0 || (await store.list(`books/${slug}/`)).length > 0;
}

/** A plan id's SHA-256 in base 36. */
function hashDigits(planId: string): string {
  return BigInt(`0x${createHash("sha256").update(planId).digest("hex")}`).toString(36);
}

/**
 * The last `length` digits of a plan id's hash in base 36 (the first ones
 * lean to small digits), never all numerals: `bakery-10530` would read as
 * the 10,530th plan so named.
 */
function ownSuffix(digest: string, length: number): string {
  const digits = digest.slice(-length);
  return /^\d+$/.test(digits) ? `x${digits.slice(1)}` : digits;
}

/** The plan that owns a slug, if any. */
export async function slugOwner(store: ArtifactStore, slug: string): Promise<string | undefined> {
  const bytes = await store.get(`index/slugs/${slug}`);
  return bytes ? decoder.decode(bytes) : undefined;
}

/**
 * "Café Ünïcode & Co." → "cafe-unicode-co", "Кофейня Москва" → "кофейня-москва", "東京カフェ" → "東京カフェ";
 * never empty ("project" when nothing is left), at most 60 characters, never cut mid-word.
 */
export function slugify(name: string): string {
  return cutSlug(hyphenated(name), 60) || "project";
}

/** The path a published site or book is served at: a URL's, so a slug in another script is percent-encoded. */
export function publishedPath(mount: "sites" | "books", slug: string): string {
  return `/${mount}/${encodeURIComponent(slug)}/`;
}

/** A Latin letter's accents, folded away ("ü" → "u"); other scripts keep theirs ("й" is a letter of its own, not "и"). */
const LATIN_ACCENTS = /(\p{Script=Latin})[\u0300-\u036f]+/gu;
/**
 * Lower-case Latin letters with no accent to fold away (ẞ lowercases to ß), spelt out as slug libraries spell them, so
 * a Latin name's slug is ASCII throughout ("Großmann" → "grossmann", as "GROSSMANN"; "Işıklı" → "isikli").
 */
const LATIN_LETTERS_SPELT_OUT: Readonly<Record<string, string>> = { ß: "ss", æ: "ae", œ: "oe", ø: "o", ł: "l", đ: "d", ð: "d", þ: "th", ı: "i", ħ: "h" };
const LATIN_LETTER_SPELT_OUT = new RegExp(`[${Object.keys(LATIN_LETTERS_SPELT_OUT).join("")}]`, "gu");
/** A mark with no letter or digit to sit on, which no word starts with. */
const LONE_MARKS = /(?<![\p{L}\p{M}\p{N}])\p{M}+/gu;
/**
 * What shows as nothing or only decorates the letter before it (variation selectors, Hangul fillers, zero widths,
 * enclosing circles): in a slug it would make an address that looks like another plan's.
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Me}]+/gu;
/** The scripts whose letters pass for one another's (Cyrillic а, е, о, р, с and Greek ο, ν for Latin ones). */
const LOOKALIKE_SCRIPTS = [/\p{Script=Latin}/u, /\p{Script=Cyrillic}/u, /\p{Script=Greek}/u, /\p{Script=Armenian}/u];

/**
 * The words of `text` lowercased (where the script has case) and joined by single hyphens: letters and digits of
 * any script with their marks ("кофейня", "मीठा"), Latin accents folded ("Über" → "uber") and the Latin letters without
 * one spelt out in ASCII (LATIN_LETTERS_SPELT_OUT); anything else separates.
 */
export function hyphenated(text: string): string {
  const dashed = text
    .toLowerCase()
    .normalize("NFKD")
    .replace(INVISIBLE, "")
    .replace(LATIN_ACCENTS, "$1")
    .replace(LATIN_LETTER_SPELT_OUT, (letter) => LATIN_LETTERS_SPELT_OUT[letter]!)
    .replace(LONE_MARKS, "")
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, "-")
    .normalize("NFC");
  return trimOf(dashed.split("-").map(inOneLookalikeScript).map(inLatinIfOnlyLookalikes).join("-").replace(/-{2,}/g, "-"), "-");
}

/**
 * Cyrillic and Greek lower-case letters drawn as a Latin letter is (Unicode's confusables, UTS #39), with that letter.
 * Greek α and κ are left out: "και", a word Greek is full of, would otherwise be spelt in Latin.
 */
const LATIN_LOOKALIKES: Readonly<Record<string, string>> = {
  а: "a",
  е: "e",
  о: "o",
  р: "p",
  с: "c",
  у: "y",
  х: "x",
  і: "i",
  ј: "j",
  ѕ: "s",
  һ: "h",
  ӏ: "l",
  ԁ: "d",
  ԛ: "q",
  ԝ: "w",
  ү: "y",
  ο: "o",
  ν: "v",
  ι: "i",
  υ: "u",
  ρ: "p",
};

/**
 * A word of two letters or more made only of LATIN_LOOKALIKES ("аррӏе", all Cyrillic) reads as the Latin word it
 * passes for, so it is spelt as that word ("apple"): an address that reads as a claimed one then is that one, and gets
 * a number ("apple-2"), as browsers show such a domain in Punycode rather than as the word it mimics.
 */
function inLatinIfOnlyLookalikes(word: string): string {
  const letters = [...word];
  if (letters.length < 2 || !letters.every((letter) => letter in LATIN_LOOKALIKES)) return word;
  return letters.map((letter) => LATIN_LOOKALIKES[letter]).join("");
}

/**
 * A word whose letters mix scripts that pass for one another ("bаkery" with a Cyrillic а, which would publish at an
 * address that reads as "bakery"): the letters of the script most of them are in stay, the others separate ("b-kery").
 */
function inOneLookalikeScript(word: string): string {
  const present = LOOKALIKE_SCRIPTS.filter((script) => script.test(word));
  if (present.length < 2) return word;
  const characters = [...word];
  const scriptOf = (character: string) => present.find((script) => script.test(character));
  const count = (script: RegExp) => characters.filter((character) => scriptOf(character) === script).length;
  const kept = present.reduce((most, script) => (count(script) > count(most) ? script : most));
  return characters.map((character) => ((scriptOf(character) ?? kept) === kept ? character : "-")).join("");
}

/** `hyphenated(text)` in ASCII alone, for a page's file name: words of other scripts separate like punctuation. */
export function asciiHyphenated(text: string): string {
  return trimOf(hyphenated(text).replace(/[^a-z0-9]+/g, "-"), "-");
}

/** Made on first use: a segmenter loads its break rules, which a server that never cuts a long word does without. */
let graphemes: Intl.Segmenter | undefined;

/**
 * A hyphenated slug of at most `max` characters (UTF-16 code units), cut at
 * its last hyphen within them so no word is left half ("upper-riverside",
 * not "upper-rivers"); only a first word longer than `max` is cut inside, as
 * nothing else would fit, and then between two characters as a reader sees
 * them, never between a letter and its vowel sign or inside a surrogate pair.
 */
export function cutSlug(slug: string, max: number): string {
  if (slug.length <= max) return slug;
  const boundary = slug.lastIndexOf("-", max);
  if (boundary > 0) return trimEndOf(slug.slice(0, boundary), "-");
  let end = 0;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  for (const { index, segment } of graphemes.segment(slug)) {
    if (index + segment.length > max) break;
    end = index + segment.length;
  }
  return slug.slice(0, end);
}

/** Derived from the plan id, so re-running `understand` never mints a second project. */
function projectIdFor(planId: string): string {
  return `prj_${createHash("sha256").update(planId).digest("base64url").slice(0, 22)}`;
}
