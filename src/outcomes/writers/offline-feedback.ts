import { TONES, type Tone, type WebsiteBrief } from "../content.js";
import { describeArt } from "../website/hero-art.js";
import { givesName, quotations, withQuotationMarkers, type Quotation } from "./goal-facts.js";

/** What the offline writer could read in a person's feedback on a draft. */
export interface FeedbackReading {
  /** A new name, given in quotes as a goal gives one (goal-facts.ts `givesName`). */
  name?: string;
  tone?: Tone;
  /** Page slugs asked to be dropped. */
  drop: string[];
  /** The parts of the feedback it could not apply, in the person's words. */
  unread: string[];
}

/** Words that ask for a tone, beside the tone names themselves. */
const TONE_WORDS: Record<string, Tone> = {
  friendly: "warm",
  warmer: "warm",
  cosy: "warm",
  cozy: "warm",
  formal: "professional",
  serious: "professional",
  businesslike: "professional",
  fun: "playful",
  funny: "playful",
  cheerful: "playful",
  relaxed: "calm",
  quiet: "calm",
  calmer: "calm",
  gentle: "calm",
  bolder: "bold",
  punchy: "bold",
  strong: "bold",
};

/** Where a quotation stood in the feedback (withQuotationMarkers): NUL, which readFeedback takes out of the feedback first, around its number. */
const QUOTATION_MARKER = /\u0000(\d+)\u0000/gu;
/**
 * The end of a sentence in any script (".", "!", "?", "。", "؟", "।"), a line break, or a semicolon (";", "؛", "；").
 * A full stop between two digits is inside a number ("2.5"), as in CLAUSE_END.
 */
const SENTENCE_END = /(?:(?!(?<=\p{Nd})\.\p{Nd})[\p{Sentence_Terminal}\n;\u037E\u061B\uFF1B])+/u;
/**
 * The end of a clause inside a sentence: the other punctuation that ends one in any script (",", "،", "、", "，"),
 * "and" and "but". A colon ends none: it introduces what follows ("call it: "Crumbs""); nor does a comma or full
 * stop between two digits, inside a number ("£1,299", "2,5 kg").
 */
const CLAUSE_END = /(?![:\uFE55\uFF1A]|(?<=\p{Nd})[.,]\p{Nd})\p{Terminal_Punctuation}|\band\b|\bbut\b/iu;
/** The English words that ask for a new name ("call it …", "change the name of the site to … please"): read with the name. */
const NAMING_WORDS = new Set(
  (
    "a as be brand business call called can change could from go i i'd instead into it its let let's lets like make " +
    "my name named new of our please prefer rename retitle shop should site the title to us use want we website would you"
  ).split(" "),
);
const DROP = /\b(?:drop|remove|delete|lose|without|no)\s+(?:the\s+|an?\s+)?([a-z][a-z-]*)(?:\s+pages?)?\b/iu;
/** A clause that is a page and nothing more ("the contact page", "about"): the next of a list after a drop verb. */
const LISTED_PAGE = /^(?:the\s+|an?\s+)?([a-z][a-z-]*)(?:\s+pages?)?$/iu;

/**
 * Reads feedback clause by clause (sentences and clauses as any script ends
 * them, and `and`; quotes kept whole): a quoted name, a tone word, a page to
 * drop. A name is quoted as in a goal (goal-facts.ts `quotations`): double
 * quotation marks of any script, single ones outside a word. After a drop
 * verb, the clauses that are only a page ("drop the about page and the
 * contact page", "remove the menu and about pages") are dropped too, to the
 * end of the sentence. A clause that is none of these is left for the
 * warning, so nothing asked is silently lost; so is a clause that gives a
 * name with words beside it other than English ones asking for it (in
 * another language "and make it calmer" may be among them), the name shown
 * as "…". Deterministic, like the rest of the offline writer.
 */
