import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Behavior, completion, FakeUpstream, reply } from "../chat/support/fake-upstream.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { answerFor, rawAnswer, schemaNameOf, writerModel } from "./support/model-answers.js";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, EPUBCHECK, haveChromium, haveEpubcheck, TEST_ARTIFACTS } from "./support/outcome-kit.js";

let upstream: FakeUpstream;
let app: TestApp;
let account: TestAccount;
let book: RestPlan;
let epubFile: string;

const settled = (p: RestPlan) => p.status !== "running";

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  upstream.otherwise(writerModel);
  app = await startTestApp({ env: { ZERO_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstream.url, apiKey: "sk-fake", model: "fake-model" }]) } });
  account = await createAccountWithKey(app, ["build", "read"]);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

describe("an ebook goal with an upstream, through the real API and chat router", () => {
  it("writes, assembles, waits for review, then publishes the reader and the EPUB", async () => {
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan; unavailable: string[] }>(app.url, credential, {
      goal: "A short guide to growing vegetables on a small city balcony",
      outcome: "ebook",
    });
    expect(created.status).toBe(202);
    expect(created.body.unavailable).toEqual([]);
    const atReview = await waitForPlan(app.url, credential, created.body.plan.id, settled, 90_000);
    expect(atReview.status).toBe("awaiting_approval");
    expect(atReview.project).toMatchObject({ name: "The Patient Gardener", slug: "the-patient-gardener" });
    expect(atReview.warning).toBeNull();
    expect(atReview.previewUrl).toBe(`${app.url}/preview/${atReview.id}/`);
    // The writers went through the router: the upstream saw its own model name, one call per chapter.
    expect(upstream.requests.map((r) => schemaNameOf(r.body))).toEqual(["ebook_brief", "book_outline", "chapter", "chapter", "chapter"]);
    expect(upstream.requests.every((r) => r.body.model === "fake-model")).toBe(true);

    await postExecution(app.url, credential, { planId: atReview.id, approve: ["review"] });
    book = await waitForPlan(app.url, credential, atReview.id, (p) => settled(p) && p.status !== "awaiting_approval", 90_000);
    expect(book.status).toBe("succeeded");
    expect(book.publishedUrl).toBe(`${app.url}/books/the-patient-gardener/`);

    const reader = await fetch(book.publishedUrl!);
    expect(reader.status).toBe(200);
    expect(reader.headers.get("content-security-policy")).toMatch(/^sandbox allow-same-origin allow-downloads;/);
    const html = await reader.text();
    expect(html).toContain("The Patient Gardener");
    expect(html).toContain('href="chapter-01.html"');
    const epub = await fetch(`${book.publishedUrl}the-patient-gardener.epub`);
    expect(epub.status).toBe(200);
    expect(epub.headers.get("content-type")).toBe("application/epub+zip");
    expect(epub.headers.get("content-disposition")).toBe('attachment; filename="the-patient-gardener.epub"');
    const bytes = new Uint8Array(await epub.arrayBuffer());
    expect(new TextDecoder().decode(bytes.subarray(30, 38))).toBe("mimetype");
    epubFile = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "zero-epub-")), "book.epub");
    await fs.writeFile(epubFile, bytes);
  }, 240_000);

  it("fails a stage with a clear error and a resumable plan when the model keeps answering malformed JSON", async () => {
    const credential = { apiKey: account.apiKey };
    upstream.next(rawAnswer("{ this is not json"), rawAnswer('{"title": "Only a title"}'));
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A guide to bread baking at home", outcome: "ebook" });
    const failed = await waitForPlan(app.url, credential, created.body.plan.id, settled, 90_000);
    expect(failed.status).toBe("failed");
    expect(failed.resumable).toBe(true);
    const stage = failed.stages.find((s) => s.id === "understand")!;
    expect(stage.state).toBe("failed");
    expect(stage.error!.type).toBe("invalid_model_output");
    expect(stage.error!.message).toMatch(/ebook brief could not be used, even after a retry: \$: missing property "subtitle"/);

    // Resuming retries the stage, which now gets good answers.
    await postExecution(app.url, credential, { planId: failed.id });
    const resumed = await waitForPlan(app.url, credential, failed.id, (p) => settled(p) && p.stages[0]!.attempts === 2, 90_000);
    expect(resumed.status).toBe("awaiting_approval");
    expect(resumed.project!.slug).toBe("the-patient-gardener-2"); // unique across plans
  }, 240_000);
});

