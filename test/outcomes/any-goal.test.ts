import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageContentSchema, siteOutlineSchema, websiteBriefSchema } from "../../src/outcomes/content.js";
import { shorten, validate } from "../../src/outcomes/json-schema.js";
import { createOfflineWriter } from "../../src/outcomes/writers/offline-writer.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { LONG_QUOTED_NAME } from "./support/goal-corpus.js";

/**
 * The offline writer is the first thing a newcomer meets: no goal a person
 * can type (8 to 2,000 code points) may fail a plan. Its answers are built
 * from the goal's own words, so they are checked against the very schemas
 * the next stage validates them with.
 */
const writer = createOfflineWriter();
const context = { accountId: "acc_test", signal: new AbortController().signal } as Parameters<typeof writer.websiteBrief>[1];

async function problemsFor(goal: string): Promise<string[]> {
  const brief = await writer.websiteBrief(goal, context);
  const outline = await writer.siteOutline(goal, brief, context);
  const problems = [...validate(websiteBriefSchema, brief), ...validate(siteOutlineSchema, outline)];
  for (const page of outline.pages) problems.push(...validate(pageContentSchema, await writer.page(goal, brief, outline, page.slug, context)));
  return problems;
}

/** A business name of 75 characters: "About <name>" overflowed a page title's 60. */
const LONG_NAME = "The Extraordinarily Long Named Neighbourhood Association Of Upper Riverside";
const LONG_NAME_GOAL = `We need a site for ${LONG_NAME}, a community group that runs a garden and a repair cafe.`;
/** A quoted name as long as a brief's name may be, in eleven words: kept whole, it must still fit every title and slug made from it. */
const LONGEST_QUOTED_NAME = `${LONG_QUOTED_NAME} Cafe`;
const LONGEST_QUOTED_NAME_GOAL = `A website for "${LONGEST_QUOTED_NAME}" in Inverness`;
/** 2,000 characters asking for more sections than a page may hold. */
const LONG_GOAL = (
  "We want a website for our family bakery in Lyon with prices and a menu and events and a timetable and a newsletter " +
  "and a blog and catering and gift cards and a loyalty scheme and job openings and allergen information and "
)
  .repeat(12)
  .slice(0, 2000);

describe("the offline writer fits every answer to its stage's schema", () => {
  it("for the two goals that failed plans: a 2,000-character goal and a 75-character business name", async () => {
    expect([...LONG_GOAL].length).toBe(2000);
    expect(LONG_NAME.length).toBe(75);
    expect(await problemsFor(LONG_GOAL)).toEqual([]);
    expect(await problemsFor(LONG_NAME_GOAL)).toEqual([]);
  });

  it("for a quoted name as long as the brief's name may be, kept whole", async () => {
    expect(LONGEST_QUOTED_NAME.length).toBe(websiteBriefSchema.properties.name.maxLength);
    expect((await writer.websiteBrief(LONGEST_QUOTED_NAME_GOAL, context)).name).toBe(LONGEST_QUOTED_NAME);
    expect(await problemsFor(LONGEST_QUOTED_NAME_GOAL)).toEqual([]);
  });

  it("for any text of 8 to 2,000 code points", async () => {
    const words = fc.constantFrom(
      "a",
      "website",
      "for",
      "my",
      "bakery",
      "called",
      "with",
      "and",
      "in",
      "Lyon",
      "selling",
      "bread,",
      "cakes.",
      '"Maison',
      'Dupont"',
      "hours",
      "order",
      "prices",
      "events",
      "we",
      "want",
      "سلام",
      "東京",
      "🥐",
      "Ñandú",
      "\n",
      "https://x.example",
      "a@b.example",
      "+44 20 7946 0000",
    );
    const goal = fc
      .oneof(
        fc.string({ unit: "grapheme", minLength: 8, maxLength: 2000 }),
        fc.string({ unit: "binary", minLength: 8, maxLength: 2000 }),
        fc.array(words, { minLength: 3, maxLength: 500 }).map((w) => w.join(" ")),
      )
      .map((text) => [...text.trim()].slice(0, 2000).join(""))
      .filter((text) => [...text].length >= 8);
    await fc.assert(
      fc.asyncProperty(goal, async (text) => {
        expect(await problemsFor(text)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it("shortens at sentence or word boundaries, never mid-word and never on a dangling word", () => {
    expect(shorten("We bake bread. We also sell cakes and pies.", 20)).toBe("We bake bread.");
    expect(shorten("Sourdough loaves and birthday cakes for everyone", 30)).toBe("Sourdough loaves and birthday\u2026");
    expect(shorten("Bread for the people of the town", 24)).toBe("Bread for the people\u2026");
    expect([...shorten("東京".repeat(100), 10)].length).toBe(10);
    expect(shorten("short", 10)).toBe("short");
  });
});

describe("through the real service, those goals reach the review gate", () => {
  let app: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    app = await startTestApp(); // no upstream: the offline writer
    account = await createAccountWithKey(app, ["build", "read"]);
  });
  afterAll(() => app.close());

  for (const [label, goal] of [
    ["a 2,000-character goal", LONG_GOAL],
    ["a 75-character business name", LONG_NAME_GOAL],
    ["an 80-character quoted name", LONGEST_QUOTED_NAME_GOAL],
  ] as const) {
    it(label, async () => {
      const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal });
      expect(created.status).toBe(202);
      const plan = await waitForPlan(app.url, { apiKey: account.apiKey }, created.body.plan.id, (p) => p.status !== "running", 90_000);
      expect(plan.stages.filter((s) => s.state === "failed").map((s) => s.error)).toEqual([]);
      expect(plan.status).toBe("awaiting_approval");
    }, 120_000);
  }
});
