import http from "node:http";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium } from "playwright-core";
import { isValidKey, type ArtifactStore } from "../../src/outcomes/artifact-store.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, outcomeDeps, readTree } from "./support/outcome-kit.js";
import { recordPlanFor } from "./support/recorded-plans.js";
import { failureOf, runStages } from "./support/run-stages.js";
import { replaceTree } from "../../src/outcomes/artifact-store.js";
import { renderSite } from "../../src/outcomes/website/render-site.js";
import { interfaceWords } from "../../src/outcomes/interface-words.js";
import { normalizeBrief, normalizeOutline } from "../../src/outcomes/website/website-stages.js";
import { createOfflineWriter } from "../../src/outcomes/writers/offline-writer.js";
import type { Chapter, EbookBrief } from "../../src/outcomes/content.js";
import { renderEpub, renderReader } from "../../src/outcomes/ebook/render-book.js";
import { answerFor } from "./support/model-answers.js";

const EVIL = `<!DOCTYPE html><html lang="en"><head><title>original</title></head><body>
<p id="said">nothing ran</p>
<script>document.title = "pwned"; document.getElementById("said").textContent = "script ran";</script>
<img src="x" alt="" onerror="document.title = 'pwned by onerror'">
</body></html>`;

let app: TestApp;
let store: ArtifactStore;

beforeAll(async () => {
  app = await startTestApp();
  // The same store the service serves from.
  store = app.artifacts;
  await recordPlanFor(app, "pln_evil", { slug: "evil-site" });
  await store.put("preview/pln_evil/index.html", EVIL);
  await store.put("sites/evil-site/index.html", EVIL);
  await fs.writeFile(path.join(app.dataDir, "secret.txt"), "TOP-SECRET");
});
afterAll(() => app?.close());

