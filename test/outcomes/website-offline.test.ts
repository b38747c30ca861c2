import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { replaceTree } from "../../src/outcomes/artifact-store.js";
import { TONES, type Tone } from "../../src/outcomes/content.js";
import { renderSite } from "../../src/outcomes/website/render-site.js";
import { normalizeBrief, normalizeOutline } from "../../src/outcomes/website/website-stages.js";
import { createOfflineWriter } from "../../src/outcomes/writers/offline-writer.js";
import { createZeroClient } from "../../src/client/zero-client.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, htmlProblems, seriousViolations, TEST_ARTIFACTS } from "./support/outcome-kit.js";
import { contrastRatio, gradientColors, throughFilter } from "../support/contrast.js";

const GOAL =
  "A website for my small bakery in Lyon that sells sourdough bread, croissants and birthday cakes, with opening hours and a way to order cakes ahead.";

let app: TestApp;
let account: TestAccount;
let plan: RestPlan;
let published: RestPlan;

beforeAll(async () => {
  app = await startTestApp(); // no upstream: the offline writer, on by default
  account = await createAccountWithKey(app, ["build", "read"]);
  const created = await postExecution<{ plan: RestPlan; unavailable: string[] }>(app.url, { apiKey: account.apiKey }, { goal: GOAL });
  expect(created.status).toBe(202);
  expect(created.body.unavailable).toEqual(["ebook"]);
  plan = await waitForPlan(app.url, { apiKey: account.apiKey }, created.body.plan.id, (p) => p.status !== "running", 90_000);
}, 180_000);

afterAll(() => app?.close());

async function pagesOf(baseUrl: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const name of ["index.html", "menu.html", "about.html", "contact.html"]) {
    const res = await fetch(new URL(name, baseUrl));
    expect(res.status, name).toBe(200);
    files.set(name, await res.text());
  }
  return files;
}

describe("a website goal with no upstream, through the real API", () => {
  it("stops at review with a project, a preview and the offline warning", () => {
    expect(plan.status).toBe("awaiting_approval");
    expect(plan.stages.map((s) => [s.id, s.state])).toEqual([
      ["understand", "succeeded"],
      ["outline", "succeeded"],
      ["write", "succeeded"],
      ["build", "succeeded"],
      ["review", "awaiting_approval"],
      ["publish", "pending"],
    ]);
    expect(plan.project).toMatchObject({ name: "Lyon Bakery", slug: "lyon-bakery" });
    expect(plan.project!.id).toMatch(/^prj_/);
    expect(plan.warning).toMatch(/offline without a language model/);
    expect(plan.previewUrl).toBe(`${app.url}/preview/${plan.id}/`);
    expect(plan.publishedUrl).toBeNull();
  });

  it("serves a preview built from the goal's own words, valid HTML, under a sandbox CSP and no cookies", async () => {
    const res = await fetch(plan.previewUrl!);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toMatch(/^sandbox[ ;]/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("set-cookie")).toBeNull();
    const pages = await pagesOf(plan.previewUrl!);
    const home = pages.get("index.html")!;
    for (const words of ["Lyon Bakery", "Sourdough bread", "Croissants", "Birthday cakes", "How to order cakes ahead"]) expect(home).toContain(words);
    expect(pages.get("contact.html")).toContain("Opening hours");
    const all = [...pages.values()].join("\n");
    expect(all).not.toMatch(/lorem|ipsum|TODO|TBD|\[insert/i);
    // No script, no external request, not even a link out; the only absolute addresses name the page's own published URL and its preview picture.
    const own = /<(?:link rel="canonical" href|meta property="og:url" content|meta property="og:image" content|meta name="twitter:image" content)="([^"]+)">/g;
    const addresses = [...all.matchAll(own)].map((m) => m[1]!);
    expect(addresses.length).toBeGreaterThan(0);
    for (const address of addresses) expect(address.startsWith(`${app.url}/sites/`), address).toBe(true);
    expect(addresses.filter((a) => a.endsWith("/og.svg")).length).toBeGreaterThan(0);
    expect(all.replace(own, "")).not.toMatch(/<script|https?:\/\//i);
    expect(await htmlProblems(pages)).toEqual([]);
    const css = await fetch(new URL("style.css", plan.previewUrl!));
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
  });

  it("publishes on approval to /sites/{slug}/", async () => {
    const resumed = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { planId: plan.id, approve: ["review"] });
    expect(resumed.status).toBe(202);
    published = await waitForPlan(app.url, { apiKey: account.apiKey }, plan.id, (p) => p.status !== "running" && p.status !== "awaiting_approval", 90_000);
    expect(published.status).toBe("succeeded");
    expect(published.progress).toBe(100);
    expect(published.publishedUrl).toBe(`${app.url}/sites/lyon-bakery/`);
    const live = await pagesOf(published.publishedUrl!);
    expect(live.get("index.html")).toBe((await pagesOf(plan.previewUrl!)).get("index.html"));
    const bare = await fetch(`${app.url}/sites/lyon-bakery`, { redirect: "manual" });
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("/sites/lyon-bakery/");
  }, 120_000);
});

