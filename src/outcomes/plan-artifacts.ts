import { isValidKey, type ArtifactStore } from "./artifact-store.js";
import { markPublished, readProject, slugOwner, wasPublished } from "./projects.js";

/**
 * Removes everything a deleted plan left in the store: its published site or
 * book (only if the plan owns that slug, so another plan's site is never
 * touched), its previews (the first draft's and each of `revisions`), its
 * work files and its project record. `slug` is the one the plan showed, for a
 * later sweep after the record is gone.
 *
 * An address that was public stays claimed, naming the deleted plan, and is
 * never handed to another plan; it is marked published before its files go,
 * so a later sweep still knows. An address no site or book was published at
 * is let go on the `last` sweep (when no stage of the plan can still write),
 * so the deleted plan's name no longer holds it, nor shows in another
 * account's slug as "-2".
 */
export async function deletePlanArtifacts(
  store: ArtifactStore,
  planId: string,
  known: { slug?: string; revisions?: number } = {},
  sweep: { last: boolean } = { last: false },
): Promise<void> {
  if (!isValidKey(planId)) return;
  const recorded = (await readProject(store, planId))?.slug ?? known.slug;
  const owned = recorded !== undefined && isValidKey(recorded) && (await slugOwner(store, recorded)) === planId ? recorded : undefined;
  let published = false;
  if (owned !== undefined) {
    published = await wasPublished(store, owned);
    if (published) await markPublished(store, owned, planId);
    await store.removeAll(`sites/${owned}/`);
    await store.removeAll(`books/${owned}/`);
  }
  await store.removeAll(`preview/${planId}/`);
  for (let revision = 1; revision <= (known.revisions ?? 0); revision++) await store.removeAll(`preview/${planId}-r${revision}/`);
  await store.removeAll(`work/${planId}/`);
  await store.removeAll(`index/plans/${planId}/`);
  if (owned !== undefined && !published && sweep.last) await store.remove(`index/slugs/${owned}`);
}
