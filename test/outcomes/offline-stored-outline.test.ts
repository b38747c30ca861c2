import type { JsonValue } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { pageContentSchema, type SiteOutline, type WebsiteBrief } from "../../src/outcomes/content.js";
import { validate } from "../../src/outcomes/json-schema.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { htmlProblems, outcomeDeps, readTree } from "./support/outcome-kit.js";
import { revise, runStages, type StageRun } from "./support/run-stages.js";

// Another version of the offline writer may read the same goal as another site (a
// change in how goals are read: a short Chinese goal was English, with a "services"
// page, and is now Chinese, with an "offer" page). During a rolling deploy a stage
// stored by one version is continued by the other, and after an upgrade a plan at the
// gate is revised by the new one: each stage builds on what the one before it stored.
const GOAL = 'A website for "Rosa Bakery", a small bakery in Lyon selling sourdough bread';
/** The page this version composes for the goal, and the one another version's reading gave it instead. */
const OURS = "menu";
const THEIRS = "services";

/** `run`'s stored `understand` and `outline` as another version would have stored them: its page `OURS` is `THEIRS`. */
function storedByAnotherVersion(run: StageRun): Record<string, JsonValue> {
  const slug = (value: string) => (value === OURS ? THEIRS : value);
  const understood = run.previous.understand as { writer: string; brief: WebsiteBrief };
  const outline = run.previous.outline as SiteOutline;
  const brief = {
    ...understood.brief,
    pages: understood.brief.pages.map((page) => ({ ...page, slug: slug(page.slug) })),
    callToAction: { ...understood.brief.callToAction, page: slug(understood.brief.callToAction.page) },
  };
  return {
    understand: { ...understood, brief },
    outline: { pages: outline.pages.map((page) => ({ ...page, slug: slug(page.slug) })) },
  };
}

/** The first draft up to `outline`, stored by another version. */
async function firstDraftElsewhere(planId: string) {
  const deps = await outcomeDeps({});
  const work = createStageWork(deps);
  const plan = { planId, goal: GOAL, outcome: "website" as const };
  const ours = await runStages(work, plan, { until: "outline" });
  expect((ours.previous.outline as SiteOutline).pages.map((p) => p.slug)).toContain(OURS);
  return { deps, work, plan, ours, stored: storedByAnotherVersion(ours) };
}

const theirPage = (outline: JsonValue) => (outline as SiteOutline).pages.find((p) => p.slug === THEIRS)!;

describe("the offline writer, continuing what another version stored", () => {
  it("writes a page the stored outline names and its own reading lacks, from the outline's entry (a stage handed over in a rolling deploy)", async () => {
    const { deps, work, plan, ours, stored } = await firstDraftElsewhere("pln_elsewhere1");
    const run = await runStages(work, plan, { from: { outcomes: { ...ours.outcomes }, previous: stored, progress: {} }, until: "build" });

    const pages = (run.previous.write as { pages: { slug: string; sections: { heading: string }[] }[] }).pages;
    expect(pages.map((p) => p.slug)).toEqual(["index", THEIRS, "about", "contact"]);
    const written = pages.find((p) => p.slug === THEIRS)!;
    expect(validate(pageContentSchema, written)).toEqual([]);
    const outlined = theirPage(stored.outline!);
    expect(written.sections.map((s) => s.heading)).toEqual(outlined.sections.map((s) => s.heading));

    const preview = await readTree(deps.artifacts, "preview/pln_elsewhere1/");
    const page = preview.get(`${THEIRS}.html`)!;
    expect(page).toContain(`<h1 id="section-1">${outlined.title}</h1>`);
    expect(page).toContain(outlined.description);
    expect(preview.get("index.html")).toContain(`href="${THEIRS}.html"`);
    expect(preview.has(`${OURS}.html`)).toBe(false);
    expect(await htmlProblems(preview)).toEqual([]);
  });

  it("outlines every page the stored brief lists, in its order (an outline stage handed over)", async () => {
    const { deps, work, plan, ours, stored } = await firstDraftElsewhere("pln_elsewhere4");
    const understood = { understand: ours.outcomes.understand! };
    const run = await runStages(work, plan, { from: { outcomes: understood, previous: { understand: stored.understand! }, progress: {} }, until: "build" });

    const listed = (stored.understand as { brief: WebsiteBrief }).brief.pages;
    expect((run.previous.outline as SiteOutline).pages.map((p) => p.slug)).toEqual(listed.map((p) => p.slug));
    const preview = await readTree(deps.artifacts, "preview/pln_elsewhere4/");
    expect(preview.get(`${THEIRS}.html`)).toContain(`<h1 id="section-1">${listed.find((p) => p.slug === THEIRS)!.title}</h1>`);
    expect(preview.get("index.html")).toContain(`href="${THEIRS}.html"`);
    expect(await htmlProblems(preview)).toEqual([]);
  });

  it("keeps every page the brief lists in a revision, carried from the previous draft and renamed with the site", async () => {
    const { deps, work, plan, stored } = await firstDraftElsewhere("pln_elsewhere2");
    const outcomes = await revise(work, { previous: stored }, plan, {
      number: 1,
      feedback: 'Call it "Maison Lumière" and make it calmer',
      draft: stored.outline!,
    });

    const outline = outcomes.outline!.output as SiteOutline;
    expect(outline.pages.map((p) => p.slug)).toEqual(["index", THEIRS, "about", "contact"]);
    const before = theirPage(stored.outline!);
    const carried = theirPage(outline);
    expect(carried.sections.map((s) => s.heading)).toEqual(before.sections.map((s) => s.heading));
    expect(before.description).toContain("Rosa Bakery");
    expect(carried.description).toBe(before.description.replace("Rosa Bakery", "Maison Lumière"));

    const preview = await readTree(deps.artifacts, "preview/pln_elsewhere2-r1/");
    const page = preview.get(`${THEIRS}.html`)!;
    expect(page).toContain("Maison Lumière");
    expect(page).not.toContain("Rosa Bakery");
    expect(preview.get("index.html")).toContain(`href="${THEIRS}.html"`);
    expect(outcomes.build!.output).toMatchObject({ theme: "calm" });
    expect(await htmlProblems(preview)).toEqual([]);
  });

  it("writes a page from the brief's own entry when there is no previous outline to carry it from", async () => {
    const { deps, work, plan, stored } = await firstDraftElsewhere("pln_elsewhere3");
    const outcomes = await revise(work, { previous: stored }, plan, { number: 1, feedback: "Make it bolder", draft: null });

    const listed = (stored.understand as { brief: WebsiteBrief }).brief.pages.find((p) => p.slug === THEIRS)!;
    const outline = outcomes.outline!.output as SiteOutline;
    expect(outline.pages.map((p) => p.slug)).toEqual(["index", THEIRS, "about", "contact"]);
    expect(theirPage(outline)).toMatchObject({ title: listed.title, navLabel: listed.title });

    const preview = await readTree(deps.artifacts, "preview/pln_elsewhere3-r1/");
    expect(preview.get(`${THEIRS}.html`)).toContain(`<h1 id="section-1">${listed.title}</h1>`);
    expect(await htmlProblems(preview)).toEqual([]);
  });
});