describe("a site named in another script, through the real API", () => {
  const SLUG = "кофейня-москва";
  const ENCODED = encodeURIComponent(SLUG);

  it("publishes at an address in the name's own letters, served, redirected and downloaded under it", async () => {
    const credential = { apiKey: account.apiKey };
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "Сайт для кофейни «Кофейня Москва»: кофе и десерты" });
    const built = await waitForPlan(app.url, credential, created.body.plan.id, (p) => p.status !== "running", 90_000);
    expect(built.project).toMatchObject({ name: "Кофейня Москва", slug: SLUG });
    await postExecution(app.url, credential, { planId: built.id, approve: ["review"] });
    const done = await waitForPlan(app.url, credential, built.id, (p) => p.status !== "running" && p.status !== "awaiting_approval", 90_000);
    expect(done.status).toBe("succeeded");
    // A URL, so percent-encoded; a browser shows it in Cyrillic.
    expect(done.publishedUrl).toBe(`${app.url}/sites/${ENCODED}/`);

    const home = await fetch(done.publishedUrl!);
    expect(home.status).toBe(200);
    const page = await home.text();
    expect(page).toContain(`<link rel="canonical" href="${done.publishedUrl}">`);
    expect(await (await fetch(`${done.publishedUrl}sitemap.xml`)).text()).toContain(`<loc>${done.publishedUrl}</loc>`);

    // "й" sent decomposed (и and a combining breve), as some systems type it, is the same address.
    expect((await fetch(`${app.url}/sites/${encodeURIComponent(SLUG.normalize("NFD"))}/`)).status).toBe(200);
    const bare = await fetch(`${app.url}/sites/${ENCODED}`, { redirect: "manual" });
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe(`/sites/${ENCODED}/`);
    const mistyped = await fetch(`${app.url}/sites/${ENCODED}/nope.html`);
    expect(mistyped.status).toBe(404);
    expect(await mistyped.text()).toContain(`href="/sites/${ENCODED}/index.html"`);

    const download = await fetch(`${app.url}/api/execution/download?id=${done.id}`, { headers: { authorization: `Bearer ${account.apiKey}` } });
    expect(download.status).toBe(200);
    expect(download.headers.get("content-disposition")).toBe(`attachment; filename="download.zip"; filename*=UTF-8''${ENCODED}.zip`);
    await download.body?.cancel();
    const file = await createZeroClient({ baseUrl: app.url, apiKey: account.apiKey }).executions.download(done.id);
    expect(file.filename).toBe(`${SLUG}.zip`);
    await file.body.cancel();
  }, 180_000);
});

