import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { tidyPlainText } from "../../src/outcomes/writers/plain-text.js";
import { parseJsonAnswer } from "../../src/outcomes/writers/structured-completion.js";
import { canonicalJson } from "../../src/strings.js";
import { completion, FakeUpstream, fail, reply } from "../chat/support/fake-upstream.js";
import { answerFor, rawAnswer, schemaNameOf, SCRIPT_PARAGRAPH, writerModel } from "./support/model-answers.js";
import { failureOf, runStages, type StageRun } from "./support/run-stages.js";
import { htmlProblems, httpCompleter, outcomeDeps, readTree, readZip, routerCompleter } from "./support/outcome-kit.js";

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
      "404.html",
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

  it("finds the chapters written before a failed try when the stored outputs come back with their keys reordered, as jsonb does", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const plan = { planId: "pln_book3", outcome: "ebook" as const, goal: "A balcony vegetable guide" };
    const partial = await runStages(work, plan, { until: "outline" });
    upstream.next(writerModel, fail(500));
    await failureOf(runStages(work, plan, { from: partial }));
    // A retry reads the earlier stages' outputs back from Postgres.
    const stored: StageRun = { ...partial, previous: asJsonb(partial.previous) };
    expect(JSON.stringify(stored.previous)).not.toBe(JSON.stringify(partial.previous));
    const before = upstream.requests.length;
    await runStages(work, plan, { from: stored, attempt: 2 });
    expect(upstream.requests.length - before).toBe(2); // chapters 2 and 3 only
  });

  it("tidies an answer before judging it: one left empty by the tidying goes back to the model", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const markdownOnly = rawAnswer(JSON.stringify({ ...(answerFor("website_brief", {}) as object), name: "## " }));
    upstream.next(markdownOnly);
    const fixed = await runStages(work, { planId: "pln_md1", outcome: "website", goal: "Sea kayaking trips" }, { until: "understand" });
    expect(upstream.requests).toHaveLength(2);
    expect(lastMessage(upstream.requests[1]!.body)).toContain("$.name: expected at least 1 characters, got 0");
    expect(fixed.outcomes.understand!.project!.name).toBe("Harbour Lights Kayaks");

    upstream.next(markdownOnly, markdownOnly);
    const failure = await failureOf(runStages(work, { planId: "pln_md2", outcome: "website", goal: "Sea kayaking trips" }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toContain("$.name: expected at least 1 characters, got 0");
  });

  it("says the model refused, quoting its refusal, to the model and on the stage", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const refusal = answerWith({ content: null, refusal: "I'm sorry, I cannot help with that." }, "stop");
    upstream.next(refusal, refusal);
    const failure = await failureOf(runStages(work, { planId: "pln_refuse", outcome: "website", goal: "Sea kayaking trips" }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toContain(`the model refused to answer: "I'm sorry, I cannot help with that."`);
    expect(failure.message).not.toContain("empty");
    expect(lastMessage(upstream.requests[1]!.body)).toContain(`the model refused to answer: "I'm sorry, I cannot help with that."`);
  });

  it("says an answer stopped at the length limit was cut off", async () => {
    const deps = await upstreamDeps();
    const work = createStageWork(deps);
    const cut = JSON.stringify(answerFor("website_brief", {})).slice(0, 80);
    upstream.next(answerWith({ content: cut, refusal: null }, "length"));
    await runStages(work, { planId: "pln_cut", outcome: "website", goal: "Sea kayaking trips" }, { until: "understand" });
    expect(upstream.requests).toHaveLength(2);
    expect(lastMessage(upstream.requests[1]!.body)).toContain("the answer was cut off at the length limit");
  });

  it("tells what a provider's 400 means for the writer, with the router's error type", async () => {
    const chat = await routerCompleter(upstream.url);
    try {
      const deps = await outcomeDeps({ chat, upstream: true });
      upstream.next(fail(400, "response_format json_schema is not supported by this model"));
      const failure = await failureOf(runStages(createStageWork(deps), { planId: "pln_400", outcome: "website", goal: "Sea kayaking trips" }));
      expect(failure.type).toBe("invalid_request");
      expect(failure.message).toContain("refused the writer's request");
      expect(failure.message).toContain("OpenAI structured outputs");
      expect(failure.message).not.toContain("check it against the OpenAI chat format");
    } finally {
      await chat.close();
    }
  });

  it("carries a busy provider's Retry-After on the stage failure, but not the free pool's wait until midnight", async () => {
    const chat = await routerCompleter(upstream.url);
    try {
      const deps = await outcomeDeps({ chat, upstream: true });
      upstream.next(reply({ error: { message: "slow down", type: "rate_limit_error" } }, 429, { "retry-after": "30" }));
      const busy = await failureOf(runStages(createStageWork(deps), { planId: "pln_429", outcome: "website", goal: "Sea kayaking trips" }));
      expect(busy.type).toBe("upstream_error");
      expect(busy.message).toBe("the model is busy right now; try again in 30 s");
      expect(busy.retryAfterMs).toBe(30_000);
    } finally {
      await chat.close();
    }
    // The router's own refusal when the day's pool is spent (a capacity of none), before it asks any upstream.
    const spentPool = await routerCompleter(upstream.url, { capacity: 0 });
    try {
      const asked = upstream.requests.length;
      const deps = await outcomeDeps({ chat: spentPool, upstream: true });
      const spent = await failureOf(runStages(createStageWork(deps), { planId: "pln_spent", outcome: "website", goal: "Sea kayaking trips" }));
      expect(spent.type).toBe("zero_capacity_unavailable");
      expect(spent.message).toMatch(/the shared free pool is spent for today; it refills at \d{4}-\d\d-\d\dT00:00:00Z/);
      expect(spent.retryAfterMs).toBeUndefined();
      expect(upstream.requests).toHaveLength(asked);
    } finally {
      await spentPool.close();
    }
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
    expect(failure.message).toMatch(/the website brief could not be used, even after a retry/);
    expect(failure.message).toContain('missing property "tagline"');
    expect(upstream.requests).toHaveLength(2);
    expect((upstream.requests[1]!.body.messages as { content: string }[]).at(-1)!.content).toContain('$: missing property "tagline"');
  });

  it("turns router errors into stage failures of the same type", async () => {
    // The router refuses with its own error when the day's free pool is spent (a capacity of none).
    const chat = await routerCompleter(upstream.url, { capacity: 0 });
    try {
      const deps = await outcomeDeps({ upstream: true, chat });
      const failure = await failureOf(runStages(createStageWork(deps), { planId: "pln_pool", outcome: "ebook", goal: "A book" }));
      expect(failure.type).toBe("zero_capacity_unavailable");
      expect(failure.message).toMatch(/^the shared free pool is spent for today; it refills at /);
    } finally {
      await chat.close();
    }
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

  it("drops the characters Postgres and XML cannot hold from every string, keys and refusals included, and keeps whole surrogate pairs", () => {
    const answer = String.raw`{"na\u0000me": "Tab\tand\u0001 NUL\u0000\ufffe", "pages": ["half \ud800 pair", "\udc00 other half", "whole \ud83d\ude00 pair"]}`;
    expect(parseJsonAnswer(answer)).toEqual({
      ok: true,
      value: { name: "Tab\tand NUL", pages: ["half \ufffd pair", "\ufffd other half", "whole \u{1F600} pair"] },
    });
    expect(parseJsonAnswer(null, { refusal: "No\u0000 thanks\ud800" })).toEqual({ ok: false, problem: `the model refused to answer: "No thanks\ufffd"` });
  });

  it("tells a refusal and an answer cut off at the length limit from an answer that is not JSON", () => {
    const refusal = "I'm sorry, I cannot help with that.";
    expect(parseJsonAnswer(null, { refusal })).toEqual({ ok: false, problem: `the model refused to answer: "${refusal}"` });
    const long = parseJsonAnswer(null, { refusal: `I'm sorry${", truly".repeat(500)}.` });
    expect(long.ok === false && long.problem.length).toBeLessThan(300);
    expect(parseJsonAnswer('{"a": [1, 2', { finishReason: "length" })).toEqual({
      ok: false,
      problem: "the answer was cut off at the length limit before its JSON was complete",
    });
    expect(parseJsonAnswer('{"a": 1}', { finishReason: "length" })).toEqual({ ok: true, value: { a: 1 } });
  });
});

describe("canonicalJson", () => {
  it("is the same for the same value, whatever order its keys came in", () => {
    const brief = answerFor("ebook_brief", {});
    expect(canonicalJson({ brief, index: 1 })).toBe(canonicalJson(asJsonb({ index: 1, brief })));
    expect(canonicalJson({ b: [{ y: 1, x: null }], a: "1" })).toBe('{"a":"1","b":[{"x":null,"y":1}]}');
  });
});

/** `value` as Postgres `jsonb` gives it back: each object's keys shortest first, then bytewise. */
function asJsonb<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => asJsonb(item)) as T;
  if (typeof value !== "object" || value === null) return value;
  const keys = Object.keys(value).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((key) => [key, asJsonb((value as Record<string, unknown>)[key])])) as T;
}

/** A completion whose one choice has this message and finish reason. */
function answerWith(message: { content: string | null; refusal: string | null }, finishReason: string) {
  return reply(
    completion(message.content, { choices: [{ index: 0, message: { role: "assistant", ...message }, logprobs: null, finish_reason: finishReason }] }),
  );
}

/** The text of the last message of a request to the model: the problems of a retry. */
function lastMessage(body: Record<string, unknown>): string {
  return (body.messages as { content: string }[]).at(-1)!.content;
}
