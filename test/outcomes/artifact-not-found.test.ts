import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { htmlProblems } from "./support/outcome-kit.js";

// A person's browser asking for a site, preview or book that does not exist (mistyped,
// never made, deleted) gets a small HTML page saying so, not the API's JSON error; a
// client that asks for JSON still gets the API's error.

const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const UNKNOWN = [
  "/preview/pln_unknown/",
  "/preview/pln_unknown/index.html",
  "/preview/",
  "/sites/no-such-site/",
  "/sites/no-such-site/about.html",
  "/sites/",
  "/sites/%ZZ/index.html",
  "/sites/.hidden",
  "/books/no-such-book/",
];

let app: TestApp;
let credential: Credential;

beforeAll(async () => {
  app = await startTestApp(); // the offline writer
  credential = { apiKey: (await createAccountWithKey(app, ["build", "read"])).apiKey };
}, 60_000);
afterAll(() => app?.close());

/** A request with the path sent as written (fetch would normalise it). */
function rawRequest(
  pathname: string,
  options: { method?: string; accept?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = options.accept ? { accept: options.accept } : undefined;
    const req = http.request(`${app.url}/`, { path: pathname, method: options.method ?? "GET", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

function expectHtmlNotFound(res: { status: number; headers: http.IncomingHttpHeaders; body: string }, path: string): void {
  expect(res.status, path).toBe(404);
  expect(res.headers["content-type"], path).toBe("text/html; charset=utf-8");
  expect(res.headers["content-security-policy"], path).toMatch(/^sandbox/);
  expect(res.headers["cache-control"], path).toBe("no-store");
  expect(res.body, path).toMatch(/^<!DOCTYPE html>/);
  expect(res.body, path).toContain('<html lang="en">');
  expect(res.body, path).toContain("<h1>Nothing here</h1>");
  expect(res.body, path).not.toContain('"error"');
  expect(res.body, path).not.toContain("not_found");
}

describe("an address under /preview/, /sites/ or /books/ that names no site", () => {
  it("answers a browser with a plain HTML 404 page", async () => {
    for (const path of UNKNOWN) expectHtmlNotFound(await rawRequest(path, { accept: BROWSER_ACCEPT }), path);
    expect(await htmlProblems(new Map([["404.html", (await rawRequest("/sites/no-such-site/")).body]]))).toEqual([]);
  });

  it("answers a client that accepts anything (curl, fetch) the same way", async () => {
    for (const path of UNKNOWN) expectHtmlNotFound(await rawRequest(path), path);
    for (const path of UNKNOWN) expectHtmlNotFound(await rawRequest(path, { accept: "*/*" }), path);
  });

  it("answers HEAD with the page's headers and no body", async () => {
    const res = await rawRequest("/sites/no-such-site/", { method: "HEAD", accept: BROWSER_ACCEPT });
    expect(res.status).toBe(404);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(Number(res.headers["content-length"])).toBeGreaterThan(0);
    expect(res.body).toBe("");
  });

  it("answers a client that asks for JSON with the API's error", async () => {
    for (const path of UNKNOWN) {
      const res = await rawRequest(path, { accept: "application/json" });
      expect(res.status, path).toBe(404);
      expect(res.headers["content-type"], path).toContain("application/json");
      expect(JSON.parse(res.body), path).toMatchObject({ error: { type: "not_found" } });
    }
  });
});

describe("a deleted plan's preview and published site, through the real API", () => {
  it("are the HTML 404 page for a browser", async () => {
    const created = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A website for a small bakery in Lyon" });
    const planId = created.body.plan.id;
    const atGate = await waitForPlan(app.url, credential, planId, (p) => p.status === "awaiting_approval", 60_000);
    await postExecution(app.url, credential, { planId, approve: ["review"] });
    const published = await waitForPlan(app.url, credential, planId, (p) => p.status === "succeeded", 60_000);
    const urls = [atGate.previewUrl!, published.publishedUrl!].map((url) => new URL(url).pathname);
    for (const path of urls) expect((await rawRequest(path, { accept: BROWSER_ACCEPT })).status, path).toBe(200);

    const deleted = await fetch(`${app.url}/api/execution?id=${planId}`, { method: "DELETE", headers: authHeaders(app.url, credential) });
    expect(deleted.status).toBe(204);
    for (const path of urls) expectHtmlNotFound(await rawRequest(path, { accept: BROWSER_ACCEPT }), path);
    for (const path of urls) expectHtmlNotFound(await rawRequest(`${path}about.html`, { accept: BROWSER_ACCEPT }), path);
  }, 120_000);
});