describe.runIf(haveChromium)("the built site in headless Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(() => browser?.close());

  it("loads only from this service, has no serious axe violations, and looks finished (screenshot kept)", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const requested: string[] = [];
    page.on("request", (request) => void requested.push(request.url()));
    const failed: string[] = [];
    page.on("requestfailed", (request) => void failed.push(request.url()));
    await page.goto(plan.previewUrl!, { waitUntil: "load" });
    expect(failed).toEqual([]);
    expect(requested.every((url) => url.startsWith(app.url))).toBe(true);
    expect(requested.some((url) => url.endsWith("/style.css"))).toBe(true);
    // The stylesheet applied (the sandbox still loads 'self' styles).
    const background = await page.evaluate(() => getComputedStyle(document.querySelector(".hero")!).backgroundImage);
    expect(background).toContain("gradient");
    // The generated hero picture loads and draws (an SVG from the site itself, allowed by the sandbox's CSP).
    expect(requested.some((url) => url.endsWith("/hero.svg"))).toBe(true);
    expect(await page.evaluate(() => (document.querySelector("img.hero-art") as HTMLImageElement).naturalWidth)).toBeGreaterThan(0);

    await fs.mkdir(TEST_ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(TEST_ARTIFACTS, "website-offline-preview.png"), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: path.join(TEST_ARTIFACTS, "website-offline-preview-mobile.png"), fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    // The menu and contact pages, to see that they are laid out as a list and a timeline, not the home page's cards again.
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const name of ["menu", "contact"]) {
      await page.goto(new URL(`${name}.html`, plan.previewUrl!).href, { waitUntil: "load" });
      await page.screenshot({ path: path.join(TEST_ARTIFACTS, `website-offline-${name}.png`), fullPage: true });
    }
    await context.close();

    for (const name of ["index.html", "menu.html", "about.html", "contact.html"]) {
      expect(await seriousViolations(browser, new URL(name, published.publishedUrl!).href), name).toEqual([]);
    }
  }, 180_000);

  /**
   * The bakery's pages in `tone`, in place of the plan's preview (the service serves only a preview its plan
   * shows; under any other key every page was its plain "Nothing here"); the preview's address.
   */
  async function themePreview(tone: Tone): Promise<string> {
    const writer = createOfflineWriter();
    const context = { accountId: "acc_test", signal: new AbortController().signal };
    const base = normalizeBrief(await writer.websiteBrief(GOAL, context));
    const outline = normalizeOutline(base, await writer.siteOutline(GOAL, base, context));
    const pages = await Promise.all(outline.pages.map((p) => writer.page(GOAL, base, outline, p.slug, context)));
    const url = plan.previewUrl!;
    await replaceTree(app.artifacts, new URL(url).pathname.slice(1), renderSite({ ...base, tone }, outline, pages));
    expect(await (await fetch(new URL("style.css", url))).text()).toContain(`Theme: ${tone}.`);
    return url;
  }

  it("keeps every theme accessible (contrast included)", async () => {
    for (const tone of TONES) {
      const url = await themePreview(tone);
      expect(await seriousViolations(browser, url), tone).toEqual([]);
      const shot = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await shot.goto(url);
      await shot.screenshot({ path: path.join(TEST_ARTIFACTS, `website-theme-${tone}.png`) });
      await shot.close();
    }
  }, 180_000);

  // axe checks the colours at rest; these are the ones a hover or a keyboard focus paints.
  it("keeps button text readable on hover and every focus ring visible where it is drawn, in every theme", async () => {
    const problems: string[] = [];
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      for (const tone of TONES) {
        const url = await themePreview(tone);
        for (const name of ["index.html", "about.html", "contact.html", "404.html"]) {
          await page.goto(new URL(name, url).href);
          // Each control the keyboard reaches: its ring's colour, and the colours of what the ring is drawn on (offset
          // outside the control: the nearest ancestor that paints a background).
          for (let step = 0; step < 40; step++) {
            await page.keyboard.press("Tab");
            const focused = await page.evaluate(() => {
              const element = document.activeElement;
              if (!element || element === document.body) return undefined;
              const style = getComputedStyle(element);
              let behind: string[] = [];
              for (let parent = element.parentElement; parent && behind.length === 0; parent = parent.parentElement) {
                const parentStyle = getComputedStyle(parent);
                if (parentStyle.backgroundImage !== "none") behind = [parentStyle.backgroundImage];
                else if (!/^rgba\(.*, 0\)$|^transparent$/.test(parentStyle.backgroundColor)) behind = [parentStyle.backgroundColor];
              }
              return {
                text: element.textContent?.trim().slice(0, 30),
                ring: style.outlineStyle === "none" ? undefined : style.outlineColor,
                behind,
                first: element === document.querySelector("a, summary"),
              };
            });
            if (!focused || (step > 0 && focused.first)) break;
            const where = `${tone} ${name} "${focused.text}"`;
            if (!focused.ring) problems.push(`${where}: no focus ring`);
            else
              for (const color of focused.behind.flatMap((b) => (b.includes("gradient") ? gradientColors(b) : [b]))) {
                const ratio = contrastRatio(focused.ring, color);
                if (ratio < 3) problems.push(`${where}: ring ${focused.ring} on ${color} is ${ratio.toFixed(2)}:1`);
              }
          }
          // Each button, at rest and under the pointer, as painted (a filter changes the text and the fill alike).
          const buttons = page.locator(".button");
          for (let i = 0; i < (await buttons.count()); i++) {
            for (const state of ["rest", "hover"] as const) {
              if (state === "hover") await buttons.nth(i).hover();
              else await page.mouse.move(0, 0);
              const painted = await buttons.nth(i).evaluate((element) => {
                const style = getComputedStyle(element);
                return { text: element.textContent?.trim(), color: style.color, fill: style.backgroundColor, filter: style.filter };
              });
              const ratio = contrastRatio(throughFilter(painted.color, painted.filter), throughFilter(painted.fill, painted.filter));
              if (ratio < 4.5)
                problems.push(`${tone} ${name} "${painted.text}" (${state}): ${painted.color} on ${painted.fill} (${painted.filter}) is ${ratio.toFixed(2)}:1`);
            }
          }
        }
      }
    } finally {
      await page.close();
    }
    expect(problems).toEqual([]);
  }, 180_000);
});