/** A GET with the path sent exactly as written (fetch would normalise dot segments first). */
function rawGet(pathname: string): Promise<{ status: number; contentType: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}/`, { path: pathname }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"], body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("serving generated content", () => {
  it("sends every artifact with a sandbox CSP, nosniff, no cookies", async () => {
    for (const url of [`${app.url}/preview/pln_evil/`, `${app.url}/sites/evil-site/index.html`]) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      const csp = res.headers.get("content-security-policy")!;
      expect(csp.split(";")[0]!.trim().startsWith("sandbox")).toBe(true);
      expect(csp.split(";")[0]).not.toContain("allow-scripts");
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toMatch(/script-src|unsafe-inline/);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("set-cookie")).toBeNull();
    }
    const missing = await fetch(`${app.url}/preview/pln_evil/nope.html`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-security-policy")).toContain("sandbox");
    expect((await fetch(`${app.url}/preview/pln_evil/`, { method: "POST" })).status).toBe(405);
  });

  it("cannot be walked out of, however the path is spelled", async () => {
    for (const attempt of [
      "/preview/pln_evil/../../secret.txt",
      "/preview/pln_evil/%2e%2e/%2e%2e/secret.txt",
      "/preview/pln_evil/..%2f..%2fsecret.txt",
      "/preview/..%2f..%2fsecret.txt/",
      "/sites/evil-site/%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt",
      "/books/%2e%2e/secret.txt",
      "/preview/pln_evil/.hidden",
      "/preview/pln_evil/%00index.html",
      "/preview/pln_evil/%E0%A4%A",
    ]) {
      const res = await rawGet(attempt);
      expect(res.status, attempt).toBe(404);
      expect(res.body, attempt).not.toContain("TOP-SECRET");
    }
    expect(["../x", "a/../b", ".env", "a//b", "a/", "/a", "a\\b", "a/.."].filter(isValidKey)).toEqual([]);
    await expect(store.put("../escape.txt", "x")).rejects.toThrow(/invalid artifact key/);
    expect(await store.get("../secret.txt")).toBeUndefined();
  });

  describe.runIf(haveChromium)("in headless Chromium", () => {
    it("does not run a generated page's script, inline or by event handler", async () => {
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      try {
        const page = await browser.newPage();
        for (const url of [`${app.url}/preview/pln_evil/`, `${app.url}/sites/evil-site/`]) {
          await page.goto(url, { waitUntil: "load" });
          await page.waitForTimeout(200); // give an onerror handler its chance
          expect(await page.title()).toBe("original");
          expect(await page.locator("#said").textContent()).toBe("nothing ran");
        }
      } finally {
        await browser.close();
      }
    }, 120_000);
  });
});

describe("a visitor's wrong address and a browser's cache", () => {
  beforeAll(async () => {
    const writer = createOfflineWriter();
    const context = { accountId: "acc_test", signal: new AbortController().signal };
    const goal = "Build a landing page for Maison Dupont, a family-run florist in Bordeaux";
    const brief = normalizeBrief(await writer.websiteBrief(goal, context));
    const outline = normalizeOutline(brief, await writer.siteOutline(goal, brief, context));
    const pages = [];
    for (const page of outline.pages) pages.push(await writer.page(goal, brief, outline, page.slug, context));
    const site = renderSite(brief, outline, pages);
    await recordPlanFor(app, "pln_dupont", { slug: "maison-dupont" });
    await replaceTree(store, "sites/maison-dupont/", site);
    await replaceTree(store, "preview/pln_dupont/", site);
  });

  it("gets the site's own HTML 404 page, themed, linking home, at any depth", async () => {
    for (const path of ["/sites/maison-dupont/contcat.html", "/sites/maison-dupont/a/b/c", "/preview/pln_dupont/nope.html"]) {
      const res = await fetch(`${app.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type"), path).toBe("text/html; charset=utf-8");
      expect(res.headers.get("content-security-policy"), path).toContain("sandbox");
      const body = await res.text();
      expect(body).toContain('<h1 id="section-1">This page does not exist</h1>');
      expect(body).toContain("Maison Dupont");
      const base = path.split("/").slice(0, 3).join("/");
      // Links resolve from any depth: the stylesheet and the home page, absolute under the site.
      expect(body).toContain(`href="${base}/style.css"`);
      expect(body).toContain(`href="${base}/index.html"`);
      expect((await fetch(`${app.url}${base}${body.match(/href="[^"]*(\/style\.css)"/)![1]}`)).status).toBe(200);
    }
    // A site without a 404 page (built before it existed) and an unknown site get the plain HTML page
    // (artifact-not-found.test.ts); the API's JSON error only when the client asks for JSON.
    for (const path of ["/sites/evil-site/nope.html", "/sites/no-such-site/index.html", "/books/no-such-book/x.html", "/sites/%ZZ/index.html"]) {
      const res = await fetch(`${app.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type"), path).toBe("text/html; charset=utf-8");
      expect(await res.text(), path).toContain("<h1>Nothing here</h1>");
      const json = await fetch(`${app.url}${path}`, { headers: { accept: "application/json" } });
      expect(json.headers.get("content-type"), path).toContain("application/json");
    }
  });

  it("gets the HTML 404 page for a broken percent-encoding too, not the API's JSON", async () => {
    for (const path of ["/sites/maison-dupont/%ZZ", "/preview/pln_dupont/%ZZ", "/sites/maison-dupont/a/%E0%A4%A/b.html", "/preview/pln_dupont/%"]) {
      const res = await rawGet(path);
      expect(res.status, path).toBe(404);
      expect(res.contentType, path).toBe("text/html; charset=utf-8");
      expect(res.body, path).toContain('<h1 id="section-1">This page does not exist</h1>');
    }
  });

  // Found by a web performance review: an opaque origin gave each page a cache of its own, so every page fetched the
  // site's stylesheet and pictures again (0.7 s a page on a slow phone).
  it.runIf(haveChromium)(
    "is fetched once by a browser going from page to page, its stylesheet and pictures cached",
    async () => {
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      try {
        const page = await browser.newPage();
        const served = (file: string) => app.logs.filter((line) => line.includes(`"path":"/sites/maison-dupont/${file}"`)).length;
        const before = { style: served("style.css"), hero: served("hero.svg") };
        for (const file of ["", "about.html", "", "about.html"]) await page.goto(`${app.url}/sites/maison-dupont/${file}`, { waitUntil: "load" });
        expect(served("style.css") - before.style).toBe(1);
        expect(served("hero.svg") - before.hero).toBeLessThanOrEqual(1);
        // Still no script runs there (the sandbox allows none), whatever origin the page has.
        expect(await page.evaluate(() => document.scripts.length)).toBe(0);
      } finally {
        await browser.close();
      }
    },
    120_000,
  );

  it("sends an ETag and Cache-Control, and answers 304 to a matching If-None-Match", async () => {
    const first = await fetch(`${app.url}/sites/maison-dupont/index.html`);
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(first.headers.get("cache-control")).toBe("public, max-age=60");
    const again = await fetch(`${app.url}/sites/maison-dupont/index.html`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect((await fetch(`${app.url}/sites/maison-dupont/index.html`, { headers: { "if-none-match": `W/${etag}, "other"` } })).status).toBe(304);
    expect((await fetch(`${app.url}/sites/maison-dupont/index.html`, { headers: { "if-none-match": '"stale"' } })).status).toBe(200);
    // Another file has another validator; a republished file gets a new one.
    const style = await fetch(`${app.url}/sites/maison-dupont/style.css`);
    expect(style.headers.get("etag")).not.toBe(etag);
    await store.put("sites/maison-dupont/index.html", "<!DOCTYPE html><title>changed</title>");
    const changed = await fetch(`${app.url}/sites/maison-dupont/index.html`, { headers: { "if-none-match": etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    // Previews are revalidated every time.
    const preview = await fetch(`${app.url}/preview/pln_dupont/index.html`);
    expect(preview.headers.get("cache-control")).toBe("no-cache");
    expect((await fetch(`${app.url}/preview/pln_dupont/index.html`, { headers: { "if-none-match": preview.headers.get("etag")! } })).status).toBe(304);
  });
});

describe("the content type of every file the writers produce", () => {
  const EXPECTED: Record<string, string> = {
    html: "text/html; charset=utf-8",
    css: "text/css; charset=utf-8",
    svg: "image/svg+xml",
    xml: "application/xml",
    txt: "text/plain; charset=utf-8",
    epub: "application/epub+zip",
  };

  it("names each one (sitemap.xml is XML), under a site, a preview and a book", async () => {
    const writer = createOfflineWriter();
    const context = { accountId: "acc_test", signal: new AbortController().signal };
    const goal = "A website for a small neighbourhood bakery";
    const brief = normalizeBrief(await writer.websiteBrief(goal, context));
    const outline = normalizeOutline(brief, await writer.siteOutline(goal, brief, context));
    const pages = [];
    for (const page of outline.pages) pages.push(await writer.page(goal, brief, outline, page.slug, context));
    const site = renderSite(brief, outline, pages, `${app.url}/sites/typed-bakery/`);
    expect(site.has("sitemap.xml")).toBe(true);
    await recordPlanFor(app, "pln_typed", { slug: "typed-bakery" });
    await recordPlanFor(app, "pln_typedbook", { slug: "typed-book", mount: "books" });
    await replaceTree(store, "sites/typed-bakery/", site);
    await replaceTree(store, "preview/pln_typed/", site);
    const bookBrief = answerFor("ebook_brief", {}) as EbookBrief;
    const content = { chapters: [answerFor("chapter", {}) as Chapter] };
    const book = new Map<string, string | Uint8Array>(renderReader(bookBrief, content, "typed-book.epub"));
    book.set("typed-book.epub", renderEpub(bookBrief, content, { planId: "pln_typed", modified: new Date(0) }));
    await replaceTree(store, "books/typed-book/", book);

    const served = [
      ...[...site.keys()].flatMap((name) => [`/sites/typed-bakery/${name}`, `/preview/pln_typed/${name}`]),
      ...[...book.keys()].map((name) => `/books/typed-book/${name}`),
    ];
    const extensions = new Set(served.map((p) => p.slice(p.lastIndexOf(".") + 1)));
    expect([...extensions].filter((ext) => !(ext in EXPECTED))).toEqual([]);
    for (const path of served) {
      const res = await fetch(`${app.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe(EXPECTED[path.slice(path.lastIndexOf(".") + 1)]);
      await res.arrayBuffer();
    }
  });
});

