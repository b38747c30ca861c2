import { isValidKey, type ArtifactStore } from "./artifact-store.js";
import { readProject, slugOwner } from "./projects.js";

/**
 * Removes everything a deleted plan left in the store: its published site or
 * book (only if the plan owns that slug, so another plan's site is never
 * touched), its previews (the first draft's and each of `revisions`), its
 * work files and its project record. `slug` is the one the plan showed, for a
 * second sweep after the record is gone.
 *
 * The slug's claim (`index/slugs/{slug}`) stays, naming the deleted plan: an
 * address that was public is not handed to another plan, and a repeated
 * sweep still proves the slug was this plan's.
 */
export async function deletePlanArtifacts(store: ArtifactStore, planId: string, known: { slug?: string; revisions?: number } = {}): Promise<void> {
  if (!isValidKey(planId)) return;
  const owned = (await readProject(store, planId))?.slug ?? known.slug;
  if (owned !== undefined && isValidKey(owned) && (await slugOwner(store, owned)) === planId) {
    await store.removeAll(`sites/${owned}/`);
    await store.removeAll(`books/${owned}/`);
  }
  await store.removeAll(`preview/${planId}/`);
  for (let revision = 1; revision <= (known.revisions ?? 0); revision++) await store.removeAll(`preview/${planId}-r${revision}/`);
  await store.removeAll(`work/${planId}/`);
  await store.removeAll(`index/plans/${planId}/`);
}
