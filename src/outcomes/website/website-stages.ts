import type { StageInput, StageOutcome, StageRevision } from "../../engine/stage-work.js";
import { StageFailure } from "../../engine/stage-work.js";
import { copyTree, replaceTree } from "../artifact-store.js";
import {
  pageContentSchema,
  siteContentSchema,
  siteOutlineSchema,
  websiteBriefSchema,
  type PageContent,
  type SiteOutline,
  type WebsiteBrief,
} from "../content.js";
import { fitToSchema, type Schema } from "../json-schema.js";
import { cutSlug, ensureProject, markPublished, publishedPath, readProject, renameProject, slugOwner } from "../projects.js";
import { asJson, chooseWriterKind, keptWork, planKey, previewKey, previewUrl, previousOutput, writerFor, type OutcomeDeps } from "../stage-support.js";
import { readFeedback, reviseBrief, unreadFeedbackWarning } from "../writers/offline-feedback.js";
import { copyLanguage, offlineWarning, type WriterKind } from "../writers/writer.js";
import { pageFinder, pageSlug, renderSite } from "./render-site.js";

/** What `understand` stores: which writer the plan uses, and the brief. */
export const websiteUnderstandingSchema = {
  type: "object",
  properties: { writer: { type: "string", enum: ["upstream", "offline"] }, brief: websiteBriefSchema },
  required: ["writer", "brief"],
  additionalProperties: false,
} as const satisfies Schema;

/**
 * What `outline` stores: the outline, and for a revision the upstream model
 * wrote, the brief it revised first (the draft's name, tone, pages), which
 * the stages after it build from.
 */
export const websiteOutlineOutputSchema = {
  type: "object",
  properties: { ...siteOutlineSchema.properties, brief: websiteBriefSchema },
  required: ["pages"],
  additionalProperties: false,
} as const satisfies Schema;

/** The offline warning, and a sentence on the feedback it could not apply (`unread`, in the person's words). */
const warningFor = (kind: WriterKind, brief: WebsiteBrief, unread: readonly string[] = []): Pick<StageOutcome, "warning"> => {
  if (kind !== "offline") return {};
  const sentence = unreadFeedbackWarning(unread);
  const warning = offlineWarning(brief.language, brief.name);
  return { warning: sentence ? `${warning} ${sentence}` : warning };
};

/** Every feedback a draft follows, oldest first: the earlier revisions' and then its own. */
function feedbackSoFar(revision: StageRevision): string[] {
  return [...(revision.earlier ?? []), revision.feedback];
}

