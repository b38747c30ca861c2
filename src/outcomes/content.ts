import type { Infer, Schema } from "./json-schema.js";

/**
 * The shapes writers produce and stages hand each other through `previous`.
 * Each is a JSON Schema (the one the model is asked to follow, and the one
 * every answer and every stored output is validated against) and the
 * TypeScript type derived from it.
 */

const text = (description: string, maxLength = 600, minLength = 1) => ({ type: "string", minLength, maxLength, description }) as const;

/** How a site or book should sound; also picks the site's theme. */
export const TONES = ["warm", "professional", "playful", "calm", "bold"] as const;
export type Tone = (typeof TONES)[number];

/** The kinds of section a page can hold; the renderer has a layout for each. */
export const SECTION_KINDS = ["hero", "text", "features", "list", "steps", "timeline", "faq", "cta", "contact"] as const;

/** Most characters of a generated picture's alt text: one sentence a screen reader reads in one go. */
export const ALT_TEXT_MAX = 150;

/**
 * Alt text for a generated picture. Optional, so briefs stored before it
 * existed still validate, and best effort: an answer that leaves it out, or
 * gives one too long or of the wrong kind, is settled (cut or dropped) and
 * the renderer falls back (see `hero-art.ts`), never a failed plan.
 */
const altText = (description: string) => ({ type: "string", maxLength: ALT_TEXT_MAX, description }) as const;

const pageSlug = {
  type: "string",
  minLength: 1,
  maxLength: 40,
  description: 'File name of the page without extension: "index" for the home page, else lowercase words joined by hyphens',
} as const;

export const websiteBriefSchema = {
  type: "object",
  properties: {
    name: text("The site's name: the business, project, event or person it is for", 80),
    tagline: text("One short line saying what it is and for whom", 140),
    audience: text("Who the site is for, in a sentence", 300),
    purpose: text("What a visitor should understand and do, in a sentence or two", 400),
    tone: { type: "string", enum: TONES, description: "The voice of the copy; also picks the visual theme" },
    language: text('BCP 47 language tag of the copy, e.g. "en"', 20, 2),
    pages: {
      type: "array",
      minItems: 1,
      maxItems: 6,
      description: "The pages of the site; the first is the home page",
      items: {
        type: "object",
        properties: { slug: pageSlug, title: text("Page title", 60), purpose: text("What this page is for", 300) },
        required: ["slug", "title", "purpose"],
        additionalProperties: false,
      },
    },
    callToAction: {
      type: "object",
      description: "The one thing a visitor should do",
      properties: { label: text("Button label, a few words", 40), page: { ...pageSlug, description: "Slug of the page the button leads to" } },
      required: ["label", "page"],
      additionalProperties: false,
    },
    visualAlt: altText(
      `Alt text for the site's generated picture: one plain sentence, in the site's language, at most ${ALT_TEXT_MAX} characters, saying what it shows (its pattern and colours) without the site's name; "" if unsure`,
    ),
  },
  required: ["name", "tagline", "audience", "purpose", "tone", "language", "pages", "callToAction"],
  additionalProperties: false,
} as const satisfies Schema;
export type WebsiteBrief = Infer<typeof websiteBriefSchema>;

export const siteOutlineSchema = {
  type: "object",
  properties: {
    pages: {
      type: "array",
      minItems: 1,
      maxItems: 6,
      items: {
        type: "object",
        properties: {
          slug: pageSlug,
          title: text("Page title", 60),
          navLabel: text("Label in the navigation, one or two words", 24),
          description: text("Meta description of the page, one sentence", 200),
          sections: {
            type: "array",
            minItems: 1,
            maxItems: 8,
            description: "Sections in order; the first is the page's hero",
            items: {
              type: "object",
              properties: {
                kind: { type: "string", enum: SECTION_KINDS },
                heading: text("Section heading", 90),
                summary: text("What the section says, for the writer", 400),
              },
              required: ["kind", "heading", "summary"],
              additionalProperties: false,
            },
          },
        },
        required: ["slug", "title", "navLabel", "description", "sections"],
        additionalProperties: false,
      },
    },
  },
  required: ["pages"],
  additionalProperties: false,
} as const satisfies Schema;
export type SiteOutline = Infer<typeof siteOutlineSchema>;

