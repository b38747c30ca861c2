import type { Behavior } from "../../chat/support/fake-upstream.js";
import { completion, reply } from "../../chat/support/fake-upstream.js";

/**
 * What a well-behaved model would answer to each of the writers' structured
 * requests, keyed by `response_format.json_schema.name`. Plausible content,
 * including one paragraph that tries to smuggle a script into the page.
 */
export const SCRIPT_PARAGRAPH = 'Try our <script>document.title="pwned"</script> cakes & pies.';

export function answerFor(schemaName: string, body: Record<string, unknown>): unknown {
  const prompt = JSON.stringify(body.messages ?? "");
  switch (schemaName) {
    case "website_brief":
      return {
        name: "Harbour Lights Kayaks",
        tagline: "Guided sea kayaking trips for beginners",
        audience: "Visitors and locals who have never paddled before.",
        purpose: "Explain the trips and get people to book one.",
        tone: "bold",
        language: "en",
        pages: [
          { slug: "index", title: "Home", purpose: "Introduce the trips" },
          { slug: "Trips", title: "Trips", purpose: "Describe each trip" },
          { slug: "contact", title: "Contact", purpose: "How to book" },
        ],
        callToAction: { label: "Book a trip", page: "contact" },
      };
    case "site_outline":
      return {
        pages: [
          page("index", "Home", ["hero", "features", "faq", "cta"]),
          page("trips", "Trips", ["hero", "steps", "text"]),
          page("contact", "Contact", ["hero", "contact"]),
        ],
      };
    case "page_content": {
      const slug = /Write the page \\"([a-z0-9-]+)\\"/.exec(prompt)?.[1] ?? "index";
      return {
        slug,
        sections: [
          {
            kind: "hero",
            heading: slug === "index" ? "Harbour Lights Kayaks" : `About ${slug}`,
            paragraphs: ["Calm water, patient guides."],
            items: [],
            link: { label: "Book a trip", page: "contact" },
          },
          {
            kind: "features",
            heading: "Why paddle with us",
            paragraphs: [SCRIPT_PARAGRAPH],
            items: [
              { title: "Small groups", text: "Never more than eight boats." },
              { title: "All gear included", text: "Boats, paddles and jackets." },
            ],
            link: { label: "", page: "" },
          },
          { kind: "faq", heading: "Questions", paragraphs: [], items: [{ title: "Do I need experience?", text: "No." }], link: { label: "", page: "" } },
        ],
      };
    }
    case "ebook_brief":
      return {
        title: "The Patient Gardener",
        subtitle: "Growing vegetables on a small balcony",
        author: "",
        audience: "City dwellers with a balcony and no garden.",
        purpose: "Grow food in containers through the year.",
        tone: "calm",
        language: "en",
        description: "A practical guide to container vegetables. It covers soil, light, water and a calendar of sowing.",
      };
    case "book_outline":
      return {
        chapters: [
          { title: "Light & Space", summary: "Reading the balcony.", keyPoints: ["Sun hours", "Wind"] },
          { title: "Soil and Containers", summary: "What to grow in.", keyPoints: ["Pots", "Compost"] },
          { title: "A Year of Sowing", summary: "The calendar.", keyPoints: ["Spring", "Autumn"] },
        ],
      };
    case "revised_website_brief":
    case "revised_ebook_brief": {
      // A model that follows every `Call it "…"` and "calmer" its prompt's feedback holds, and keeps the rest of the brief.
      const first = answerFor(schemaName === "revised_website_brief" ? "website_brief" : "ebook_brief", body) as Record<string, unknown>;
      const name = [...prompt.matchAll(/Call it \\"(.+?)\\"/g)].at(-1)?.[1];
      const revised: Record<string, unknown> = { ...first, ...(prompt.includes("calmer") ? { tone: "calm" } : {}) };
      if (name) revised[schemaName === "revised_website_brief" ? "name" : "title"] = name;
      return revised;
    }
    case "chapter": {
      const n = /Write chapter (\d+)/.exec(prompt)?.[1] ?? "1";
      return {
        title: ["Light & Space", "Soil and Containers", "A Year of Sowing"][Number(n) - 1] ?? `Chapter ${n}`,
        sections: [
          {
            heading: "",
            paragraphs: [`Chapter ${n} begins with a question: what does your balcony give you?`, "Watch it for a day <b>before</b> buying anything."],
          },
          { heading: "In practice", paragraphs: ["Note the hours of direct sun.", "Note where the wind comes from."] },
        ],
      };
    }
    default:
      throw new Error(`no scripted answer for schema ${schemaName}`);
  }
}

function page(slug: string, title: string, kinds: string[]) {
  return {
    slug,
    title,
    navLabel: title,
    description: `${title} of Harbour Lights Kayaks.`,
    sections: kinds.map((kind, i) => ({ kind, heading: `${title} ${i + 1}`, summary: "What it says." })),
  };
}

/** The schema name of a writer's request. */
export function schemaNameOf(body: Record<string, unknown>): string {
  const format = body.response_format as { json_schema?: { name?: string } } | undefined;
  return format?.json_schema?.name ?? "";
}

/** A fake-upstream behavior answering every writer request well. */
export const writerModel: Behavior = (exchange) => reply(completion(JSON.stringify(answerFor(schemaNameOf(exchange.body), exchange.body))))(exchange);

/** Answers with this raw content (e.g. malformed JSON). */
export const rawAnswer = (content: string): Behavior => reply(completion(content));
