import type { JsonValue } from "@bufbuild/protobuf";
import { StageFailure, type StageRevision } from "../../engine/stage-work.js";
import { pageContentSchema, siteOutlineSchema, websiteBriefSchema, type PageContent, type Section, type SiteOutline, type WebsiteBrief } from "../content.js";
import { fitToSchema, validate } from "../json-schema.js";
import { endSentence } from "../../strings.js";
import { readGoal, sentenceCase, type GoalFacts } from "./goal-facts.js";
import { detectGoalLanguage } from "./goal-language.js";
import { pickProfile, say, UNREAD_PROFILE, type Profile, type ProfileWords } from "./offline-profiles.js";
import { readFeedback, renamed } from "./offline-feedback.js";
import { describeArt } from "../website/hero-art.js";
import { OFFLINE_LANGUAGES, UNNAMED_SITE, type Writer } from "./writer.js";

type SectionPlan = Omit<Section, "kind"> & { kind: Section["kind"]; summary: string };
interface PagePlan {
  slug: string;
  title: string;
  navLabel: string;
  description: string;
  sections: SectionPlan[];
}
type OutlinePage = SiteOutline["pages"][number];
interface ComposedSite {
  brief: WebsiteBrief;
  pages: PagePlan[];
  facts: GoalFacts;
  profile: Profile;
}

/**
 * The writer that needs no upstream: it reads the goal (name, subject,
 * place, offerings, requested features, audience, contact details) and
 * composes a four-page site from copy suited to the kind of thing the goal
 * describes. Deterministic, so re-running a stage gives the same words.
 * Each stage builds on what the stages before it stored (see `followBrief`),
 * so a version that reads the goal differently continues the plan.
 * Websites only: an ebook cannot honestly be written without a model.
 */
export function createOfflineWriter(): Writer {
  const noBooks = async (): Promise<never> => {
    throw new StageFailure("outcome_unavailable", "Ebooks need a language model, and this service has no upstream model configured.");
  };
  return {
    kind: "offline",
    // Every answer is fitted to its stage's schema: the words are built from a goal of any length.
    websiteBrief: async (goal) => fitToSchema(websiteBriefSchema, (await siteFor(goal)).brief),
    siteOutline: async (goal, brief, context) =>
      fitToSchema(siteOutlineSchema, {
        pages: followBrief(await siteFor(goal), brief, context.revision).map((p) => ({
          slug: p.slug,
          title: p.title,
          navLabel: p.navLabel,
          description: p.description,
          sections: p.sections.map((s) => ({ kind: s.kind, heading: s.heading, summary: s.summary })),
        })),
      } satisfies SiteOutline),
    page: async (goal, brief, outline, slug) => {
      const composed = composedPages(await siteFor(goal), brief).find((p) => p.slug === slug);
      const outlined = outline.pages.find((p) => p.slug === slug);
      // A page this reading of the goal lacks (another version stored the outline) is written from the outline.
      const sections = composed?.sections.map(({ summary: _summary, ...section }) => section) ?? (outlined && writtenFromOutline(outlined));
      if (!sections) throw new StageFailure("internal", `The outline has no page "${slug}" to write.`);
      return fitToSchema(pageContentSchema, { slug, sections } satisfies PageContent);
    },
    ebookBrief: noBooks,
    bookOutline: noBooks,
    chapter: noBooks,
  };
}

/**
 * The outline's pages: the brief's, in its order, with its name throughout
 * (a revision's new name, fewer pages). Each is the composed page, or, where
 * this reading of the goal has no such page (the brief was stored by a
 * version that read the goal differently), the draft's page being revised,
 * else one written from the brief's own entry: what earlier stages stored
 * is built on, never dropped.
 */
function followBrief(site: ComposedSite, brief: WebsiteBrief, revision?: StageRevision): OutlinePage[] {
  const composed = composedPages(site, brief);
  const drafted = revision ? draftPages(revision.draft) : [];
  return brief.pages.map(
    (entry) =>
      composed.find((p) => p.slug === entry.slug) ??
      withName(
        drafted.find((p) => p.slug === entry.slug),
        revision ? draftName(revision, brief, site.brief.name) : brief.name,
        brief.name,
      ) ??
      withName(fromBriefEntry(entry), site.brief.name, brief.name),
  );
}

