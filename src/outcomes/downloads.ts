import type { ArtifactStore } from "./artifact-store.js";
import { readProject } from "./projects.js";
import { previewKey } from "./stage-support.js";
import { zipStream, type ZipEntry } from "./zip.js";

/** A plan's result as one file to download. */
export interface Download {
  filename: string;
  contentType: string;
  /** In bytes, when known before the body is sent (a book's EPUB; a site's zip is made as it streams). */
  size?: number;
  body: AsyncIterable<Uint8Array>;
}

/**
 * The newest build of a plan (its newest revision's) as one file: a website as a zip of every file
 * of its preview, a book as its assembled EPUB, byte for byte. Undefined
 * when nothing has been built yet. The caller has already checked that the
 * plan is the caller's and that its build stage succeeded.
 */
export async function planDownload(store: ArtifactStore, plan: { id: string; outcome: string; revisions?: readonly unknown[] }): Promise<Download | undefined> {
  const project = await readProject(store, plan.id);
  if (!project) return undefined;
  const prefix = `preview/${previewKey(plan.id, plan.revisions?.length)}/`;
  if (plan.outcome === "ebook") {
    const epub = await store.get(`${prefix}${project.slug}.epub`);
    if (!epub) return undefined;
    return { filename: `${project.slug}.epub`, contentType: "application/epub+zip", size: epub.byteLength, body: once(epub) };
  }
  const keys = await store.list(prefix);
  if (keys.length === 0) return undefined;
  async function* entries(): AsyncGenerator<ZipEntry> {
    for (const key of keys) {
      const data = await store.get(key);
      if (data) yield { name: key.slice(prefix.length), data };
    }
  }
  return { filename: `${project.slug}.zip`, contentType: "application/zip", body: zipStream(entries()) };
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