describe("a book named in another script", () => {
  it("is served under its slug in that script, its EPUB downloaded under its own name with an ASCII one beside it", async () => {
    const slug = "東京カフェの本";
    const brief = { ...(answerFor("ebook_brief", {}) as EbookBrief), title: "東京カフェの本", language: "ja" };
    const content = { chapters: [answerFor("chapter", {}) as Chapter] };
    const book = new Map<string, string | Uint8Array>(renderReader(brief, content, `${slug}.epub`));
    book.set(`${slug}.epub`, renderEpub(brief, content, { planId: "pln_tokyo", modified: new Date(0) }));
    await recordPlanFor(app, "pln_tokyo", { slug, mount: "books" });
    await replaceTree(store, `books/${slug}/`, book);

    const base = `${app.url}/books/${encodeURIComponent(slug)}/`;
    const reader = await fetch(base);
    expect(reader.status).toBe(200);
    // The reader's link to the EPUB is a relative URL, percent-encoded as URLs are.
    const link = /<a class="button" href="([^"]+)" download/.exec(await reader.text())![1]!;
    expect(link).toBe(`${encodeURIComponent(slug)}.epub`);
    const epub = await fetch(new URL(link, base));
    expect(epub.status).toBe(200);
    expect(epub.headers.get("content-disposition")).toBe(`attachment; filename="download.epub"; filename*=UTF-8''${encodeURIComponent(slug)}.epub`);
    expect(Buffer.from(await epub.arrayBuffer()).equals(Buffer.from(book.get(`${slug}.epub`) as Uint8Array))).toBe(true);
  });
});

