import { isValidKey, removeTree, type ArtifactStore } from "./artifact-store.js";
import { readProject, slugOwner } from "./projects.js";

/**
 * Removes everything a plan left in the store: its preview, its work files,
 * its published site or book (only if the plan owns that slug, so another
 * plan's site is never touched), then its slug claim and project record.
 * The record goes last, so a run cut short can be repeated and still finds
 * the slug to clean up.
 */
export async function deletePlanArtifacts(store: ArtifactStore, planId: string): Promise<void> {
  if (!isValidKey(planId)) return;
  const project = await readProject(store, planId);
  if (project && isValidKey(project.slug) && (await slugOwner(store, project.slug)) === planId) {
    await removeTree(store, `sites/${project.slug}/`);
    await removeTree(store, `books/${project.slug}/`);
    await store.remove(`index/slugs/${project.slug}`);
  }
  await removeTree(store, `preview/${planId}/`);
  await removeTree(store, `work/${planId}/`);
  await removeTree(store, `index/plans/${planId}/`);
}
