import type { ChatCompleter } from "../../chat/chat-types.js";
import {
  ALT_TEXT_MAX,
  TONES,
  bookOutlineSchema,
  chapterSchema,
  ebookBriefSchema,
  pageContentSchema,
  siteOutlineSchema,
  websiteBriefSchema,
  type BookOutline,
  type EbookBrief,
  type WebsiteBrief,
} from "../content.js";
import { ART_MOTIFS } from "../website/hero-art.js";
import type { Logger } from "../../observability/logger.js";
import { completeStructured, type StageChat } from "./structured-completion.js";
import type { StageRevision } from "../../engine/stage-work.js";
import type { Writer, WriterContext } from "./writer.js";

const HONESTY =
  "Write every word in the language the goal is written in (an Arabic goal gets an Arabic site, a Chinese goal a Chinese site), " +
  "and give that language's BCP 47 tag wherever a language is asked for. Keep the names the goal gives exactly as written, " +
  'in their own script; where the goal gives no name, use a plain description ("Bakery in Cairo", in the goal\'s language), never an invented brand. ' +
  "Write real, specific copy from the goal. Never invent facts the goal does not give: no addresses, phone numbers, " +
  "e-mail addresses, prices, dates, statistics, awards, customer names or testimonials. Where the goal says nothing, " +
  "write honest general copy that stays true, and never refer to something the site or book does not have (a contact page, " +
  "a map, opening hours, a form) unless the goal gives it. Never write lorem ipsum, placeholders, brackets to fill in or TODO. " +
  "Plain text only: no HTML, no Markdown. Reply with the JSON object only.";

const SITE_SYSTEM = `You write small websites for Project Zero, which turns a plain-language goal into a published site. ${HONESTY}`;
const BOOK_SYSTEM = `You write ebooks for Project Zero, which turns a plain-language goal into a published book. ${HONESTY}`;

/**
 * The writer that asks a language model, through the service's own chat
 * router, for each piece: one call for a brief, one for an outline, one per
 * page or chapter. The router logs its failed upstream attempts to `stageLog`.
 */
