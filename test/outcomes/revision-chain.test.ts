import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ART_MOTIFS } from "../../src/outcomes/website/hero-art.js";
import { FakeUpstream } from "../chat/support/fake-upstream.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { schemaNameOf, writerModel } from "./support/model-answers.js";

// A revision is a new draft of the current one (SPEC "Revise"): the second
// keeps what the first changed and applies its own feedback on top.
const GOAL = "A website for a small neighbourhood bakery";
const RENAME = 'Call it "Crumb & Co" and drop the about page';
const CALMER = "Make it calmer";

let offline: TestApp;
let upstream: FakeUpstream;
let online: TestApp;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  upstream.otherwise(writerModel);
  [offline, online] = await Promise.all([
    startTestApp(),
    startTestApp({ env: { ZERO_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstream.url, apiKey: "sk-fake", model: "fake-model" }]) } }),
  ]);
}, 120_000);
afterAll(async () => {
  await Promise.all([offline, online].map((a) => a?.close()));
  await upstream?.close();
});

/** Creates a website plan and revises it with each feedback in turn, waiting at the gate after each; the plan after the last. */
async function reviseInTurn(app: TestApp, credential: Credential, feedback: readonly string[], between?: () => void): Promise<RestPlan[]> {
  const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: GOAL });
  expect(created.status).toBe(202);
  const atGate = (revisions: number) => (p: RestPlan) => p.status === "awaiting_approval" && p.revisions.length === revisions;
  const drafts = [await waitForPlan(app.url, credential, created.body.plan.id, atGate(0), 60_000)];
  for (const [index, text] of feedback.entries()) {
    between?.();
    const revised = await postExecution<{ plan: RestPlan }>(app.url, credential, { planId: created.body.plan.id, feedback: text });
    expect(revised.status, JSON.stringify(revised.body)).toBe(202);
    drafts.push(await waitForPlan(app.url, credential, created.body.plan.id, atGate(index + 1), 60_000));
  }
  return drafts;
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

describe("a second revision with the offline writer, through the real API", () => {
  it("keeps the first revision's name and dropped page, and applies its own tone on top", async () => {
    const owner = await createAccountWithKey(offline, ["build", "read"]);
    const [first, one, two] = await reviseInTurn(offline, { apiKey: owner.apiKey }, [RENAME, CALMER]);
    expect(two!.revisions.map((r) => r.feedback)).toEqual([RENAME, CALMER]);
    const [r1, r2] = two!.revisions.map((r) => r.previewUrl!);
    expect(r2).toBe(`${offline.url}/preview/${first!.id}-r2/`);

    const original = await get(first!.previewUrl!);
    expect(original.text).toContain("<title>Neighbourhood Bakery");
    expect((await get(`${first!.previewUrl!}about.html`)).status).toBe(200);

    const revised = await get(r1!);
    expect(revised.text).toContain("<title>Crumb &amp; Co");
    expect((await get(`${r1}about.html`)).status).toBe(404);

    // The second draft: revision 1's name and pages, revision 2's calmer tone.
    const calmer = await get(r2!);
    expect(calmer.status).toBe(200);
    expect(calmer.text).toContain("<title>Crumb &amp; Co");
    expect(calmer.text).not.toContain("Neighbourhood Bakery");
    expect((await get(`${r2}about.html`)).status).toBe(404);
    expect(calmer.text).not.toContain('href="about.html"');
    expect(calmer.text).toContain(ART_MOTIFS.calm);
    expect(revised.text).not.toContain(ART_MOTIFS.calm);
    expect((await get(`${r2}style.css`)).text).not.toBe((await get(`${r1}style.css`)).text);

    // Everything asked was applied, so neither draft warns of feedback left unread.
    for (const plan of [one!, two!]) expect(plan.warning).not.toContain("could not apply");
  }, 120_000);
});

describe("a second revision with the upstream writer, through the real API", () => {
  it("gives every writer prompt all the feedback so far, oldest first", async () => {
    const owner = await createAccountWithKey(online, ["build", "read"]);
    let seen = 0;
    const [, , two] = await reviseInTurn(online, { apiKey: owner.apiKey }, [RENAME, CALMER], () => {
      seen = upstream.requests.length;
    });
    expect(two!.revisions).toHaveLength(2);
    const second = upstream.requests.slice(seen);
    expect(second.map((r) => schemaNameOf(r.body))).toEqual(["revised_website_brief", "site_outline", "page_content", "page_content", "page_content"]);
    for (const request of second) {
      const messages = request.body.messages as { role: string; content: string }[];
      const user = messages.find((m) => m.role === "user")!.content;
      expect(user).toContain(RENAME);
      expect(user).toContain(CALMER);
      expect(user.indexOf(RENAME)).toBeLessThan(user.indexOf(CALMER));
    }
    // The model renamed the site in the first revision's brief, and the second kept the name: the plan's project and preview follow.
    expect(two!.project).toMatchObject({ name: "Crumb & Co", slug: "crumb-co" });
    expect((await get(two!.previewUrl!)).text).toContain("<title>Crumb &amp; Co");
  }, 120_000);
});
