import type { StageRevision } from "../../engine/stage-work.js";
import { languageName } from "./goal-language.js";
import type { BookOutline, Chapter, EbookBrief, PageContent, SiteOutline, WebsiteBrief } from "../content.js";

/** Which writer produced a plan's content; recorded by `understand` so later stages use the same one. */
export type WriterKind = "upstream" | "offline";

/** Per-call context: whose plan it is (for the chat pool) and when to stop. */
export interface WriterContext {
  accountId: string;
  signal: AbortSignal;
  /** Set when writing a revision: the person's feedback and the draft it revises. */
  revision?: StageRevision;
}

/**
 * Produces the content of websites and ebooks. Stages call a writer for the
 * words and do the rest (normalising, rendering, packaging) themselves, so
 * both writers feed the same builders. Failures are StageFailures.
 */
export interface Writer {
  readonly kind: WriterKind;
  websiteBrief(goal: string, context: WriterContext): Promise<WebsiteBrief>;
  siteOutline(goal: string, brief: WebsiteBrief, context: WriterContext): Promise<SiteOutline>;
  /** One page, given the whole outline so the page can link to its siblings. */
  page(goal: string, brief: WebsiteBrief, outline: SiteOutline, slug: string, context: WriterContext): Promise<PageContent>;
  /**
   * A revision's brief (`context.revision`): `brief`, the first draft's,
   * with what the feedback changes (a new name, tone, pages), the rest kept.
   * The offline writer has none: its stages apply what it reads in the
   * feedback themselves (offline-feedback.ts).
   */
  reviseWebsiteBrief?(goal: string, brief: WebsiteBrief, context: WriterContext): Promise<WebsiteBrief>;
  ebookBrief(goal: string, context: WriterContext): Promise<EbookBrief>;
  /** As `reviseWebsiteBrief`, for a book. */
  reviseEbookBrief?(goal: string, brief: EbookBrief, context: WriterContext): Promise<EbookBrief>;
  bookOutline(goal: string, brief: EbookBrief, context: WriterContext): Promise<BookOutline>;
  /** One chapter, by index into the outline. */
  chapter(goal: string, brief: EbookBrief, outline: BookOutline, index: number, context: WriterContext): Promise<Chapter>;
}

/** The warning a plan carries when the offline writer wrote it (SPEC.md: `warning` on a degraded result). */
export const OFFLINE_WARNING =
  "Written offline without a language model: the copy is derived from the goal alone, with honest generic wording where the goal said nothing. Configure an upstream model for tailored writing.";

/** The languages the offline writer has phrasing for (and reads goals in). */
export const OFFLINE_LANGUAGES: readonly string[] = ["en"];

/** The language a writer's own words are in: the goal's, except from the offline writer where it has no phrasing for it (English). */
export function copyLanguage(kind: WriterKind, language: string): string {
  return kind === "offline" && !OFFLINE_LANGUAGES.includes(language) ? "en" : language;
}

/**
 * What the offline writer calls a site whose goal gives no name it can read
 * (one in a language it cannot read that quotes none, or "Make me a
 * website"): it says there is no name yet rather than pass off a word the
 * goal did not use as one. The warning says how to give it one.
 */
export const UNNAMED_SITE = "Untitled site";

/** The offline warning for a site in `language` called `name`, saying so when its copy is English instead or it has no name yet. */
export function offlineWarning(language: string, name?: string): string {
  const unnamed =
    name === UNNAMED_SITE
      ? ` The goal gives no name the offline writer can read, so the site is called "${UNNAMED_SITE}": ask for a revision that gives the name in quotes (Call it "…") to name it.`
      : "";
  if (OFFLINE_LANGUAGES.includes(language)) return `${OFFLINE_WARNING}${unnamed}`;
  const called = languageName(language);
  return `${OFFLINE_WARNING} The copy is in English: the offline writer has no phrasing for ${called}, so only the names the goal quoted are in ${called}. An upstream model writes the whole site in ${called}.${unnamed}`;
}