export function createUpstreamWriter(completer: ChatCompleter, stageLog: Logger): Writer {
  const chat: StageChat = { completer, requestLog: { log: stageLog } };
  return {
    kind: "upstream",

    websiteBrief: (goal, context) =>
      completeStructured(
        chat,
        {
          name: "website_brief",
          what: "the website brief",
          schema: websiteBriefSchema,
          system: SITE_SYSTEM,
          user:
            `Goal: ${goal}\n\nWrite the brief for this website: its name, tagline, audience, purpose, tone and two to five pages ` +
            `(the first with slug "index"; typical others: about, services, menu, work, programme, faq, contact), ` +
            `and the one call to action, leading to one of those pages.\n\n${altTextAsk("site", "visualAlt")}`,
        },
        context,
      ),

    siteOutline: (goal, brief, context) =>
      completeStructured(
        chat,
        {
          name: "site_outline",
          what: "the site outline",
          schema: siteOutlineSchema,
          system: SITE_SYSTEM,
          user:
            `Goal: ${goal}\n\nBrief:\n${JSON.stringify(brief, null, 2)}\n\nOutline every page of the brief, same slugs in the same order. ` +
            `Each page starts with a "hero" section; then three to six sections using the kinds text, features, list, steps, timeline, faq, cta and contact. ` +
            `Pick each page's kinds for its purpose (a menu or price page: list; an about page: text or timeline; a contact page: contact), ` +
            `so no page repeats the home page's kinds.` +
            revisionNote(context),
        },
        context,
      ),

    reviseWebsiteBrief: (goal, brief, context) =>
      completeStructured(
        chat,
        {
          name: "revised_website_brief",
          what: "the revised website brief",
          schema: websiteBriefSchema,
          system: SITE_SYSTEM,
          user:
            `Goal: ${goal}\n\n${revisionRequest(brief, context)}\n\n` +
            `Write the brief of the new draft: the same fields, with every change asked for that a brief carries (the site's name, tagline, ` +
            `audience, purpose, tone, pages and call to action), and everything else as it was in the previous draft.\n\n${altTextAsk("site", "visualAlt")}`,
        },
        context,
      ),

    page: (goal, brief, outline, slug, context) =>
      completeStructured(
        chat,
        {
          name: "page_content",
          what: `the page "${slug}"`,
          schema: pageContentSchema,
          system: SITE_SYSTEM,
          user:
            `Goal: ${goal}\n\nBrief:\n${JSON.stringify(brief, null, 2)}\n\nOutline of the site:\n${JSON.stringify(outline, null, 2)}\n\n` +
            `Write the page "${slug}" in full, one entry per section of its outline, in order. Use paragraphs for hero, text, cta and contact ` +
            `sections; items (three to six) for features, list, steps, timeline and faq. A link points to another page by its slug, or has an empty label and page.` +
            revisionNote(context),
        },
        context,
      ),

    ebookBrief: (goal, context) =>
      completeStructured(
        chat,
        {
          name: "ebook_brief",
          what: "the ebook brief",
          schema: ebookBriefSchema,
          system: BOOK_SYSTEM,
          user:
            `Goal: ${goal}\n\nWrite the brief for this ebook: title, subtitle, author (only if the goal names one), audience, purpose, tone, language and a blurb.\n\n` +
            altTextAsk("book", "coverAlt"),
        },
        context,
      ),

    reviseEbookBrief: (goal, brief, context) =>
      completeStructured(
        chat,
        {
          name: "revised_ebook_brief",
          what: "the revised ebook brief",
          schema: ebookBriefSchema,
          system: BOOK_SYSTEM,
          user:
            `Goal: ${goal}\n\n${revisionRequest(brief, context)}\n\n` +
            `Write the brief of the new draft: the same fields, with every change asked for that a brief carries (the title, subtitle, ` +
            `author, audience, purpose, tone, language and blurb), and everything else as it was in the previous draft.\n\n${altTextAsk("book", "coverAlt")}`,
        },
        context,
      ),

    bookOutline: (goal, brief, context) =>
      completeStructured(
        chat,
        {
          name: "book_outline",
          what: "the book outline",
          schema: bookOutlineSchema,
          system: BOOK_SYSTEM,
          user:
            `Goal: ${goal}\n\nBrief:\n${JSON.stringify(brief, null, 2)}\n\n` +
            `Outline the chapters of the book (four to ten unless the goal asks otherwise, at most 24), each with a summary and its key points.` +
            revisionNote(context),
        },
        context,
      ),

    chapter: (goal, brief, outline, index, context) =>
      completeStructured(
        chat,
        {
          name: "chapter",
          what: `chapter ${index + 1}`,
          schema: chapterSchema,
          system: BOOK_SYSTEM,
          user: chapterPrompt(goal, brief, outline, index) + revisionNote(context),
        },
        context,
      ),
  };
}

/**
 * The request for alt text of the picture generated for a site (its hero and
 * link preview) or a book (its cover). The model cannot see the picture, so
 * it is told what each tone draws; it describes that in the goal's language.
 */
function altTextAsk(of: "site" | "book", field: "visualAlt" | "coverAlt"): string {
  const motifs = TONES.map((tone) => `${tone}: ${ART_MOTIFS[tone].charAt(0).toLowerCase()}${ART_MOTIFS[tone].slice(1)}`).join("; ");
  const what =
    of === "site"
      ? "the pattern and its colours, without the site's name (the page adds it where the picture shows it)"
      : "the pattern and its colours, with the title (and the author, if any) set in large type over it";
  return (
    `Also write "${field}", the alt text of the ${of === "site" ? "site's generated picture" : "book's generated cover"}, for people who cannot see it. ` +
    `The picture is drawn from the tone you chose (${motifs}). In one plain sentence of at most ${ALT_TEXT_MAX} characters, ` +
    `in the language the goal is written in, say what it shows: ${what}. Do not begin with "image of" or "picture of".`
  );
}