export const pageContentSchema = {
  type: "object",
  properties: {
    slug: pageSlug,
    sections: {
      type: "array",
      minItems: 1,
      maxItems: 8,
      items: {
        type: "object",
        properties: {
          kind: { type: "string", enum: SECTION_KINDS },
          heading: text("Section heading", 90),
          paragraphs: { type: "array", maxItems: 6, items: text("A paragraph of plain text", 1200) },
          items: {
            type: "array",
            maxItems: 8,
            description: "Cards, list lines, steps, timeline entries or questions, for features, list, steps, timeline and faq sections; else empty",
            items: {
              type: "object",
              properties: { title: text("Item title or question", 120), text: text("Item text or answer", 600) },
              required: ["title", "text"],
              additionalProperties: false,
            },
          },
          link: {
            type: "object",
            description: 'A button to another page of the site; empty label and page "" for none',
            properties: {
              label: { type: "string", maxLength: 40 },
              page: { type: "string", maxLength: 40 },
            },
            required: ["label", "page"],
            additionalProperties: false,
          },
        },
        required: ["kind", "heading", "paragraphs", "items", "link"],
        additionalProperties: false,
      },
    },
  },
  required: ["slug", "sections"],
  additionalProperties: false,
} as const satisfies Schema;
export type PageContent = Infer<typeof pageContentSchema>;
export type Section = PageContent["sections"][number];

/** What the website's `write` stage hands to `build`. */
export const siteContentSchema = {
  type: "object",
  properties: { pages: { type: "array", minItems: 1, maxItems: 6, items: pageContentSchema } },
  required: ["pages"],
  additionalProperties: false,
} as const satisfies Schema;

export const ebookBriefSchema = {
  type: "object",
  properties: {
    title: text("The book's title", 120),
    subtitle: text("A subtitle, one line", 160),
    author: { type: "string", maxLength: 120, description: 'Author named in the goal, else ""' },
    audience: text("Who the book is for, in a sentence", 300),
    purpose: text("What a reader gets from it, in a sentence or two", 400),
    tone: { type: "string", enum: TONES },
    language: text('BCP 47 language tag, e.g. "en"', 20, 2),
    description: text("A blurb for the back cover, two to four sentences", 800),
    coverAlt: altText(
      `Alt text for the book's generated cover: one plain sentence, in the book's language, at most ${ALT_TEXT_MAX} characters, saying what it shows (its pattern and colours, the title set over it); "" if unsure`,
    ),
  },
  required: ["title", "subtitle", "author", "audience", "purpose", "tone", "language", "description"],
  additionalProperties: false,
} as const satisfies Schema;
export type EbookBrief = Infer<typeof ebookBriefSchema>;

export const bookOutlineSchema = {
  type: "object",
  properties: {
    chapters: {
      type: "array",
      minItems: 1,
      maxItems: 24,
      items: {
        type: "object",
        properties: {
          title: text("Chapter title", 120),
          summary: text("What the chapter covers, for the writer", 600),
          keyPoints: { type: "array", minItems: 1, maxItems: 8, items: text("A point the chapter makes", 200) },
        },
        required: ["title", "summary", "keyPoints"],
        additionalProperties: false,
      },
    },
  },
  required: ["chapters"],
  additionalProperties: false,
} as const satisfies Schema;
export type BookOutline = Infer<typeof bookOutlineSchema>;

export const chapterSchema = {
  type: "object",
  properties: {
    title: text("Chapter title", 120),
    sections: {
      type: "array",
      minItems: 1,
      maxItems: 12,
      items: {
        type: "object",
        properties: {
          heading: { type: "string", maxLength: 120, description: 'Section heading; "" for an untitled opening section' },
          paragraphs: { type: "array", minItems: 1, maxItems: 20, items: text("A paragraph of plain text", 3000) },
        },
        required: ["heading", "paragraphs"],
        additionalProperties: false,
      },
    },
  },
  required: ["title", "sections"],
  additionalProperties: false,
} as const satisfies Schema;
export type Chapter = Infer<typeof chapterSchema>;

/** What the ebook's `write` stage hands to `assemble`. */
export const bookContentSchema = {
  type: "object",
  properties: { chapters: { type: "array", minItems: 1, maxItems: 24, items: chapterSchema } },
  required: ["chapters"],
  additionalProperties: false,
} as const satisfies Schema;
export type BookContent = Infer<typeof bookContentSchema>;