/** The composed pages the brief lists, with its name throughout. */
function composedPages(site: ComposedSite, brief: WebsiteBrief): PagePlan[] {
  const wanted = new Set(brief.pages.map((p) => p.slug));
  return withName(
    site.pages.filter((p) => wanted.has(p.slug)),
    site.brief.name,
    brief.name,
  );
}

/** The pages of the draft a revision revises, as its outline stage stored them; none it cannot read. */
function draftPages(draft: JsonValue | null): OutlinePage[] {
  const pages = typeof draft === "object" && draft !== null && !Array.isArray(draft) ? draft.pages : undefined;
  return Array.isArray(pages)
    ? pages.filter((page): page is JsonValue & OutlinePage => validate(siteOutlineSchema.properties.pages.items, page).length === 0)
    : [];
}

/**
 * The name the draft being revised goes by: the brief's when this
 * revision's feedback names nothing, else the last name the earlier
 * feedback gave (read as the stages read it), else `firstName`.
 */
function draftName(revision: StageRevision, brief: WebsiteBrief, firstName: string): string {
  if (readFeedback(revision.feedback, []).name === undefined) return brief.name;
  return (revision.earlier ?? []).reduce((name, feedback) => readFeedback(feedback, []).name ?? name, firstName);
}

/** An outline page from the brief's entry alone: its title, and what it is for as its one section. */
function fromBriefEntry(entry: WebsiteBrief["pages"][number]): OutlinePage {
  return {
    slug: entry.slug,
    title: entry.title,
    navLabel: entry.title,
    description: entry.purpose,
    sections: [{ kind: "hero", heading: entry.title, summary: entry.purpose }],
  };
}

/**
 * The sections of a page the composed site lacks, from its outline entry
 * alone: each its heading over what the outline says it holds (the hero,
 * first, over the page's description). Text only: the outline has no
 * cards, steps or questions to fill other kinds with.
 */
function writtenFromOutline(page: OutlinePage): Section[] {
  return page.sections.map((section, index) => ({
    kind: index === 0 ? "hero" : "text",
    heading: section.heading,
    paragraphs: [index === 0 ? page.description : section.summary],
    items: [],
    link: { label: "", page: "" },
  }));
}

/** `value` with `from` written as `name`, and one full stop where a sentence ends on it. */
function withName<T>(value: T, from: string, name: string): T {
  return oneStopAfter(renamed(value, from, name), name);
}

/** `value` with one full stop where a sentence ends on a name that ends in its own ("Welcome to Acme Co."). */
function oneStopAfter<T>(value: T, name: string): T {
  return renamed(value, `${name}.`, endSentence(name));
}

/** The site for a goal in its language, read as composed text (NFC): a decomposed accent (macOS) is part of its letter. */
async function siteFor(goal: string): Promise<ComposedSite> {
  const composed = goal.normalize("NFC");
  return composeSite(composed, (await detectGoalLanguage(composed)).tag);
}

/**
 * The whole site for a goal: brief and pages with their words. `language` is
 * the goal's (it becomes the site's `lang`); the copy is English, and only
 * an English goal is read for more than a quoted name and contact details.
 */
