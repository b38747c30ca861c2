import { createHash } from "node:crypto";
import type { JsonValue } from "@bufbuild/protobuf";
import type { ChatCompleter } from "../chat/chat-types.js";
import type { Config } from "../config.js";
import { StageFailure, type StageInput, type StageRevision } from "../engine/stage-work.js";
import type { Logger } from "../observability/logger.js";
import type { ArtifactStore } from "./artifact-store.js";
import { canonicalJson } from "../strings.js";
import { validate, type Infer, type Schema } from "./json-schema.js";
import { createOfflineWriter } from "./writers/offline-writer.js";
import { createUpstreamWriter } from "./writers/upstream-writer.js";
import type { Writer, WriterKind } from "./writers/writer.js";

/** What the outcome stages need from the rest of the service. */
export interface OutcomeDeps {
  config: Pick<Config, "dataDir" | "publicUrl" | "offlineWriter" | "upstreams">;
  /** The service's chat router; absent or without upstreams, only the offline writer can write. */
  chat?: ChatCompleter;
  artifacts: ArtifactStore;
  logger: Logger;
}

/**
 * The writer for a new plan: the upstream model when one is configured,
 * else the offline writer when it is on and the outcome is a website.
 */
export function chooseWriterKind(deps: OutcomeDeps, outcome: StageInput["outcome"]): WriterKind {
  if (deps.chat && deps.config.upstreams.length > 0) return "upstream";
  if (outcome === "website" && deps.config.offlineWriter) return "offline";
  throw new StageFailure(
    "outcome_unavailable",
    outcome === "ebook"
      ? "Ebooks need a language model, and this service has no upstream model configured."
      : "Websites need a language model or the offline writer, and this service has neither.",
  );
}

/** The writer a plan started with, so every stage of it speaks with one voice; its log lines name the plan and the stage. */
export function writerFor(deps: OutcomeDeps, kind: WriterKind, input: Pick<StageInput, "planId" | "stageId">): Writer {
  if (kind === "offline") return createOfflineWriter();
  if (!deps.chat)
    throw new StageFailure("outcome_unavailable", "This plan was written by a language model, and this service has no upstream model configured now.");
  return createUpstreamWriter(deps.chat, deps.logger.child({ planId: input.planId, stage: input.stageId }));
}

/**
 * An earlier stage's output, checked against its schema. Outputs are ours,
 * but they live in the database across versions and restarts, so a stage
 * never trusts their shape blindly.
 */
export function previousOutput<S extends Schema>(input: StageInput, stageId: string, schema: S): Infer<S> {
  const value: JsonValue | undefined = input.previous[stageId];
  if (value === undefined) {
    throw new StageFailure("internal", `Stage "${input.stageId}" needs the output of "${stageId}", which has not succeeded.`);
  }
  const problems = validate(schema, value, 3);
  if (problems.length > 0) {
    throw new StageFailure("internal", `The stored output of "${stageId}" is not usable (${problems.join("; ")}); re-run the plan from "${stageId}".`);
  }
  return value as Infer<S>;
}

/** Narrows our typed outputs to the engine's JSON type; they are plain JSON by construction. */
export function asJson(value: unknown): JsonValue {
  return value as JsonValue;
}

/**
 * Where a draft's preview is kept: `{planId}` for the first, `{planId}-r{n}`
 * for revision n, so every revision keeps its own preview beside the others.
 */
export function previewKey(planId: string, revision: number | undefined): string {
  return revision === undefined || revision < 1 ? planKey(planId) : `${planKey(planId)}-r${revision}`;
}

/** `${publicUrl}/preview/{planId}/`, or `…/preview/{planId}-r{n}/` for revision n. */
export function previewUrl(deps: OutcomeDeps, planId: string, revision?: number): string {
  return `${deps.config.publicUrl}/preview/${encodeURIComponent(previewKey(planId, revision))}/`;
}

/** A plan id usable as a storage key segment; engine ids always are, this guards the rest. */
export function planKey(planId: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$/.test(planId)) throw new StageFailure("internal", "The plan id cannot name an artifact.");
  return planId;
}

/**
 * One piece of a stage's work (a book's chapter, a site's page), kept under
 * the plan's work area and keyed by everything it was made from, so a retry
 * or resume of the stage pays only for the pieces an earlier try did not
 * finish. Made from anything else (a revised brief, another outline, a
 * revision's feedback), it has another key: nothing stale is reused.
 */
export async function keptWork<S extends Schema>(
  deps: OutcomeDeps,
  input: StageInput,
  piece: { kind: "chapters" | "pages"; madeFrom: Record<string, unknown>; schema: S },
  make: () => Promise<Infer<S>>,
): Promise<Infer<S>> {
  const madeFrom = canonicalJson({ ...piece.madeFrom, ...(input.revision ? revisionInputs(input.revision) : {}) });
  const key = `work/${planKey(input.planId)}/${piece.kind}/${createHash("sha256").update(madeFrom).digest("hex").slice(0, 32)}.json`;
  const kept = await deps.artifacts.get(key);
  if (kept) {
    const value = parsedOrUndefined(decoder.decode(kept));
    if (value !== undefined && validate(piece.schema, value).length === 0) return value as Infer<S>;
  }
  const made = await make();
  await deps.artifacts.put(key, JSON.stringify(made));
  return made;
}

const decoder = new TextDecoder();

/** What of a revision a written piece depends on: its feedback, and the earlier ones its prompt repeats (none for revision 1). */
const revisionInputs = (revision: StageRevision) => ({
  feedback: revision.feedback,
  ...(revision.earlier && revision.earlier.length > 0 ? { earlier: revision.earlier } : {}),
});

/** A kept piece cut short (a disk that filled up mid-write) is made again, not a stage that fails for good. */
function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
