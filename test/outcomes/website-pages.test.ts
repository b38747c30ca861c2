import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { completion, FakeUpstream, fail, reply, type Behavior } from "../chat/support/fake-upstream.js";
import { answerFor, schemaNameOf, writerModel } from "./support/model-answers.js";
import { httpCompleter, outcomeDeps, readTree } from "./support/outcome-kit.js";
import { failureOf, revise, runStages } from "./support/run-stages.js";

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await FakeUpstream.start();
});
afterAll(() => upstream.close());
beforeEach(() => {
  upstream.reset();
  upstream.otherwise(writerModel);
});

async function upstreamDeps() {
  return outcomeDeps({ chat: httpCompleter(upstream.url), upstream: true });
}

const pagesAsked = (from: number) => upstream.requests.slice(from).filter((r) => schemaNameOf(r.body) === "page_content").length;

/** The scripted model, with its pages named in Japanese and Chinese ("关于" is "about"), the button and every link leading to "关于". */
const nonLatinModel: Behavior = (exchange) => {
  const name = schemaNameOf(exchange.body);
  const answer = answerFor(name, exchange.body) as Record<string, unknown>;
  if (name === "website_brief") {
    answer.pages = [
      { slug: "index", title: "首页", purpose: "Introduce the trips" },
      { slug: "日本語", title: "日本語", purpose: "The trips in Japanese" },
      { slug: "关于", title: "关于", purpose: "Who we are and how to book" },
    ];
    answer.callToAction = { label: "联系我们", page: "关于" };
  }
  if (name === "site_outline") {
    const [home, , contact] = answer.pages as Record<string, unknown>[];
    answer.pages = [
      { ...home, slug: "index", title: "首页", navLabel: "首页" },
      { ...home, slug: "日本語", title: "日本語", navLabel: "日本語" },
      { ...contact, slug: "关于", title: "关于", navLabel: "关于" },
    ];
  }
  if (name === "page_content")
    for (const section of answer.sections as { link: { label: string; page: string } }[]) section.link = { label: "联系我们", page: "关于" };
  return reply(completion(JSON.stringify(answer)))(exchange);
};

describe("pages named in a script without Latin letters", () => {
  it("get a file each, and the call to action and every link lead to the page they name", async () => {
    upstream.otherwise(nonLatinModel);
    const deps = await upstreamDeps();
    const run = await runStages(createStageWork(deps), {
      planId: "pln_cjk",
      outcome: "website",
      goal: "Sea kayaking trips, for visitors from Japan and China",
    });

    const brief = (run.previous.understand as { brief: { pages: { slug: string; title: string }[]; callToAction: { page: string } } }).brief;
    const about = brief.pages.find((p) => p.title === "关于")!;
    const japanese = brief.pages.find((p) => p.title === "日本語")!;
    expect(about.slug).not.toBe(japanese.slug);
    expect(brief.callToAction.page).toBe(about.slug);

    const site = await readTree(deps.artifacts, `sites/${run.outcomes.understand!.project!.slug}/`);
    const aboutFile = [...site.entries()].find(([file, page]) => file.endsWith(".html") && page.includes("<title>关于"))?.[0];
    const japaneseFile = [...site.entries()].find(([file, page]) => file.endsWith(".html") && page.includes("<title>日本語"))?.[0];
    expect(aboutFile).toBeDefined();
    expect(japaneseFile).toBeDefined();
    expect(aboutFile).not.toBe(japaneseFile);
    for (const file of ["index.html", japaneseFile!]) {
      expect(site.get(file)).toContain(`<a class="button" href="${aboutFile}">联系我们</a>`);
      expect(site.get(file)).not.toContain(`<a class="button" href="${japaneseFile}">`);
    }
  });
});

describe("the write stage of a website", () => {
  const plan = { planId: "pln_pages", outcome: "website" as const, goal: "Sea kayaking trips for beginners" };

  it("asks again only for the pages a failed try did not finish, on a retry and on a resume", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const partial = await runStages(work, plan, { until: "outline" });
    upstream.next(writerModel, writerModel, fail(503));
    expect((await failureOf(runStages(work, plan, { from: partial }))).type).toBe("upstream_error");

    const before = upstream.requests.length;
    const resumed = await runStages(work, plan, { from: partial, attempt: 2 });
    expect(pagesAsked(before)).toBe(1); // the contact page only
    const site = await readTree(deps.artifacts, `sites/${resumed.outcomes.understand!.project!.slug}/`);
    expect([...site.keys()].filter((file) => file.endsWith(".html")).sort()).toEqual(["404.html", "contact.html", "index.html", "trips.html"]);
  });

  it("writes every page again for another outline, and for a revision's feedback", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const partial = await runStages(work, { ...plan, planId: "pln_pages2" }, { until: "outline" });
    upstream.next(writerModel, writerModel, fail(503));
    await failureOf(runStages(work, { ...plan, planId: "pln_pages2" }, { from: partial }));

    // The outline is written again (a resume from "outline"), differently: no page written for the old one fits it.
    const retitled: Behavior = (exchange) => {
      const answer = answerFor("site_outline", exchange.body) as { pages: { title: string; navLabel: string }[] };
      for (const page of answer.pages) page.navLabel = `${page.title} ›`;
      return reply(completion(JSON.stringify(answer)))(exchange);
    };
    upstream.next(retitled);
    const { outline: _old, ...upToUnderstand } = partial.outcomes;
    const { outline: _oldOutput, ...previous } = partial.previous;
    let before = upstream.requests.length;
    const first = await runStages(work, { ...plan, planId: "pln_pages2" }, { from: { outcomes: upToUnderstand, previous, progress: {} }, attempt: 2 });
    expect(pagesAsked(before)).toBe(3);

    before = upstream.requests.length;
    await revise(work, first, { ...plan, planId: "pln_pages2" }, { number: 1, feedback: "Make it calmer", draft: first.previous.outline ?? null });
    expect(pagesAsked(before)).toBe(3);
  });
});