export function composeSite(goal: string, language = "en"): ComposedSite {
  const facts = readGoal(goal, OFFLINE_LANGUAGES.includes(language) ? language : "unread");
  const named = facts.name !== undefined;
  const name = facts.name ?? UNNAMED_SITE;
  const profile = facts.subject === undefined ? UNREAD_PROFILE : pickProfile(facts.subject, goal);
  const w: ProfileWords = { name, subject: facts.subject ?? "", inPlace: facts.place ? ` in ${facts.place}` : "" };
  const audience = facts.audience ? `${name} is made for ${facts.audience}.` : say(profile.audience, w);
  const tagline = taglineFor(facts, w) ?? "Who we are, what we do and how to find out more.";
  const offer = profile.offerPage;
  const hasContact = facts.email !== undefined || facts.phone !== undefined;

  const offerCards =
    facts.offerings.length > 0
      ? facts.offerings.map((o, i) => ({ title: sentenceCase(o), text: profile.offerText(o, w, i) }))
      : profile.values.map(([t, x]) => ({ title: say(t, w), text: say(x, w) }));
  const valueCards = profile.values.map(([t, x]) => ({ title: say(t, w), text: say(x, w) }));
  const steps = profile.steps.items.map(([t, x]) => ({ title: say(t, w), text: say(x, w) }));
  const faq = profile.faq.map(([t, x]) => ({ title: say(t, w), text: say(x, w) }));
  // Only a question the site can answer: the goal's own address or number.
  if (hasContact) faq.push({ title: "How do I get in touch?", text: `${contactLines(facts, w)[0]} Every message is read and answered by a person.` });
  // The buttons lead to the contact page only when the goal gave a way to get in touch; else to what is on offer.
  const cta =
    profile.cta.page === "contact" && !hasContact
      ? { label: offer.more, page: offer.slug }
      : { label: profile.cta.label, page: profile.cta.page === "offer" ? offer.slug : "contact" };
  const none = { label: "", page: "" };
  const requested = facts.features.map((f) => featureSection(f, facts, w, steps)).filter((s): s is SectionPlan => s !== undefined);
  const orderSteps = requested.find((s) => s.kind === "steps");
  const findingUs = requested.filter((s) => s.kind === "text" && /hours|finding us/i.test(s.heading));
  // The hours go in the "Opening hours" section when the goal asked for one, else with the address and number.
  const reachLines = contactLines(facts, w, { hours: !findingUs.some((s) => s.heading === OPENING_HOURS) });

  const section = (kind: Section["kind"], heading: string, summary: string, rest: Partial<SectionPlan> = {}): SectionPlan => ({
    kind,
    heading,
    summary,
    paragraphs: [],
    items: [],
    link: none,
    ...rest,
  });
  const ctaBand = section("cta", say(profile.cta.heading, w), "The call to action", { paragraphs: [say(profile.cta.text, w)], link: cta });
  // No button to the page it is on.
  const offerCtaBand = cta.page === offer.slug ? { ...ctaBand, link: none } : ctaBand;

  const home: PagePlan = {
    slug: "index",
    title: "Home",
    navLabel: "Home",
    description: tagline,
    sections: [
      section("hero", name, "Who we are, in a line", {
        paragraphs: [tagline, named ? `Welcome to ${name}. Take a look around.` : "Take a look around."],
        link: cta,
      }),
      section("features", say(offer.heading, w), "What is on offer", {
        items: offerCards.slice(0, 6),
        link: { label: offer.more, page: offer.slug },
      }),
      section("text", "Who it is for", "The audience", {
        paragraphs: [audience, `Whether this is your first time or you already know ${named ? name : "us"}, you are welcome here.`],
      }),
      section("steps", orderSteps?.heading ?? profile.steps.heading, "How it works", { items: steps }),
      ctaBand,
    ],
  };
  const aboutName = named ? name : "us";
  const about: PagePlan = {
    slug: "about",
    title: `About ${aboutName}`,
    navLabel: "About",
    description: named ? `About ${name}: what it is, who it is for and what matters to it.` : "Who we are, who we are for and what matters to us.",
    sections: [
      section("hero", `About ${aboutName}`, "Introduction", { paragraphs: [aboutLine(facts, w)] }),
      section("text", "What we set out to do", "Purpose", { paragraphs: [`This site is here to ${lowerFirst(say(profile.purpose, w))}`, audience] }),
      // Values as headed paragraphs, not cards: the home page's cards may be these same values.
      section("text", "What matters to us", "Values", { items: valueCards }),
      ctaBand,
    ],
  };
  const offerPage: PagePlan = {
    slug: offer.slug,
    title: offer.title,
    navLabel: offer.navLabel,
    description: named ? `${offer.title} at ${name}.` : `${offer.title}.`,
    sections: [
      section("hero", offer.title, "What is on offer", { paragraphs: [say(offer.intro, w)] }),
      // A list, one line per offering, where the home page shows cards; the home page has the steps too.
      section("list", say(offer.heading, w), "The offer in detail", { items: offerCards }),
      // A page holds at most eight sections: the four of every offer page, and the first requested ones.
      ...requested.filter((s) => s.kind === "text" && !/hours|finding us/i.test(s.heading)).slice(0, 4),
      section("faq", "Questions", "Common questions", { items: faq }),
      offerCtaBand,
    ],
  };
  const contact: PagePlan = {
    slug: "contact",
    title: "Contact",
    navLabel: "Contact",
    description: named ? `How to get in touch with ${name}.` : "How to get in touch.",
    // Only what the goal gave: an address, a number, a place, the hours or directions it asked for; without any, no contact page.
    sections: [
      section("hero", "Get in touch", "Invitation", {
        paragraphs: [
          hasContact
            ? `Questions, ideas and requests are all welcome. Here is how to reach ${named ? name : "us"}.`
            : "Questions, ideas and requests are all welcome.",
        ],
      }),
      ...(reachLines.length > 0
        ? [
            section("contact", hasContact ? "How to reach us" : facts.place ? "Where we are" : "When we are open", "How to reach us", {
              paragraphs: reachLines,
            }),
          ]
        : []),
      ...findingUs,
      ...(hasContact
        ? [
            section("timeline", "What happens next", "After you write", {
              items: [
                { title: "We read your message", text: "Every message is read by a person, not filed away." },
                { title: "We reply", text: "You get an answer to your question, or a suggestion for the next step." },
                { title: "We take it from there", text: "Together we agree on what happens next, at your pace." },
              ],
            }),
          ]
        : []),
    ],
  };

  // A contact page with nothing to say (no way to get in touch, no place, no hours) is left out.
  const pages = reachLines.length > 0 || findingUs.length > 0 ? [home, offerPage, about, contact] : [home, offerPage, about];
  const brief: WebsiteBrief = {
    name,
    tagline,
    audience,
    purpose: say(profile.purpose, w),
    tone: profile.tone,
    language,
    pages: pages.map((p) => ({ slug: p.slug, title: p.title, purpose: p.sections[0]?.summary ?? p.title })),
    callToAction: cta,
    // Its picture's alt text: what the tone draws, in English on an English site, else the name (no English words on the page's behalf).
    visualAlt: describeArt(profile.tone, language, name),
  };
  return { brief: oneStopAfter(brief, name), pages: oneStopAfter(pages, name), facts, profile };
}

