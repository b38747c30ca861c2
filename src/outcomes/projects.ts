import { createHash } from "node:crypto";
import { isValidKey, type ArtifactStore } from "./artifact-store.js";
import { trimEndOf, trimOf } from "../strings.js";

/** A plan's project, as the plan shows it after `understand`. */
export interface Project {
  id: string;
  name: string;
  slug: string;
}

const decoder = new TextDecoder();

/**
 * Gives a plan its project: the same id and slug on every re-run of
 * `understand` (so URLs stay stable), a fresh slug claimed for a new plan.
 *
 * Slugs are unique across plans through the artifact index: claiming
 * `index/slugs/{slug}` is a create-if-absent, atomic on a file system and
 * on object stores with conditional writes, so two plans racing for
 * "bakery" end up with "bakery" and "bakery-2", never both with one.
 */
export async function ensureProject(store: ArtifactStore, planId: string, name: string): Promise<Project> {
  const recordKey = `index/plans/${planId}/project.json`;
  const existing = await readProject(store, planId);
  if (existing) {
    const renamed = { ...existing, name };
    if (existing.name !== name) await store.put(recordKey, JSON.stringify(renamed));
    return renamed;
  }
  const base = slugify(name);
  for (let n = 1; ; n++) {
    const slug = n === 1 ? base : `${cutSlug(base, 60 - 1 - String(n).length)}-${n}`;
    if (await store.put(`index/slugs/${slug}`, planId, { ifAbsent: true })) {
      const project = { id: projectIdFor(planId), name, slug };
      await store.put(recordKey, JSON.stringify(project));
      return project;
    }
    // A claim left by this very plan (a crash between claim and record) is ours.
    if ((await slugOwner(store, slug)) === planId) {
      const project = { id: projectIdFor(planId), name, slug };
      await store.put(recordKey, JSON.stringify(project));
      return project;
    }
  }
}

/** The project recorded for a plan, if `understand` has run. */
export async function readProject(store: ArtifactStore, planId: string): Promise<Project | undefined> {
  const bytes = await store.get(`index/plans/${planId}/project.json`);
  return bytes ? (JSON.parse(decoder.decode(bytes)) as Project) : undefined;
}

/** The plan that owns a slug, if any. */
export async function slugOwner(store: ArtifactStore, slug: string): Promise<string | undefined> {
  const bytes = await store.get(`index/slugs/${slug}`);
  return bytes ? decoder.decode(bytes) : undefined;
}

/**
 * Removes everything a plan left in the store: its preview, its published
 * site or book, its project record and, last, its slug claim (so the slug is
 * free only once nothing is served under it). Answers how many keys went.
 * Safe to repeat after a crash part-way.
 */
export async function removePlanArtifacts(store: ArtifactStore, planId: string): Promise<number> {
  if (!isValidKey(planId)) return 0;
  const project = await readProject(store, planId);
  let removed = await store.removeAll(`preview/${planId}/`);
  if (project && (await slugOwner(store, project.slug)) === planId) {
    removed += await store.removeAll(`sites/${project.slug}/`);
    removed += await store.removeAll(`books/${project.slug}/`);
    removed += await store.removeAll(`index/plans/${planId}/`);
    await store.remove(`index/slugs/${project.slug}`);
    return removed + 1;
  }
  return removed + (await store.removeAll(`index/plans/${planId}/`));
}

/** "Café Ünïcode & Co." → "cafe-unicode-co"; never empty, at most 60 characters, never cut mid-word. */
export function slugify(name: string): string {
  const dashed = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-");
  return cutSlug(trimOf(dashed, "-"), 60) || "project";
}

/**
 * A hyphenated slug of at most `max` characters, cut at a hyphen so no word
 * is left half ("upper-riverside", not "upper-rivers"); only a first word
 * longer than `max` is cut inside, as nothing else would fit.
 */
export function cutSlug(slug: string, max: number): string {
  if (slug.length <= max) return slug;
  const boundary = slug.lastIndexOf("-", max);
  return trimEndOf(boundary > 0 ? slug.slice(0, boundary) : slug.slice(0, max), "-");
}

/** Derived from the plan id, so re-running `understand` never mints a second project. */
function projectIdFor(planId: string): string {
  return `prj_${createHash("sha256").update(planId).digest("base64url").slice(0, 22)}`;
}
