import type { StageInput, StageOutcome } from "../../engine/stage-work.js";
import { StageFailure } from "../../engine/stage-work.js";
import { copyTree, replaceTree } from "../artifact-store.js";
import { bookContentSchema, bookOutlineSchema, chapterSchema, ebookBriefSchema, type Chapter } from "../content.js";
import type { Schema } from "../json-schema.js";
import { ensureProject, markPublished, publishedPath, renameProject } from "../projects.js";
import { asJson, chooseWriterKind, keptWork, planKey, previewKey, previewUrl, previousOutput, writerFor, type OutcomeDeps } from "../stage-support.js";
import { ownSlug } from "../website/website-stages.js";
import { renderEpub, renderReader } from "./render-book.js";

/** What `understand` stores for a book. */
export const ebookUnderstandingSchema = {
  type: "object",
  properties: { writer: { type: "string", enum: ["upstream", "offline"] }, brief: ebookBriefSchema },
  required: ["writer", "brief"],
  additionalProperties: false,
} as const satisfies Schema;

/** What `outline` stores for a book: the outline, and for a revision, the brief the model revised first (its title, tone, …). */
export const ebookOutlineOutputSchema = {
  type: "object",
  properties: { ...bookOutlineSchema.properties, brief: ebookBriefSchema },
  required: ["chapters"],
  additionalProperties: false,
} as const satisfies Schema;

/** The stages of the ebook outcome, except the engine's `review` gate. */
export function ebookStages(deps: OutcomeDeps) {
  /** The writer and brief a stage works from: for a revision, the brief `outline` revised and stored. */
  const understanding = (input: StageInput) => {
    const understood = previousOutput(input, "understand", ebookUnderstandingSchema);
    if (!input.revision || input.previous.outline === undefined) return understood;
    return { ...understood, brief: previousOutput(input, "outline", ebookOutlineOutputSchema).brief ?? understood.brief };
  };

  return {
    async understand(input: StageInput): Promise<StageOutcome> {
      const kind = chooseWriterKind(deps, "ebook");
      deps.logger.info({ planId: input.planId, outcome: "ebook", writer: kind }, "writer chosen");
      const brief = await writerFor(deps, kind, input).ebookBrief(input.goal, input);
      const project = await ensureProject(deps.artifacts, planKey(input.planId), brief.title.trim());
      return { output: asJson({ writer: kind, brief }), project };
    },

    async outline(input: StageInput): Promise<StageOutcome> {
      const understood = understanding(input);
      const writer = writerFor(deps, understood.writer, input);
      const revised = input.revision && writer.reviseEbookBrief ? await writer.reviseEbookBrief(input.goal, understood.brief, input) : undefined;
      const outline = await writer.bookOutline(input.goal, revised ?? understood.brief, input);
      return { output: asJson(revised ? { ...outline, brief: revised } : outline) };
    },

    /** One writer call per chapter, progress after each; a retry after a failure at chapter 7 does not pay for chapters 1 to 6 again. */
    async write(input: StageInput): Promise<StageOutcome> {
      const { writer: kind, brief } = understanding(input);
      const { brief: _revised, ...outline } = previousOutput(input, "outline", ebookOutlineOutputSchema);
      const writer = writerFor(deps, kind, input);
      const chapters: Chapter[] = [];
      for (const [index, planned] of outline.chapters.entries()) {
        input.signal.throwIfAborted();
        const piece = { kind: "chapters", madeFrom: { brief, planned, index }, schema: chapterSchema } as const;
        chapters.push(await keptWork(deps, input, piece, () => writer.chapter(input.goal, brief, outline, index, input)));
        await input.progress((index + 1) / outline.chapters.length);
      }
      return { output: asJson({ chapters }) };
    },

    async assemble(input: StageInput): Promise<StageOutcome> {
      const { brief } = understanding(input);
      const content = previousOutput(input, "write", bookContentSchema);
      // A revision may have retitled the book: the project follows the draft, as a site's does at build.
      const project = input.revision ? await renameProject(deps.artifacts, planKey(input.planId), brief.title.trim()) : undefined;
      const slug = await ownSlug(deps, input);
      const epubName = `${slug}.epub`;
      const epub = renderEpub(brief, content, { planId: input.planId, modified: new Date() });
      const files = new Map<string, string | Uint8Array>(renderReader(brief, content, epubName));
      files.set(epubName, epub);
      const revision = input.revision?.number;
      await replaceTree(deps.artifacts, `preview/${previewKey(input.planId, revision)}/`, files);
      return {
        output: asJson({ files: [...files.keys()].sort(), epub: epubName, epubBytes: epub.length }),
        previewUrl: previewUrl(deps, input.planId, revision),
        ...(project ? { project } : {}),
      };
    },

    async publish(input: StageInput): Promise<StageOutcome> {
      const slug = await ownSlug(deps, input);
      await markPublished(deps.artifacts, slug, input.planId);
      const copied = await copyTree(deps.artifacts, `preview/${previewKey(input.planId, input.revision?.number)}/`, `books/${slug}/`);
      if (copied === 0) throw new StageFailure("internal", "There is no assembled book to publish; re-run the assemble stage.");
      return { output: asJson({ slug, files: copied }), publishedUrl: `${deps.config.publicUrl}${publishedPath("books", slug)}` };
    },
  };
}