/**
 * What the thing is, as the goal says it, for "X is a …" sentences; none
 * when that would only repeat the name ("for Café Ñandú 🍩" names, it does
 * not describe; nor does "for "The Place Called Home"", or a name too long
 * to keep whole, of which the name keeps the start) or when the goal could
 * not be read.
 */
function describedAs(facts: GoalFacts): string | undefined {
  if (facts.subject === undefined) return undefined;
  const what = withoutArticle(facts.subject);
  const named =
    facts.namedInGoal && facts.name !== undefined
      ? withoutArticle(facts.name)
          .replace(/\u2026$/u, "")
          .toLowerCase()
      : undefined;
  if (named !== undefined && what.toLowerCase().includes(named)) return undefined;
  return what;
}

function withoutArticle(phrase: string): string {
  return phrase.replace(/^(?:a|an|the)\s+/i, "");
}

/** "A small bakery in Lyon for sourdough bread.", from the goal's own words; none for a goal the writer cannot read. */
function taglineFor(facts: GoalFacts, w: ProfileWords): string | undefined {
  const what = describedAs(facts);
  const offered = listOf(facts.offerings.slice(0, 3));
  if (what === undefined) return offered ? sentenceCase(`${offered}${w.inPlace}.`) : undefined;
  const forWhat = offered ? ` for ${offered}` : facts.audience ? ` for ${facts.audience}` : "";
  return sentenceCase(`${/^[aeiou]/i.test(what) ? "an" : "a"} ${what}${w.inPlace}${forWhat}.`);
}

function aboutLine(facts: GoalFacts, w: ProfileWords): string {
  const what = describedAs(facts);
  const offering = facts.offerings.length > 0 ? `, with ${listOf(facts.offerings.slice(0, 3))}` : "";
  const tail = "This site tells you what we do and who it is for.";
  if (facts.name === undefined) return "This site tells you who we are, what we do and who it is for.";
  if (what === undefined) return facts.place ? `${facts.name} is in ${facts.place}${offering}. ${tail}` : tail;
  return `${facts.name} is ${/^[aeiou]/i.test(what) ? "an" : "a"} ${what}${w.inPlace}${offering}. ${tail}`;
}

