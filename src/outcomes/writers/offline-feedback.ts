import { TONES, type Tone, type WebsiteBrief } from "../content.js";
import { describeArt } from "../website/hero-art.js";
import { visibleName } from "./goal-facts.js";

/** What the offline writer could read in a person's feedback on a draft. */
export interface FeedbackReading {
  /** A new name, given in quotes, with something visible in it. */
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

const QUOTED = /(?<!\p{L})["“„«‘']([^"“”„«»‘’']{1,80})["”»’']/u;
const DROP = /\b(?:drop|remove|delete|lose|without|no)\s+(?:the\s+|an?\s+)?([a-z][a-z-]*)(?:\s+pages?)?\b/iu;
/** A clause that is a page and nothing more ("the contact page", "about"): the next of a list after a drop verb. */
const LISTED_PAGE = /^(?:the\s+|an?\s+)?([a-z][a-z-]*)(?:\s+pages?)?$/iu;

/**
 * Reads feedback clause by clause (sentences, `;`, `,` and `and`, quotes
 * kept whole): a quoted name, a tone word, a page to drop. After a drop verb,
 * the clauses that are only a page ("drop the about page and the contact
 * page", "remove the menu and about pages") are dropped too, to the end of
 * the sentence. A clause that is none of these is left for the warning, so
 * nothing asked is silently lost. Deterministic, like the rest of the
 * offline writer.
 */
export function readFeedback(feedback: string, pageSlugs: readonly string[]): FeedbackReading {
  const reading: FeedbackReading = { drop: [], unread: [] };
  const quotes: string[] = [];
  const masked = feedback.replace(new RegExp(QUOTED.source, "gu"), (_all, inner: string) => `\u0000${quotes.push(inner) - 1}\u0000`);
  const clauses: { clause: string; dropSlug?: string }[] = [];
  for (const sentence of masked.split(/[.;!?\n]+/u)) {
    let listingDrops = false;
    for (const part of sentence.split(/,|\band\b|\bbut\b/iu)) {
      const clause = part.trim();
      if (clause.length === 0) continue;
      const drop: RegExpExecArray | null = DROP.exec(clause) ?? (listingDrops ? LISTED_PAGE.exec(clause) : null);
      listingDrops = drop !== null;
      clauses.push({ clause, dropSlug: drop?.[1]?.toLowerCase() });
    }
  }
  for (const { clause, dropSlug } of clauses) {
    const original = clause.replace(/\u0000(\d+)\u0000/gu, (_all, i: string) => `"${quotes[Number(i)]}"`);
    let applied = false;
    const quote = /\u0000(\d+)\u0000/u.exec(clause);
    if (quote && reading.name === undefined) {
      const name = visibleName(quotes[Number(quote[1])]!);
      if (name !== undefined) {
        reading.name = name;
        applied = true;
      }
    }
    for (const word of clause.toLowerCase().split(/[^\p{L}-]+/u)) {
      const tone = (TONES as readonly string[]).includes(word) ? (word as Tone) : TONE_WORDS[word];
      if (tone) {
        reading.tone = tone;
        applied = true;
      }
    }
    if (dropSlug && dropSlug !== "index" && pageSlugs.includes(dropSlug)) {
      if (!reading.drop.includes(dropSlug)) reading.drop.push(dropSlug);
      applied = true;
    }
    if (!applied) reading.unread.push(original);
  }
  return reading;
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
