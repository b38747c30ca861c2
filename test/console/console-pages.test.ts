import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_CSP } from "../../src/console/console-routes.js";
import { startTestApp, type TestApp } from "../support/app.js";

/** The headers every Console response must carry, whatever its status. */
const REQUIRED_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
};

function expectSecurityHeaders(response: Response): void {
  for (const [name, value] of Object.entries(REQUIRED_HEADERS)) {
    expect(response.headers.get(name), `${name} on ${response.url}`).toBe(value);
  }
}

/** Every URL an HTML document refers to through src / href / action / srcset / url(). */
function referencedUrls(html: string): string[] {
  const urls: string[] = [];
  for (const match of html.matchAll(/\s(?:src|href|action|srcset|poster|data)\s*=\s*["']?([^"'\s>]+)/gi)) urls.push(match[1]!);
  return urls;
}

describe("Console pages and assets", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("uses exactly the documented policy", () => {
    expect(CONSOLE_CSP).toBe(REQUIRED_HEADERS["content-security-policy"]);
  });

  it("sends / to the Console", async () => {
    const response = await fetch(`${app.url}/`, { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/console/");
    expectSecurityHeaders(response);
  });

  it("serves one page for every Console path, with only same-origin, non-inline script and style", async () => {
    for (const path of ["/console", "/console/", "/console/keys", "/console/executions", "/console/sign-in", "/console/sign-up"]) {
      const response = await fetch(`${app.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expectSecurityHeaders(response);
      const html = await response.text();
      // No inline code of any kind: the CSP would block it, and it must not be needed.
      expect(html).not.toMatch(/<style/i);
      expect(html).not.toMatch(/\sstyle\s*=/i);
      expect(html).not.toMatch(/\son[a-z]+\s*=/i);
      for (const script of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
        expect(script[1], "every script is a file").toMatch(/\ssrc=/);
        expect(script[2]!.trim(), "no inline script body").toBe("");
      }
      const urls = referencedUrls(html);
      expect(urls.length).toBeGreaterThanOrEqual(3);
      for (const url of urls) {
        if (url.startsWith("#")) continue;
        expect(url, "same-origin, root-relative").toMatch(/^\/console\//);
      }
    }
  });

  it("serves the hashed script, stylesheet and icon with the same headers, cacheable, and nothing external", async () => {
    const html = await (await fetch(`${app.url}/console/`)).text();
    const assets = referencedUrls(html).filter((u) => u.startsWith("/console/assets/"));
    const script = assets.find((u) => /\/console-[\w-]{12}\.js$/.test(u));
    const style = assets.find((u) => /\/console-[\w-]{12}\.css$/.test(u));
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    expect(assets.filter((u) => u.endsWith(".js"))).toHaveLength(1);
    expect(assets.filter((u) => u.endsWith(".css"))).toHaveLength(1);

    const js = await fetch(`${app.url}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toContain("immutable");
    expectSecurityHeaders(js);
    const jsText = await js.text();
    expect(jsText.length).toBeGreaterThan(10_000);
    // Nothing a strict CSP would have to relax for (booleans keep a failure's output short).
    expect(/\b(?:importScripts|eval)\s*\(|new Function\(/.test(jsText), "no eval-like code").toBe(false);

    const css = await fetch(`${app.url}${style}`);
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expectSecurityHeaders(css);
    const cssText = await css.text();
    expect(cssText).not.toMatch(/@import/i);
    expect(cssText).not.toMatch(/url\(\s*["']?(?:https?:)?\/\//i);
    expect(cssText).not.toMatch(/@font-face/i);

    const icon = await fetch(`${app.url}/console/assets/icon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toBe("image/svg+xml");
    expectSecurityHeaders(icon);

    // Revalidation is cheap: the ETag answers 304.
    const again = await fetch(`${app.url}${script}`, { headers: { "if-none-match": js.headers.get("etag")! } });
    expect(again.status).toBe(304);
    expectSecurityHeaders(again);
  });

  it("answers HEAD like GET without a body", async () => {
    const response = await fetch(`${app.url}/console/keys`, { method: "HEAD" });
    expect(response.status).toBe(200);
    expectSecurityHeaders(response);
    expect(await response.text()).toBe("");
  });

  it("keeps the headers on errors: unknown asset, wrong method", async () => {
    const missing = await fetch(`${app.url}/console/assets/unknown.js`);
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing);
    const post = await fetch(`${app.url}/console/keys`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expectSecurityHeaders(post);
  });

  it("does not claim paths that merely start with /console", async () => {
    const response = await fetch(`${app.url}/consolex`);
    expect(response.status).toBe(404);
  });
});
