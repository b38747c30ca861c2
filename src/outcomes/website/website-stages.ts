import type { StageInput, StageOutcome } from "../../engine/stage-work.js";
import { StageFailure } from "../../engine/stage-work.js";
import { copyTree, replaceTree } from "../artifact-store.js";
import { siteContentSchema, siteOutlineSchema, websiteBriefSchema, type PageContent, type SiteOutline, type WebsiteBrief } from "../content.js";
import type { Schema } from "../json-schema.js";
import { cutSlug, ensureProject, readProject, slugOwner } from "../projects.js";
import { asJson, chooseWriterKind, planKey, previewKey, previewUrl, previousOutput, writerFor, type OutcomeDeps } from "../stage-support.js";
import { readFeedback, reviseBrief, unreadFeedbackWarning } from "../writers/offline-feedback.js";
import { copyLanguage, offlineWarning, type WriterKind } from "../writers/writer.js";
import { pageSlug, renderSite } from "./render-site.js";

/** What `understand` stores: which writer the plan uses, and the brief. */
export const websiteUnderstandingSchema = {
  type: "object",
  properties: { writer: { type: "string", enum: ["upstream", "offline"] }, brief: websiteBriefSchema },
  required: ["writer", "brief"],
  additionalProperties: false,
} as const satisfies Schema;

const warningFor = (kind: WriterKind, brief: WebsiteBrief, input?: StageInput): Pick<StageOutcome, "warning"> => {
  if (kind !== "offline") return {};
  const unread = input?.revision
    ? unreadFeedbackWarning(
        readFeedback(
          input.revision.feedback,
          brief.pages.map((p) => p.slug),
        ),
      )
    : undefined;
  return { warning: unread ? `${offlineWarning(brief.language)} ${unread}` : offlineWarning(brief.language) };
};

/** The stages of the website outcome, except the engine's `review` gate. */
export function websiteStages(deps: OutcomeDeps) {
  /**
   * The writer and brief a stage works from. For a revision the offline
   * writer applies what it read in the feedback (name, tone, pages dropped)
   * to the brief; an upstream writer gets the feedback in every prompt.
   */
  const understanding = (input: StageInput) => {
    const understood = previousOutput(input, "understand", websiteUnderstandingSchema);
    if (!input.revision || understood.writer !== "offline") return understood;
    const reading = readFeedback(
      input.revision.feedback,
      understood.brief.pages.map((p) => p.slug),
    );
    return { ...understood, brief: normalizeBrief(reviseBrief(understood.brief, reading)) };
  };

  return {
    async understand(input: StageInput): Promise<StageOutcome> {
      const kind = chooseWriterKind(deps, "website");
      deps.logger.info({ planId: input.planId, outcome: "website", writer: kind }, "writer chosen");
      const brief = normalizeBrief(await writerFor(deps, kind).websiteBrief(input.goal, input));
      const project = await ensureProject(deps.artifacts, planKey(input.planId), brief.name);
      return { output: asJson({ writer: kind, brief }), project, ...warningFor(kind, brief) };
    },

    async outline(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief } = understanding(input);
      const outline = normalizeOutline(brief, await writerFor(deps, kind).siteOutline(input.goal, brief, input));
      return { output: asJson(outline), ...warningFor(kind, brief, input) };
    },

    async write(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief } = understanding(input);
      const outline = previousOutput(input, "outline", siteOutlineSchema);
      const writer = writerFor(deps, kind);
      const pages: PageContent[] = [];
      for (const [index, page] of outline.pages.entries()) {
        input.signal.throwIfAborted();
        const content = await writer.page(input.goal, brief, outline, page.slug, input);
        // The outline decides which page this is; the writer's echo of the slug is not trusted.
        pages.push({ ...content, slug: page.slug });
        await input.progress((index + 1) / outline.pages.length);
      }
      return { output: asJson({ pages }), ...warningFor(kind, brief, input) };
    },

    async build(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief } = understanding(input);
      const outline = previousOutput(input, "outline", siteOutlineSchema);
      const content = previousOutput(input, "write", siteContentSchema);
      // Built with the address it will be published at, so canonical links and the sitemap are right once it is.
      const project = await readProject(deps.artifacts, planKey(input.planId));
      const siteUrl = project ? `${deps.config.publicUrl}/sites/${project.slug}/` : undefined;
      const files = renderSite(brief, outline, content.pages, siteUrl, copyLanguage(kind, brief.language));
      const revision = input.revision?.number;
      await replaceTree(deps.artifacts, `preview/${previewKey(input.planId, revision)}/`, files);
      return {
        output: asJson({ files: [...files.keys()].sort(), theme: brief.tone }),
        previewUrl: previewUrl(deps, input.planId, revision),
        ...warningFor(kind, brief, input),
      };
    },

    async publish(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief } = understanding(input);
      const slug = await ownSlug(deps, input);
      // The newest revision is what was approved.
      const copied = await copyTree(deps.artifacts, `preview/${previewKey(input.planId, input.revision?.number)}/`, `sites/${slug}/`);
      if (copied === 0) throw new StageFailure("internal", "There is no built site to publish; re-run the build stage.");
      const publishedUrl = `${deps.config.publicUrl}/sites/${slug}/`;
      return { output: asJson({ slug, files: copied }), publishedUrl, ...warningFor(kind, brief, input) };
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
  const wanted = pageSlug(brief.callToAction.page);
  const target = slugs.includes(wanted) ? wanted : (slugs.find((s) => s === "contact") ?? slugs[0]!);
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