describe("a visitor's wrong address under a book", () => {
  // Found writing in other languages: a mistyped page under a book got the service's English "Nothing here", sites their own page.
  it("gets the book's own 404 page, in its language, linking back to its contents from any depth", async () => {
    const slug = "das-kleine-backbuch";
    const brief = { ...(answerFor("ebook_brief", {}) as EbookBrief), title: "Das kleine Backbuch", language: "de" };
    const content = { chapters: [answerFor("chapter", {}) as Chapter] };
    await recordPlanFor(app, "pln_backbuch", { slug, mount: "books" });
    await replaceTree(store, `books/${slug}/`, renderReader(brief, content, `${slug}.epub`));
    const { words } = interfaceWords("de");
    for (const path of [`/books/${slug}/kapitel-9.html`, `/books/${slug}/a/b`]) {
      const res = await fetch(`${app.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("content-type"), path).toBe("text/html; charset=utf-8");
      const body = await res.text();
      expect(body).toContain('<html lang="de"');
      expect(body).toContain(words.noSuchPage);
      expect(body).toContain("Das kleine Backbuch");
      expect(body).not.toContain("Nothing here");
      expect(body).toContain(`href="/books/${slug}/index.html"`);
      expect(body).toContain(`href="/books/${slug}/style.css"`);
    }
  });
});

describe("slugs and republishing", () => {
  const goal = "A website for a small bakery in Lyon that sells sourdough bread and croissants.";

  it("gives each plan its own slug, keeps it on re-runs, and republishing replaces only that plan's site", async () => {
    const deps = await outcomeDeps();
    const work = createStageWork(deps);
    const first = await runStages(work, { planId: "pln_one", outcome: "website", goal });
    const second = await runStages(work, { planId: "pln_two", outcome: "website", goal });
    expect(first.outcomes.understand!.project!.slug).toBe("lyon-bakery");
    expect(second.outcomes.understand!.project!.slug).toBe("lyon-bakery-2");
    expect(second.outcomes.publish!.publishedUrl).toBe("http://zero.test/sites/lyon-bakery-2/");

    // Re-running understand after a crash: the same project, not a third slug.
    const again = await runStages(work, { planId: "pln_one", outcome: "website", goal }, { until: "understand" });
    expect(again.outcomes.understand!.project).toEqual(first.outcomes.understand!.project);

    const otherBefore = await readTree(deps.artifacts, "sites/lyon-bakery-2/");
    await deps.artifacts.put("sites/lyon-bakery/stale.html", "left over from an older build");
    await deps.artifacts.put("preview/pln_one/stale.html", "left over from an older build");
    const rerun = await runStages(work, { planId: "pln_one", outcome: "website", goal: `${goal} With opening hours.` }, { attempt: 2 });
    const mine = await readTree(deps.artifacts, "sites/lyon-bakery/");
    expect(rerun.outcomes.understand!.project!.slug).toBe("lyon-bakery");
    expect(mine.has("stale.html")).toBe(false);
    expect((await readTree(deps.artifacts, "preview/pln_one/")).has("stale.html")).toBe(false);
    expect(mine.get("contact.html")).toContain("Opening hours");
    expect(await readTree(deps.artifacts, "sites/lyon-bakery-2/")).toEqual(otherBefore);
  });

  it("refuses ebooks without an upstream, with the documented error type", async () => {
    const deps = await outcomeDeps();
    const failure = await failureOf(runStages(createStageWork(deps), { planId: "pln_book", outcome: "ebook", goal: "A book about bread" }));
    expect(failure.type).toBe("outcome_unavailable");
    expect(failure.message).toMatch(/Ebooks need a language model/);
  });
});
