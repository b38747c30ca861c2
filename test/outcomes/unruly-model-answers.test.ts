import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { completion, FakeUpstream, reply } from "../chat/support/fake-upstream.js";
import { answerFor, rawAnswer, writerModel } from "./support/model-answers.js";
import { failureOf, runStages } from "./support/run-stages.js";
import { outcomeDeps, readTree, routerCompleter } from "./support/outcome-kit.js";

/**
 * Answers no well-behaved model gives, through the real chat router to a
 * fake provider: each is a problem sent back to the model once, then a
 * short, clear stage error; none is an internal error, a megabyte of
 * history or junk on a published page.
 */

let upstream: FakeUpstream;
let chat: Awaited<ReturnType<typeof routerCompleter>>;
beforeAll(async () => {
  upstream = await FakeUpstream.start();
  chat = await routerCompleter(upstream.url);
});
afterAll(async () => {
  await chat.close();
  await upstream.close();
});
beforeEach(() => {
  upstream.reset();
  upstream.otherwise(writerModel);
});

const goal = "Sea kayaking trips for beginners";
const brief = answerFor("website_brief", {}) as Record<string, unknown>;
const briefWith = (changes: Record<string, unknown>) => rawAnswer(JSON.stringify({ ...brief, ...changes }));

async function stageWork() {
  return createStageWork(await outcomeDeps({ chat, upstream: true }));
}

/** The text of the last message of a request to the model: the problems of a retry. */
function lastMessage(index: number): string {
  return (upstream.requests[index]!.body.messages as { content: string }[]).at(-1)!.content;
}

describe("an unruly model answer", () => {
  it("quotes the model's own words in its problems cut short, so a huge key or value makes a short stage error", async () => {
    const huge = briefWith({ ["k".repeat(500_000)]: 1, tone: "t".repeat(500_000) });
    upstream.next(huge, huge);
    const failure = await failureOf(runStages(await stageWork(), { planId: "pln_huge", outcome: "website", goal }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toContain("$.tone: expected one of");
    expect(failure.message).toContain('got "ttt');
    expect(failure.message).toContain('unexpected property "kkk');
    expect(failure.message).toContain("\u2026");
    expect(failure.message.length).toBeLessThan(1000);
    expect(lastMessage(1).length).toBeLessThan(1000);
  });

  it("lists a bounded number of problems however many unknown properties an answer has", async () => {
    const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`extra${i}`, i]));
    upstream.next(briefWith(many), briefWith(many));
    const failure = await failureOf(runStages(await stageWork(), { planId: "pln_many", outcome: "website", goal }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toContain('unexpected property "extra0"');
    expect(lastMessage(1).length).toBeLessThan(2000);
  });

  it("asks again about an answer nested far deeper than its schema, then fails it as invalid output, not as an internal error", async () => {
    const deep = rawAnswer(`{"name":${"[".repeat(20_000)}${"]".repeat(20_000)}}`);
    upstream.next(deep);
    const fixed = await runStages(await stageWork(), { planId: "pln_deep1", outcome: "website", goal }, { until: "understand" });
    expect(upstream.requests).toHaveLength(2);
    expect(lastMessage(1)).toContain("nested deeper than its schema");
    expect(fixed.outcomes.understand!.project!.name).toBe("Harbour Lights Kayaks");

    upstream.next(deep, deep);
    const failure = await failureOf(runStages(await stageWork(), { planId: "pln_deep2", outcome: "website", goal }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toContain("nested deeper than its schema");
  });

  it("says the provider's content filter stopped the answer, not that it was empty", async () => {
    const filtered = reply(
      completion("", { choices: [{ index: 0, message: { role: "assistant", content: "", refusal: null }, logprobs: null, finish_reason: "content_filter" }] }),
    );
    upstream.next(filtered, filtered);
    const failure = await failureOf(runStages(await stageWork(), { planId: "pln_filter", outcome: "website", goal }));
    expect(failure.type).toBe("invalid_model_output");
    expect(failure.message).toContain("the model provider's content filter stopped the answer");
    expect(failure.message).not.toContain("empty");
    expect(lastMessage(1)).toContain("content filter");
  });

  // Found making ebooks: a goal asking for 30 chapters failed the plan when the model gave 30 twice.
  it("keeps what fits of an answer that is too long even after it was told, rather than failing the plan", async () => {
    const bookBrief = rawAnswer(JSON.stringify(answerFor("ebook_brief", {})));
    const chapters = Array.from({ length: 30 }, (_, i) => ({ title: `Part ${i + 1}`, summary: "What it covers.", keyPoints: ["A point"] }));
    const tooMany = rawAnswer(JSON.stringify({ chapters }));
    const sentence = "Water the pots in the morning, before the sun is on them. ";
    const tooLong = rawAnswer(JSON.stringify({ title: "Part 1", sections: [{ heading: "", paragraphs: [sentence.repeat(60)] }] }));
    upstream.next(bookBrief, tooMany, tooMany, tooLong, tooLong);
    const run = await runStages(await stageWork(), { planId: "pln_thirty", outcome: "ebook", goal: "A gardening book in thirty chapters" }, { until: "write" });
    expect(lastMessage(2)).toContain("$.chapters: expected at most 24 items, got 30");
    const outline = run.previous.outline as { chapters: { title: string }[] };
    expect(outline.chapters.map((c) => c.title)).toEqual(chapters.slice(0, 24).map((c) => c.title));
    const written = run.previous.write as { chapters: { sections: { paragraphs: string[] }[] }[] };
    expect(written.chapters).toHaveLength(24);
    const paragraph = written.chapters[0]!.sections[0]!.paragraphs[0]!;
    // Whole sentences, as many as fit.
    expect(paragraph.length).toBeLessThanOrEqual(3000);
    expect(paragraph.length).toBeGreaterThan(2900);
    expect(paragraph.endsWith("before the sun is on them.")).toBe(true);
  });

  it("counts a name of nothing visible as missing and asks again", async () => {
    upstream.next(briefWith({ name: "\u200B\u200B" }));
    const run = await runStages(await stageWork(), { planId: "pln_invisible", outcome: "website", goal }, { until: "understand" });
    expect(upstream.requests).toHaveLength(2);
    expect(lastMessage(1)).toContain("$.name: expected at least 1 characters, got 0");
    expect(run.outcomes.understand!.project).toMatchObject({ name: "Harbour Lights Kayaks", slug: "harbour-lights-kayaks" });
  });

  it("keeps bidi controls out of names and titles, and controls out of page text", async () => {
    const deps = await outcomeDeps({ chat, upstream: true });
    upstream.next(briefWith({ name: "Harbour \u202ELights\u202C Kayaks", tagline: "Guided trips \u202Efor\u0085 beginners\u009B" }));
    const run = await runStages(createStageWork(deps), { planId: "pln_bidi", outcome: "website", goal }, { until: "build" });
    expect(run.outcomes.understand!.project).toMatchObject({ name: "Harbour Lights Kayaks" });
    const preview = await readTree(deps.artifacts, "preview/pln_bidi/");
    const home = preview.get("index.html")!;
    expect(home).toContain("<title>Harbour Lights Kayaks");
    expect(home).toContain("Guided trips for beginners");
    for (const [file, text] of preview) expect(`${file}: ${/[\u202A-\u202E\u2066-\u2069\u007F-\u009F]/.test(text)}`).toBe(`${file}: false`);
  });
});
