import http from "node:http";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium } from "playwright-core";
import { createFileArtifactStore, isValidKey, type ArtifactStore } from "../../src/outcomes/artifact-store.js";
import { createStageWork } from "../../src/outcomes/outcomes-part.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium, outcomeDeps, readTree } from "./support/outcome-kit.js";
import { failureOf, runStages } from "./support/run-stages.js";

const EVIL = `<!DOCTYPE html><html lang="en"><head><title>original</title></head><body>
<p id="said">nothing ran</p>
<script>document.title = "pwned"; document.getElementById("said").textContent = "script ran";</script>
<img src="x" alt="" onerror="document.title = 'pwned by onerror'">
</body></html>`;

let app: TestApp;
let store: ArtifactStore;

beforeAll(async () => {
  app = await startTestApp();
  // The same directory the service serves from.
  store = createFileArtifactStore(path.join(app.dataDir, "artifacts"));
  await store.put("preview/pln_evil/index.html", EVIL);
  await store.put("sites/evil-site/index.html", EVIL);
  await fs.writeFile(path.join(app.dataDir, "secret.txt"), "TOP-SECRET");
});
afterAll(() => app?.close());

/** A GET with the path sent exactly as written (fetch would normalise dot segments first). */
function rawGet(pathname: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}/`, { path: pathname }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
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
          // The document has an opaque origin: it cannot see the service's cookies or storage.
          expect(await page.evaluate(() => window.origin)).toBe("null");
        }
      } finally {
        await browser.close();
      }
    }, 120_000);
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