/** How to reach the place and when, from the goal's own words only: its address, number, place and (with `hours`) opening times. */
function contactLines(facts: GoalFacts, w: ProfileWords, include: { hours: boolean } = { hours: false }): string[] {
  const lines: string[] = [];
  if (facts.email) lines.push(`Write to ${facts.email} and we will answer as soon as we can.`);
  if (facts.phone) lines.push(`Call ${facts.phone}.`);
  if (facts.place) lines.push(`You will find ${w.name} in ${facts.place}.`);
  if (facts.hours && include.hours) lines.push(`Open ${facts.hours}.`);
  return lines;
}

const OPENING_HOURS = "Opening hours";

/** A section for something the goal asked the site to have, in words that stay true. */
function featureSection(feature: string, facts: GoalFacts, w: ProfileWords, steps: { title: string; text: string }[]): SectionPlan | undefined {
  const none = { label: "", page: "" };
  const base = { paragraphs: [] as string[], items: [] as { title: string; text: string }[], link: none, summary: feature };
  const f = feature.toLowerCase();
  if (/testimonial|review|rating/.test(f)) return undefined; // never invent praise
  if (/\b(?:contact|form|e-?mail|phone)\b/.test(f)) return undefined; // the contact page covers it
  if (/\bhours\b|opening|open times/.test(f)) {
    return {
      ...base,
      kind: "text",
      heading: OPENING_HOURS,
      paragraphs: [
        ...(facts.hours ? [`Open ${facts.hours}.`] : []),
        "Opening hours can change with the seasons and on holidays. Before a special trip, get in touch and we will confirm when we are open.",
      ],
    };
  }
  if (/\b(?:map|directions?|location|address|find us|where)\b/.test(f)) {
    return {
      ...base,
      kind: "text",
      heading: "Finding us",
      paragraphs: [
        facts.place
          ? `We are in ${facts.place}. Get in touch and we will tell you exactly how to find us.`
          : "Get in touch and we will tell you exactly how to find us.",
      ],
    };
  }
  if (/\b(?:order\w*|book\w*|reserv\w*|appointment|sign(?:ing)? up|register|enrol\w*|join\w*|rsvp|buy\w*|subscri\w*)\b/.test(f)) {
    const action = f
      .replace(/^(?:a\s+)?(?:way|ways|option|place|page|section)\s+(?:to|for)\s+/, "")
      .replace(/^how\s+to\s+/, "")
      .replace(/^online\s+/, "");
    return { ...base, kind: "steps", heading: sentenceCase(`how to ${action}`), items: steps };
  }
  if (/\b(?:price|prices|pricing|cost|costs|rates|fees|tariffs?)\b/.test(f)) {
    return {
      ...base,
      kind: "text",
      heading: "Prices",
      paragraphs: ["Prices depend on what you need. Ask us and you will get a clear price before anything is agreed."],
    };
  }
  if (/\b(?:schedule|timetable|programme|program|calendar|agenda|dates|events)\b/.test(f)) {
    const thing = f.replace(/^(?:a|an|the|our|my)\s+/, "");
    return {
      ...base,
      kind: "text",
      heading: sentenceCase(thing),
      paragraphs: [`The current ${thing} is shared with everyone who gets in touch. Ask ${w.name} and you will get the latest version.`],
    };
  }
  if (/\b(?:faq|questions)\b/.test(f)) return undefined; // the offer page has questions already
  if (/\b(?:gallery|photos?|pictures|images|portfolio)\b/.test(f)) return undefined; // the offer cards stand in; no invented images
  return {
    ...base,
    kind: "text",
    heading: sentenceCase(f.replace(/^(?:a|an|the|our|my)\s+/, "")),
    paragraphs: [`Ask us about ${f.replace(/^(?:a|an|the|our|my)\s+/, "")}: get in touch and ${w.name} will tell you everything you need to know.`],
  };
}

function listOf(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}