/** The stages of the website outcome, except the engine's `review` gate. */
export function websiteStages(deps: OutcomeDeps) {
  /**
   * The writer and brief a stage works from. For a revision the offline
   * writer applies what it read in the feedback (name, tone, pages dropped)
   * to the brief, each revision's in turn, so a draft keeps what the ones
   * before it changed; for an upstream writer the model revised the brief at
   * `outline`, which stored it (and gets the feedback in every prompt).
   * `unread` is what the offline writer could not apply.
   */
  const understanding = (input: StageInput): { writer: WriterKind; brief: WebsiteBrief; unread: string[] } => {
    const understood = previousOutput(input, "understand", websiteUnderstandingSchema);
    if (!input.revision) return { ...understood, unread: [] };
    if (understood.writer !== "offline") {
      const revised = input.previous.outline === undefined ? undefined : previousOutput(input, "outline", websiteOutlineOutputSchema).brief;
      return { ...understood, brief: revised ?? understood.brief, unread: [] };
    }
    let brief = understood.brief;
    const unread: string[] = [];
    for (const feedback of feedbackSoFar(input.revision)) {
      const reading = readFeedback(
        feedback,
        brief.pages.map((p) => p.slug),
      );
      brief = normalizeBrief(fitToSchema(websiteBriefSchema, reviseBrief(brief, reading)));
      for (const part of reading.unread) if (!unread.includes(part)) unread.push(part);
    }
    return { ...understood, brief, unread };
  };

  return {
    async understand(input: StageInput): Promise<StageOutcome> {
      const kind = chooseWriterKind(deps, "website");
      deps.logger.info({ planId: input.planId, outcome: "website", writer: kind }, "writer chosen");
      const brief = normalizeBrief(await writerFor(deps, kind, input).websiteBrief(input.goal, input));
      const project = await ensureProject(deps.artifacts, planKey(input.planId), brief.name);
      return { output: asJson({ writer: kind, brief }), project, ...warningFor(kind, brief) };
    },

    async outline(input: StageInput): Promise<StageOutcome> {
      const understood = understanding(input);
      const writer = writerFor(deps, understood.writer, input);
      const revised =
        input.revision && writer.reviseWebsiteBrief ? normalizeBrief(await writer.reviseWebsiteBrief(input.goal, understood.brief, input)) : undefined;
      const brief = revised ?? understood.brief;
      const outline = normalizeOutline(brief, await writer.siteOutline(input.goal, brief, input));
      return { output: asJson(revised ? { ...outline, brief: revised } : outline), ...warningFor(understood.writer, brief, understood.unread) };
    },

    async write(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief, unread } = understanding(input);
      const { brief: _revised, ...outline } = previousOutput(input, "outline", websiteOutlineOutputSchema);
      const writer = writerFor(deps, kind, input);
      const pages: PageContent[] = [];
      for (const [index, page] of outline.pages.entries()) {
        input.signal.throwIfAborted();
        // A page is written from the whole outline (its links and navigation name the others), so any change to it writes every page again.
        const piece = { kind: "pages", madeFrom: { brief, outline, slug: page.slug }, schema: pageContentSchema } as const;
        const content = await keptWork(deps, input, piece, () => writer.page(input.goal, brief, outline, page.slug, input));
        // The outline decides which page this is; the writer's echo of the slug is not trusted.
        pages.push({ ...content, slug: page.slug });
        await input.progress((index + 1) / outline.pages.length);
      }
      return { output: asJson({ pages }), ...warningFor(kind, brief, unread) };
    },

    async build(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief, unread } = understanding(input);
      const { brief: _revised, ...outline } = previousOutput(input, "outline", websiteOutlineOutputSchema);
      const content = previousOutput(input, "write", siteContentSchema);
      // A revision may have renamed the site (a quoted name the offline writer read, or the model's revised brief): the project follows the draft.
      const project = input.revision
        ? await renameProject(deps.artifacts, planKey(input.planId), brief.name)
        : await readProject(deps.artifacts, planKey(input.planId));
      // Built with the address it will be published at, so canonical links and the sitemap are right once it is.
      const siteUrl = project ? `${deps.config.publicUrl}${publishedPath("sites", project.slug)}` : undefined;
      const files = renderSite(brief, outline, content.pages, siteUrl, copyLanguage(kind, brief.language));
      const revision = input.revision?.number;
      await replaceTree(deps.artifacts, `preview/${previewKey(input.planId, revision)}/`, files);
      return {
        output: asJson({ files: [...files.keys()].sort(), theme: brief.tone }),
        previewUrl: previewUrl(deps, input.planId, revision),
        ...(input.revision && project ? { project } : {}),
        ...warningFor(kind, brief, unread),
      };
    },

    async publish(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief, unread } = understanding(input);
      const slug = await ownSlug(deps, input);
      await markPublished(deps.artifacts, slug, input.planId);
      // The newest revision is what was approved.
      const copied = await copyTree(deps.artifacts, `preview/${previewKey(input.planId, input.revision?.number)}/`, `sites/${slug}/`);
      if (copied === 0) throw new StageFailure("internal", "There is no built site to publish; re-run the build stage.");
      const publishedUrl = `${deps.config.publicUrl}${publishedPath("sites", slug)}`;
      return { output: asJson({ slug, files: copied }), publishedUrl, ...warningFor(kind, brief, unread) };
    },
  };
}

/** The slug this plan claimed at `understand`, checked against the claim so a plan only ever replaces its own site. */
export async function ownSlug(deps: OutcomeDeps, input: StageInput): Promise<string> {
  const project = await readProject(deps.artifacts, planKey(input.planId));
  if (!project) throw new StageFailure("internal", 'This plan has no project yet; re-run it from "understand".');
  if ((await slugOwner(deps.artifacts, project.slug)) !== input.planId) {
    throw new StageFailure("internal", `The address "${project.slug}" belongs to another plan.`);
  }
  return project.slug;
}

function uniqueSlugs(raw: readonly string[]): string[] {
  const seen = new Set<string>();
  return raw.map((value, index) => {
    let slug = index === 0 ? "index" : pageSlug(value);
    if (slug === "index" && index > 0) slug = "home";
    for (let n = 2; seen.has(slug); n++) slug = `${cutSlug(pageSlug(value), 40 - 1 - String(n).length)}-${n}`;
    seen.add(slug);
    return slug;
  });
}

/** Makes a brief safe to build from: the first page is `index`, slugs are file names, the call to action points at a page. */
export function normalizeBrief(brief: WebsiteBrief): WebsiteBrief {
  const slugs = uniqueSlugs(brief.pages.map((p) => p.slug));
  const pages = brief.pages.map((p, i) => ({ ...p, slug: slugs[i]! }));
  // The call to action names a page as the writer did: by the slug it gave, which may have become another.
  const pageNamed = pageFinder([...brief.pages.map((p, i) => [p.slug, slugs[i]!] as const), ...slugs.map((s) => [s, s] as const)]);
  const target = pageNamed(brief.callToAction.page) ?? slugs.find((s) => s === "contact") ?? slugs[0]!;
  return { ...brief, name: brief.name.trim(), pages, callToAction: { ...brief.callToAction, page: target } };
}

/** Same rules for the outline, so pages, links and navigation agree on every slug. */
export function normalizeOutline(brief: WebsiteBrief, outline: SiteOutline): SiteOutline {
  const slugs = uniqueSlugs(outline.pages.map((p) => p.slug));
  return {
    pages: outline.pages.map((page, i) => ({
      ...page,
      slug: slugs[i]!,
      navLabel: page.navLabel.trim() || page.title,
      description: page.description.trim() || brief.tagline,
    })),
  };
}