export function readFeedback(feedback: string, pageSlugs: readonly string[]): FeedbackReading {
  const reading: FeedbackReading = { drop: [], unread: [] };
  const text = feedback.replaceAll("\u0000", "");
  const quotes = quotations(text);
  const clauses: { clause: string; dropSlug?: string }[] = [];
  for (const sentence of withQuotationMarkers(text, quotes).split(SENTENCE_END)) {
    let listingDrops = false;
    for (const part of sentence.split(CLAUSE_END)) {
      const clause = part.trim();
      if (clause.length === 0) continue;
      const drop: RegExpExecArray | null = DROP.exec(clause) ?? (listingDrops ? LISTED_PAGE.exec(clause) : null);
      listingDrops = drop !== null;
      clauses.push({ clause, dropSlug: drop?.[1]?.toLowerCase() });
    }
  }
  for (const { clause, dropSlug } of clauses) {
    const quoted = [...clause.matchAll(QUOTATION_MARKER)].map((marker) => quotes[Number(marker[1])]!);
    const naming = reading.name === undefined ? quoted.find(givesName) : undefined;
    if (naming) reading.name = naming.name;
    let toneOrDrop = false;
    for (const word of clause.toLowerCase().split(/[^\p{L}-]+/u)) {
      const tone = (TONES as readonly string[]).includes(word) ? (word as Tone) : TONE_WORDS[word];
      if (tone) {
        reading.tone = tone;
        toneOrDrop = true;
      }
    }
    if (dropSlug && dropSlug !== "index" && pageSlugs.includes(dropSlug)) {
      if (!reading.drop.includes(dropSlug)) reading.drop.push(dropSlug);
      toneOrDrop = true;
    }
    if (!naming && !toneOrDrop) reading.unread.push(unmasked(clause, quotes));
    else if (naming && !toneOrDrop && !onlyAsksForName(clause)) reading.unread.push(unmasked(clause, quotes, naming));
  }
  return reading;
}

/** A masked clause in the person's words again: its quotations as written, `applied` (a name it gave) as "…" in its marks. */
function unmasked(clause: string, quotes: readonly Quotation[], applied?: Quotation): string {
  return clause.replace(QUOTATION_MARKER, (_marker, i: string) => {
    const quote = quotes[Number(i)]!;
    return quote === applied ? `${quote.text.at(0)}…${quote.text.at(-1)}` : quote.text;
  });
}

/** True when every word of a masked clause outside its quotations is one asking for a name (NAMING_WORDS). */
function onlyAsksForName(clause: string): boolean {
  const words = clause
    .replace(QUOTATION_MARKER, " ")
    .toLowerCase()
    .replaceAll("\u2019", "'")
    .split(/[^\p{L}\p{M}\p{N}']+/u);
  return words.every((word) => word === "" || NAMING_WORDS.has(word));
}

/** The brief with what the feedback asked for: a new name and tone, fewer pages (never the home page), and its picture described anew. */
export function reviseBrief(brief: WebsiteBrief, reading: FeedbackReading): WebsiteBrief {
  const pages = brief.pages.filter((page, i) => i === 0 || !reading.drop.includes(page.slug));
  const name = reading.name ?? brief.name;
  const tone = reading.tone ?? brief.tone;
  return { ...brief, name, tone, pages, visualAlt: describeArt(tone, brief.language, name) };
}

/** Every string in `value` with `from` written as `to`: the new name throughout the copy. */
export function renamed<T>(value: T, from: string, to: string): T {
  if (from === to || from.length === 0) return value;
  if (typeof value === "string") return value.split(from).join(to) as T;
  if (Array.isArray(value)) return value.map((item) => renamed(item, from, to)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renamed(item, from, to)])) as T;
  }
  return value;
}

/** The sentence added to the offline warning when part of the feedback (`unread`, as `FeedbackReading` has it) could not be applied. */
export function unreadFeedbackWarning(unread: readonly string[]): string | undefined {
  if (unread.length === 0) return undefined;
  return `The offline writer could not apply this part of your feedback: ${unread.map((part) => `"${part}"`).join("; ")}. It applies a new name in quotes, a tone (warm, professional, playful, calm, bold) and pages to drop; an upstream model applies any feedback.`;
}