/** Most characters of earlier revisions' feedback repeated in a prompt; older requests live on in the previous draft's outline. */
const EARLIER_FEEDBACK_BUDGET = 8000;

/**
 * What a revision asks, as its prompts tell it: the person's feedback, that
 * of the revisions before it (oldest first, which the previous draft already
 * made), the first draft's brief and the previous draft's outline (with the
 * brief that draft was written from), so the model changes what was asked
 * and keeps the rest, earlier changes included.
 */
function revisionRequest(firstBrief: WebsiteBrief | EbookBrief, context: WriterContext): string {
  const revision = context.revision!;
  const first = (revision.earlier ?? []).length === 0;
  return (
    `${feedbackSoFar(revision)}\n\n${first ? "Brief of the previous draft" : "Brief of the first draft, before any of these changes"}:\n` +
    `${JSON.stringify(firstBrief, null, 2)}\n\nOutline of the previous draft:\n${JSON.stringify(revision.draft, null, 2)}`
  );
}

/** The revision's number and feedback, after the earlier revisions' (oldest first, as many as fit EARLIER_FEEDBACK_BUDGET). */
function feedbackSoFar(revision: StageRevision): string {
  const earlier = revision.earlier ?? [];
  const kept: string[] = [];
  let budget = EARLIER_FEEDBACK_BUDGET;
  for (const feedback of [...earlier].reverse()) {
    if (feedback.length > budget) break;
    budget -= feedback.length;
    kept.unshift(feedback);
  }
  const omitted = earlier.length - kept.length;
  const history =
    earlier.length === 0
      ? ""
      : `Earlier reviews asked for these changes, oldest first, and the previous draft made them; keep them unless the new feedback says otherwise:\n` +
        (omitted > 0 ? `(${omitted} older request${omitted === 1 ? " is" : "s are"} not repeated here; the previous draft's outline carries them.)\n` : "") +
        kept.map((feedback, i) => `${omitted + i + 1}. """\n${feedback}\n"""\n`).join("") +
        "\n";
  return (
    `This is revision ${revision.number} of an earlier draft. ${history}` +
    `The person reviewed ${earlier.length === 0 ? "that" : "the previous"} draft and asked for these changes:\n"""\n${revision.feedback}\n"""`
  );
}

/**
 * What the outline, page and chapter prompts of a revision add to theirs:
 * the feedback, the earlier feedback and the previous draft's outline. The
 * brief those prompts give is already the revised one (`reviseWebsiteBrief`,
 * `reviseEbookBrief`). Empty for a first draft.
 */
export function revisionNote(context: WriterContext): string {
  const revision = context.revision;
  if (!revision) return "";
  return (
    `\n\n${feedbackSoFar(revision)}\n\nThe brief above is this draft's: it already makes the changes a brief carries.\n\n` +
    `Outline of the previous draft:\n${JSON.stringify(revision.draft, null, 2)}\n\n` +
    `Change what the person asked for, and keep everything else as it was in the previous draft.`
  );
}

function chapterPrompt(goal: string, brief: EbookBrief, outline: BookOutline, index: number): string {
  const chapter = outline.chapters[index]!;
  const contents = outline.chapters.map((c, i) => `${i + 1}. ${c.title}`).join("\n");
  return (
    `Goal: ${goal}\n\nBrief:\n${JSON.stringify(brief, null, 2)}\n\nContents:\n${contents}\n\n` +
    `Write chapter ${index + 1}, "${chapter.title}", in full.\nIt covers: ${chapter.summary}\nKey points:\n` +
    chapter.keyPoints.map((p) => `- ${p}`).join("\n") +
    `\n\nUse a few sections, each with several paragraphs. Do not repeat the chapter title as a section heading.`
  );
}
