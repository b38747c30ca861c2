import { createHash } from "node:crypto";
import type { ArtifactStore } from "./artifact-store.js";
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
  const project = { id: projectIdFor(planId), name, slug: await claimSlug(store, planId, slugify(name)) };
  await store.put(recordKey, JSON.stringify(project));
  return project;
}

/**
 * Gives a plan's project the name its newest draft uses: a revision can
 * rename the site, and the API, CLI and Console show the project's name.
 * A revision is taken at the approval gate, before anything is published,
 * so the address follows the name too: the new name's slug is claimed and
 * the old one let go (no site was ever served there). A project already
 * published keeps its address. Undefined before `understand`.
 */
export async function renameProject(store: ArtifactStore, planId: string, name: string): Promise<Project | undefined> {
  const existing = await readProject(store, planId);
  if (!existing || existing.name === name) return existing;
  const published = (await store.list(`sites/${existing.slug}/`)).length > 0 || (await store.list(`books/${existing.slug}/`)).length > 0;
  // The claim finds this plan's own slug again when the new name makes it ("Bakery" for "bakery-2").
  const slug = published ? existing.slug : await claimSlug(store, planId, slugify(name));
  const project = { ...existing, name, slug };
  await store.put(`index/plans/${planId}/project.json`, JSON.stringify(project));
  // Let go only once the record names the new slug: a crash in between leaves an unused claim, never a plan without one.
  if (slug !== existing.slug && (await slugOwner(store, existing.slug)) === planId) await store.remove(`index/slugs/${existing.slug}`);
  return project;
}

/** Claims `base`, or `base-2`, `base-3`… for `planId`: the first that no other plan holds. */
async function claimSlug(store: ArtifactStore, planId: string, base: string): Promise<string> {
  for (let n = 1; ; n++) {
    const slug = n === 1 ? base : `${cutSlug(base, 60 - 1 - String(n).length)}-${n}`;
    if (await store.put(`index/slugs/${slug}`, planId, { ifAbsent: true })) return slug;
    // A claim left by this very plan (a crash between claim and record) is ours.
    if ((await slugOwner(store, slug)) === planId) return slug;
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

/** "Café Ünïcode & Co." → "cafe-unicode-co"; never empty, at most 60 characters, never cut mid-word. */
export function slugify(name: string): string {
  return cutSlug(hyphenated(name), 60) || "project";
}

/** The words of `text` in lowercase ASCII, accents folded ("Über" → "uber"), joined by single hyphens; anything else separates. */
export function hyphenated(text: string): string {
  const dashed = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-");
  return trimOf(dashed, "-");
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
