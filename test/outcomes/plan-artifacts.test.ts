import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileArtifactStore, type ArtifactStore } from "../../src/outcomes/artifact-store.js";
import { deletePlanArtifacts } from "../../src/outcomes/plan-artifacts.js";
import { ensureProject } from "../../src/outcomes/projects.js";

describe("deletePlanArtifacts", () => {
  let dir: string;
  let store: ArtifactStore;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-artifacts-"));
    store = createFileArtifactStore(dir);
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  async function planWithSite(planId: string): Promise<string> {
    const { slug } = await ensureProject(store, planId, "Bakery");
    await store.put(`preview/${planId}/index.html`, "preview");
    await store.put(`preview/${planId}-r1/index.html`, "first revision");
    await store.put(`preview/${planId}-r2/index.html`, "second revision");
    await store.put(`work/${planId}/chapters/a.json`, "{}");
    await store.put(`sites/${slug}/index.html`, "site");
    return slug;
  }

  it("removes the plan's preview, work files, record and published site, and leaves another plan's alone", async () => {
    const mine = await planWithSite("pln_mine");
    const theirs = await planWithSite("pln_theirs");
    expect([mine, theirs]).toEqual(["bakery", "bakery-2"]);

    await deletePlanArtifacts(store, "pln_mine", { revisions: 2 });
    for (const prefix of ["preview/pln_mine/", "preview/pln_mine-r1/", "preview/pln_mine-r2/", "work/pln_mine/", "index/plans/pln_mine/", "sites/bakery/"])
      expect(await store.list(prefix)).toEqual([]);
    expect(await store.list("sites/bakery-2/")).toEqual(["sites/bakery-2/index.html"]);
    expect(await store.list("preview/pln_theirs/")).toEqual(["preview/pln_theirs/index.html"]);
    expect(await store.list("preview/pln_theirs-r2/")).toEqual(["preview/pln_theirs-r2/index.html"]);
    // The address stays claimed by the deleted plan: never handed to another one.
    expect(await ensureProject(store, "pln_new", "Bakery")).toMatchObject({ slug: "bakery-3" });
    // So it stays after the last sweep, which knows it was published though its files are gone.
    await deletePlanArtifacts(store, "pln_mine", { slug: "bakery", revisions: 2 }, { last: true });
    expect(await ensureProject(store, "pln_newer", "Bakery")).toMatchObject({ slug: "bakery-4" });
  });

  it("lets go of an address nothing was published at, on the last sweep only (a stage may still write before it)", async () => {
    await ensureProject(store, "pln_draft", "Bakery");
    await store.put("preview/pln_draft/index.html", "preview");
    await deletePlanArtifacts(store, "pln_draft", {}, { last: false });
    expect(await ensureProject(store, "pln_other", "Bakery")).toMatchObject({ slug: "bakery-2" });
    await deletePlanArtifacts(store, "pln_draft", { slug: "bakery" }, { last: true });
    expect(await ensureProject(store, "pln_another", "Bakery")).toMatchObject({ slug: "bakery" });
    // Another plan's claim is never let go, whoever sweeps.
    await deletePlanArtifacts(store, "pln_draft", { slug: "bakery-2" }, { last: true });
    expect(await ensureProject(store, "pln_later", "Bakery")).toMatchObject({ slug: "bakery-3" });
  });

  it("a second sweep, given the slug, removes what a late publish wrote; a slug of another plan is never touched", async () => {
    await planWithSite("pln_mine");
    await planWithSite("pln_theirs");
    await deletePlanArtifacts(store, "pln_mine", { slug: "bakery" });
    await store.put("sites/bakery/index.html", "written by a stage that had not stopped yet");
    await deletePlanArtifacts(store, "pln_mine", { slug: "bakery" });
    expect(await store.list("sites/bakery/")).toEqual([]);
    await deletePlanArtifacts(store, "pln_mine", { slug: "bakery-2" });
    expect(await store.list("sites/bakery-2/")).toEqual(["sites/bakery-2/index.html"]);
  });
});
