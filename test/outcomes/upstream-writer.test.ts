import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { tidyPlainText } from "../../src/outcomes/writers/plain-text.js";
import { parseJsonAnswer } from "../../src/outcomes/writers/structured-completion.js";
import { FakeUpstream, fail } from "../chat/support/fake-upstream.js";
import { answerFor, rawAnswer, schemaNameOf, SCRIPT_PARAGRAPH, writerModel } from "./support/model-answers.js";
import { failureOf, runStages } from "./support/run-stages.js";
import { htmlProblems, httpCompleter, outcomeDeps, readTree, readZip } from "./support/outcome-kit.js";

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
  const chat = httpCompleter(upstream.url);
  return { ...(await outcomeDeps({ chat, upstream: true })), chat };
}

describe("upstream writer at the stage level", () => {
  it("drives a website from understand to publish with structured-output requests", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const run = await runStages(work, { planId: "pln_site1", outcome: "website", goal: "Sea kayaking trips for beginners" });

    // Every request asks for strict JSON schema output under the service's alias.
    for (const request of upstream.requests) {
      expect(request.body.model).toBe("project-zero");
      const format = request.body.response_format as { type: string; json_schema: { strict: boolean; schema: { type: string } } };
      expect(format.type).toBe("json_schema");
      expect(format.json_schema.strict).toBe(true);
      expect(format.json_schema.schema.type).toBe("object");
    }
    expect(upstream.requests.map((r) => schemaNameOf(r.body))).toEqual(["website_brief", "site_outline", "page_content", "page_content", "page_content"]);

    expect(run.outcomes.understand!.project).toMatchObject({ name: "Harbour Lights Kayaks", slug: "harbour-lights-kayaks" });
    expect(run.outcomes.understand!.project!.id).toMatch(/^prj_/);
    expect(run.outcomes.understand!.warning).toBeUndefined();
    expect(run.progress.write).toEqual([1 / 3, 2 / 3, 1]);
    expect(run.outcomes.build!.previewUrl).toBe("http://zero.test/preview/pln_site1/");
    expect(run.outcomes.publish!.publishedUrl).toBe("http://zero.test/sites/harbour-lights-kayaks/");

    const site = await readTree(deps.artifacts, "sites/harbour-lights-kayaks/");
    // The model's "Trips" slug became a file name; links and nav agree on it.
    expect([...site.keys()].sort()).toEqual([
      "404.html",
      "contact.html",
      "favicon.svg",
      "hero.svg",
      "index.html",
      "og.svg",
      "robots.txt",
      "sitemap.xml",
      "style.css",
      "trips.html",
    ]);
    const home = site.get("index.html")!;
    expect(home).toContain('href="trips.html"');
    // Model text is text: the script arrives escaped, never as markup.
    expect(home).not.toContain("<script");
    expect(home).toContain("&lt;script&gt;");
    expect(SCRIPT_PARAGRAPH).toContain("<script>");
    expect(await htmlProblems(site)).toEqual([]);
  });

  it("drives an ebook to an EPUB and a reader, one call per chapter with progress", async () => {
    const deps = await upstreamDeps();
    const run = await runStages(createStageWork(deps), { planId: "pln_book1", outcome: "ebook", goal: "A balcony vegetable guide" });
    expect(upstream.requests.map((r) => schemaNameOf(r.body))).toEqual(["ebook_brief", "book_outline", "chapter", "chapter", "chapter"]);
    expect(run.progress.write).toEqual([1 / 3, 2 / 3, 1]);
    expect(run.outcomes.assemble!.previewUrl).toBe("http://zero.test/preview/pln_book1/");
    expect(run.outcomes.publish!.publishedUrl).toBe("http://zero.test/books/the-patient-gardener/");
    const book = await readTree(deps.artifacts, "books/the-patient-gardener/");
    expect([...book.keys()].sort()).toEqual([
      "chapter-01.html",
      "chapter-02.html",
      "chapter-03.html",
      "cover.svg",
      "index.html",
      "style.css",
      "the-patient-gardener.epub",
    ]);
    expect(book.get("index.html")).toContain('href="the-patient-gardener.epub"');
    expect(book.get("index.html")).toContain('<img class="cover-art" src="cover.svg" alt="" width="600" height="900">');
    expect(book.get("chapter-01.html")).toContain("Watch it for a day &lt;b&gt;before&lt;/b&gt;");
    expect(await htmlProblems(book)).toEqual([]);

    const epub = await deps.artifacts.get("books/the-patient-gardener/the-patient-gardener.epub");
    const entries = readZip(epub!);
    expect(entries[0]).toEqual({ name: "mimetype", method: 0, text: "application/epub+zip" });
    expect(entries.map((e) => e.name)).toContain("EPUB/package.opf");
    expect(entries.find((e) => e.name === "EPUB/chapter-01.xhtml")!.text).toContain('<h1 id="chapter-title">Light &amp; Space</h1>');
  });

  it("resumes a failed chapter run without paying again for the chapters already written", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const plan = { planId: "pln_book2", outcome: "ebook" as const, goal: "A balcony vegetable guide" };
    const partial = await runStages(work, plan, { until: "outline" });
    upstream.next(writerModel, fail(500));
    const failure = await failureOf(runStages(work, plan, { from: partial }));
    expect(failure.type).toBe("upstream_error");
    const before = upstream.requests.length;
    const resumed = await runStages(work, plan, { from: partial, attempt: 2 });
    expect(upstream.requests.length - before).toBe(2); // chapters 2 and 3 only
    expect(resumed.outcomes.publish!.publishedUrl).toBe("http://zero.test/books/the-patient-gardener/");
  });

  it("repairs a fenced answer locally and asks once more after a malformed one", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const brief = JSON.stringify(answerFor("website_brief", {}));
    upstream.next(rawAnswer(`Here you go:\n\`\`\`json\n${brief.replace(/}$/, ",}")}\n\`\`\``));
    const first = await runStages(work, { planId: "pln_fix1", outcome: "website", goal: "Sea kayaking trips" }, { until: "understand" });
    expect(first.outcomes.understand!.project!.name).toBe("Harbour Lights Kayaks");
    expect(upstream.requests).toHaveLength(1);

    upstream.reset();
    upstream.otherwise(writerModel);
    upstream.next(rawAnswer('{"name": "Half an answer", "tone": "loud"'));
    await runStages(work, { planId: "pln_fix2", outcome: "website", goal: "Sea kayaking trips" }, { until: "understand" });
    expect(upstream.requests).toHaveLength(2);
    const retry = upstream.requests[1]!.body.messages as { role: string; content: string }[];
    expect(retry.at(-1)!.content).toContain("not valid JSON");
  });

  it("fails the stage with invalid_model_output and the problems when the retry is wrong too", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    upstream.next(rawAnswer('{"name": "x"}'), rawAnswer('{"name": "x", "tone": "loud"}'));
    const failure = await failureOf(runStages(work, { planId: "pln_bad1", outcome: "website", goal: "Sea kayaking trips" }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toMatch(/the website brief did not follow the expected JSON shape, even after a retry/);
    expect(failure.message).toContain('missing property "tagline"');
    expect(upstream.requests).toHaveLength(2);
    expect((upstream.requests[1]!.body.messages as { content: string }[]).at(-1)!.content).toContain('$: missing property "tagline"');
  });

  it("turns router errors into stage failures of the same type", async () => {
    const deps = await outcomeDeps({
      upstream: true,
      chat: {
        complete: async () => {
          const { ServiceError } = await import("../../src/server/errors.js");
          throw new ServiceError("zero_capacity_unavailable", "the free pool is exhausted until 00:00 UTC");
        },
      },
    });
    const failure = await failureOf(runStages(createStageWork(deps), { planId: "pln_pool", outcome: "ebook", goal: "A book" }));
    expect(failure.type).toBe("zero_capacity_unavailable");
    expect(failure.message).toBe("the free pool is exhausted until 00:00 UTC");
  });
});

describe("tidyPlainText", () => {
  it("removes the Markdown a model slips into plain text, and nothing else", () => {
    expect(tidyPlainText({ a: ["**Fresh** bread", "## Our story", "Use `npm` *daily*", "2 * 3 * 4 = 24", "snake_case_name"] })).toEqual({
      a: ["Fresh bread", "Our story", "Use npm daily", "2 * 3 * 4 = 24", "snake_case_name"],
    });
  });
});

describe("parseJsonAnswer", () => {
  it("repairs fences, surrounding prose and trailing commas, and names what it cannot", () => {
    expect(parseJsonAnswer('```json\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonAnswer('Sure! {"a": [1, 2,],} Hope that helps')).toEqual({ ok: true, value: { a: [1, 2] } });
    expect(parseJsonAnswer("no json here")).toEqual({ ok: false, problem: "the answer was not valid JSON" });
    expect(parseJsonAnswer(null)).toEqual({ ok: false, problem: "the answer was empty" });
  });
});
