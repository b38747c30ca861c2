import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { readProject } from "../../src/outcomes/projects.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { outcomeDeps, readTree } from "./support/outcome-kit.js";
import { LONG_QUOTED_NAME } from "./support/goal-corpus.js";
import { runStages } from "./support/run-stages.js";

/**
 * The name the offline writer gives a site (and so its project) comes from
 * the goal: the name it gives, or (in English) one made of its own words,
 * its subject and place. A goal it cannot read and that quotes no name
 * gets a name that says there is none yet, never a word the goal did not
 * use passed off as one (it was "Welcome").
 */
const UNTITLED = "Untitled site";
const NAMES: [goal: string, name: string][] = [
  ["A website for a bicycle repair cafe in Utrecht", "Utrecht Bicycle Repair Cafe"],
  ["A bakery in München", "München Bakery"],
  ["A tea house in Kyoto", "Kyoto Tea House"],
  ["A sushi bar in São Paulo", "São Paulo Sushi Bar"],
  ["A small bistro in Lyon", "Lyon Bistro"],
  ['A website for "Shop Number 11", a bicycle shop in Utrecht', "Shop Number 11"],
  ["موقع لمخبز صغير في القاهرة يبيع الخبز البلدي والكعك", UNTITLED],
  ["موقع إلكتروني لـ«مخبز الأمل»، مخبز صغير في القاهرة", "مخبز الأمل"],
  ["京都の和菓子屋のウェブサイトを作ってください", UNTITLED],
  ["京都の和菓子屋「さくら堂」のウェブサイト", "さくら堂"],
  ["Make me a website", UNTITLED],
  // Words that only look like names: weekdays, acronyms, code, an address's scheme. The subject and place name the site instead.
  ["A bakery in Leeds, open Tuesday to Sunday", "Leeds Bakery"],
  ["A dentist in Leeds, open Mon-Sat", "Leeds Dentist"],
  ["A yoga studio in Berlin, open Mon-Fri 9-5", "Berlin Yoga Studio"],
  ["Website for an IT support company in London, 24/7 help", "London IT Support"],
  ["A website for Robert'); DROP TABLE plans;-- bakery", "Robert"],
  ["https://example.com/my-bakery", UNTITLED],
  // A quoted name is what the person asked for, however many words it has.
  [`A website for "${LONG_QUOTED_NAME}" in Inverness`, LONG_QUOTED_NAME],
];

describe("the offline writer's site names", () => {
  it.each(NAMES)("%s → %s", async (goal, name) => {
    const deps = await outcomeDeps();
    const run = await runStages(createStageWork(deps), { planId: "pln_names", outcome: "website", goal }, { until: "build" });
    const { brief } = run.previous.understand as { brief: { name: string } };
    expect(brief.name).toBe(name);
    expect(run.outcomes.understand?.project?.name).toBe(name);
    expect((await readProject(deps.artifacts, "pln_names"))?.name).toBe(name);
    const home = (await readTree(deps.artifacts, "preview/pln_names/")).get("index.html")!;
    expect(home).toContain(`<h1 id="section-1">${name}</h1>`);
    expect(home).not.toMatch(/>Welcome</);
    // A name made of the goal's words uses only words the goal has; a goal without one is told how to give one.
    if (name !== UNTITLED) {
      for (const word of name.split(" ")) expect(goal.toLowerCase()).toContain(word.toLowerCase());
      expect(run.outcomes.build?.warning).not.toContain(UNTITLED);
    } else {
      expect(run.outcomes.build?.warning).toContain(`gives no name the offline writer can read, so the site is called "${UNTITLED}"`);
    }
  });
});

describe("the reported goal, through the real API", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  }, 60_000);
  afterAll(() => app?.close());

  it("is English, named from its words, with no warning about Dutch", async () => {
    const account = await createAccountWithKey(app, ["build", "read"]);
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A website for a bicycle repair cafe in Utrecht" });
    expect(created.status).toBe(202);
    const plan = await waitForPlan(app.url, credential, created.body.plan.id, (p) => p.status === "awaiting_approval", 60_000);
    expect(plan.project).toMatchObject({ name: "Utrecht Bicycle Repair Cafe", slug: "utrecht-bicycle-repair-cafe" });
    expect(plan.warning).toMatch(/offline without a language model/);
    expect(plan.warning).not.toMatch(/Dutch|in English/);
    const home = await (await fetch(plan.previewUrl!)).text();
    expect(home).toContain('<html lang="en" dir="ltr">');
    expect(home).toContain('<h1 id="section-1">Utrecht Bicycle Repair Cafe</h1>');
  }, 90_000);
});