describe.runIf(haveChromium)("the book's HTML reader in headless Chromium", () => {
  it("has no serious axe violations; screenshots kept", async () => {
    expect(book, "the end-to-end test must run first and publish the book").toBeDefined();
    const axeSource = await fs.readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      await fs.mkdir(TEST_ARTIFACTS, { recursive: true });
      for (const name of ["index.html", "chapter-01.html"]) {
        const context = await browser.newContext({ viewport: { width: 1000, height: 800 }, bypassCSP: true });
        const page = await context.newPage();
        await page.goto(new URL(name, book.publishedUrl!).href);
        await page.screenshot({ path: path.join(TEST_ARTIFACTS, `ebook-reader-${name.replace(".html", "")}.png`), fullPage: true });
        await page.addScriptTag({ content: axeSource });
        const violations = await page.evaluate(async () => {
          const result = await (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string | null }[] }> } }).axe.run();
          return result.violations.map((v) => ({ id: v.id, impact: v.impact }));
        });
        expect(
          violations.filter((v) => v.impact === "serious" || v.impact === "critical"),
          name,
        ).toEqual([]);
        await context.close();
      }
    } finally {
      await browser.close();
    }
  }, 120_000);
});

// Debian's /usr/bin/epubcheck is the jar itself (run through binfmt where jarwrapper is active), so call java.
describe("a website goal with an upstream, through the real API", () => {
  it("is written by the model, without the offline warning, and published with the model's words escaped", async () => {
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "Guided sea kayaking trips for beginners" });
    expect(created.status).toBe(202);
    const atReview = await waitForPlan(app.url, credential, created.body.plan.id, settled, 90_000);
    expect(atReview.status).toBe("awaiting_approval");
    expect(atReview.warning).toBeNull();
    expect(atReview.project!.slug).toBe("harbour-lights-kayaks");
    await postExecution(app.url, credential, { planId: atReview.id, approve: ["review"] });
    const site = await waitForPlan(app.url, credential, atReview.id, (p) => settled(p) && p.status !== "awaiting_approval", 90_000);
    expect(site.status).toBe("succeeded");
    expect(site.publishedUrl).toBe(`${app.url}/sites/harbour-lights-kayaks/`);
    const home = await (await fetch(site.publishedUrl!)).text();
    expect(home).toContain("Harbour Lights Kayaks");
    expect(home).toContain("&lt;script&gt;");
    expect(home).not.toContain("<script");
  }, 240_000);
});

describe("a model answer holding characters Postgres cannot store", () => {
  it("reaches the gate with the model's text cleaned: no NUL, and half a surrogate pair replaced", async () => {
    const credential = { apiKey: account.apiKey };
    upstream.otherwise(controlCharacterModel);
    try {
      const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "Guided sea kayaking trips for beginners, again" });
      const atReview = await waitForPlan(app.url, credential, created.body.plan.id, settled, 90_000);
      expect(atReview.status).toBe("awaiting_approval");
      expect(atReview.stages.every((s) => s.error === null)).toBe(true);
      expect(atReview.project!.name).toBe("Harbour Lights Kayaks");

      const outputs = await app.store.db.selectFrom("plan_stages").select("output").where("plan_id", "=", atReview.id).execute();
      const stored = JSON.stringify(outputs);
      expect(stored).toContain("Guided sea kayaking trips for beginners\ufffd");
      expect(stored).not.toContain("\\u0000");
      expect(stored).not.toMatch(/\\ud[89ab]/i);
      const home = await (await fetch(atReview.previewUrl!)).text();
      expect(home).toContain("Calm water, patient guides.");
      expect(home).not.toContain("\u0000");
    } finally {
      upstream.otherwise(writerModel);
    }
  }, 240_000);
});

/**
 * A model that slips in what JSON can say but Postgres cannot store: a NUL (`\u0000`) before every space of its
 * text, and half a surrogate pair (`\ud800`) after the site's tagline.
 */
const controlCharacterModel: Behavior = (exchange) => {
  const answer = withNulBeforeSpaces(answerFor(schemaNameOf(exchange.body), exchange.body)) as Record<string, unknown>;
  if (typeof answer.tagline === "string") answer.tagline = `${answer.tagline}\ud800`;
  return reply(completion(JSON.stringify(answer)))(exchange);
};

function withNulBeforeSpaces(value: unknown): unknown {
  if (typeof value === "string") return value.replaceAll(" ", "\u0000 ");
  if (Array.isArray(value)) return value.map(withNulBeforeSpaces);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withNulBeforeSpaces(item)]));
  return value;
}

describe.runIf(haveEpubcheck)("epubcheck (Debian package; CI installs it)", () => {
  it("accepts the published EPUB with no errors or warnings", async () => {
    expect(epubFile, "the end-to-end test must run first and write the EPUB").toBeDefined();
    const { stdout, stderr } = await promisify(execFile)("java", ["-jar", EPUBCHECK, epubFile], { timeout: 120_000 }).catch(
      (error: { stdout: string; stderr: string }) => error,
    );
    expect(`${stdout}\n${stderr}`).toMatch(/No errors or warnings detected/);
  }, 150_000);
});
