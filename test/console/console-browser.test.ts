import { createRequire } from "node:module";
import fs from "node:fs/promises";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, openConsoleBrowser } from "./support/console-browser.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { HeldWork } from "../support/stage-work.js";
import { contrastRatio } from "../support/contrast.js";
import { ensureProject } from "../../src/outcomes/projects.js";
import { previewKey } from "../../src/outcomes/stage-support.js";

const ARTIFACTS = path.resolve("test-artifacts");
const require = createRequire(import.meta.url);

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
  passes: unknown[];
}

/**
 * WCAG 2 A/AA checks with axe-core on the page as it stands. Injected through
 * the DevTools protocol, which the page's CSP does not govern; the page itself
 * could never load it.
 */
async function accessibilityViolations(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() => "axe" in window);
  if (!loaded) await page.evaluate(await fs.readFile(require.resolve("axe-core/axe.min.js"), "utf8"));
  const result = await page.evaluate(() =>
    (window as unknown as { axe: { run(options: object): Promise<AxeResult> } }).axe.run({ runOnly: ["wcag2a", "wcag2aa", "wcag21aa", "best-practice"] }),
  );
  // An audit that checked nothing would pass anything.
  expect(result.passes.length).toBeGreaterThan(10);
  return result.violations.map((v) => `${v.id} (${v.impact ?? "?"}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(", ")}`);
}

/** Waits for a value in the page; generous, because CI machines are shared and slow. */
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 15_000 });

/** Screenshots without a hover state left over from the last click. */
async function screenshot(page: Page, name: string): Promise<void> {
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true });
}

/**
 * A person in a real browser, from a fresh server to a working API key and an
 * approved execution. Chromium is Debian's; CI installs it. The guard is only
 * a fallback for machines without it.
 */
describe.runIf(haveChromium)("the Console in a real browser", () => {
  let app: TestApp;
  let context: BrowserContext;
  let page: Page;
  let browser: Awaited<ReturnType<typeof openConsoleBrowser>> | undefined;
  const requests: string[] = [];
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];
  // Every stage finishes at once except `write`, which waits for the test: a plan the page can watch move.
  const work = new HeldWork();
  work.instant = new Set(["understand", "outline", "build", "assemble", "review", "publish"]);

  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    browser = await openConsoleBrowser();
    ({ context, page } = browser);
    page.on("request", (request) => requests.push(request.url()));
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => {
      if (/content security policy|refused to/i.test(message.text())) cspViolations.push(message.text());
    });
    await fs.mkdir(ARTIFACTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  const email = `person-${Date.now()}@example.test`;
  let secret = "";

  it("signs up from a fresh server and lands in the Console", async () => {
    await page.goto(`${app.url}/`);
    await page.waitForURL(`${app.url}/console/sign-in`);
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign in to the Console");
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.getByRole("link", { name: "Create an account" }).click();
    // Wrong input is explained where it was typed, by the server's own rule.
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("short");
    await page.getByRole("button", { name: "Create account" }).click();
    await poll(() => page.getByRole("alert").textContent()).toBe("The password must be 8 to 256 characters (it has 5).");
    await screenshot(page, "console-sign-up.png");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    await poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Executions");
    expect(await page.locator(".account-email").textContent()).toBe(email);
    // The session cookie is invisible to the page's script.
    expect(await page.evaluate(() => document.cookie)).toBe("");
    const [cookie] = await context.cookies(app.url);
    expect(cookie).toMatchObject({ name: "zero_session", httpOnly: true, sameSite: "Lax" });
  });

  it("creates a key with chosen scopes, shows the secret once, and lists it", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.waitForURL(`${app.url}/console/keys`);
    await poll(() => page.locator(".empty").textContent()).toContain("No keys yet");

    await page.getByLabel("Name").fill("Deploy pipeline");
    // `read` starts checked; add `build`.
    expect(await page.getByRole("checkbox", { name: /^read/ }).isChecked()).toBe(true);
    await page.getByRole("checkbox", { name: /^build/ }).check();
    await page.getByRole("button", { name: "Create key" }).click();

    const panel = page.locator(".secret-card");
    await panel.waitFor({ state: "visible" });
    expect(await panel.textContent()).toContain("You will not see it again.");
    secret = await page.getByLabel("New API key").inputValue();
    expect(secret).toMatch(/^zk_[0-9A-Za-z]{32,}$/);
    // Focus moves to the panel, so keyboard and screen-reader users meet the secret first.
    expect(await page.evaluate(() => document.activeElement?.closest(".secret-card") !== null)).toBe(true);
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-new-key.png");
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
    await page.getByRole("button", { name: "Copy" }).click();
    await poll(() => page.locator(".copy-status").textContent()).toBe("Copied to the clipboard.");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    const row = page.locator("tbody tr", { hasText: "Deploy pipeline" });
    await row.waitFor();
    expect(await row.locator(".chip").allTextContents()).toEqual(["read", "build"]);
    const prefix = (await row.locator(".prefix").textContent())!.replace(/…$/, "");
    expect(prefix.length).toBeGreaterThanOrEqual(6);
    expect(secret.startsWith(prefix)).toBe(true);
    expect(await row.locator("[data-label='Status']").textContent()).toBe("Active");
    expect(await row.locator("[data-label='Last used']").textContent()).toBe("Never");

    // A second key without `read`, to show the scopes are enforced.
    await page.getByRole("button", { name: "Done, I have saved it" }).click();
    expect(await panel.isHidden()).toBe(true);
    await page.getByLabel("Name").fill("Chat only");
    await page.getByRole("checkbox", { name: /^read/ }).uncheck();
    await page.getByRole("checkbox", { name: /^chat/ }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    await panel.waitFor({ state: "visible" });
    const chatSecret = await page.getByLabel("New API key").inputValue();
    await page.getByRole("button", { name: "Done, I have saved it" }).click();

    // The secret shown once is nowhere in the list.
    expect(await page.locator("main").textContent()).not.toContain(secret);

    // From a program: the key works in its scopes and is refused outside them.
    const list = await fetch(`${app.url}/api/execution`, { headers: { authorization: `Bearer ${secret}` } });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual({ plans: [] });
    const created = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ goal: "A one-page site for a neighbourhood bakery" }),
    });
    expect(created.status).toBe(202);
    (await work.next()).succeed();
    const noScope = await fetch(`${app.url}/api/execution`, { headers: { authorization: `Bearer ${chatSecret}` } });
    expect(noScope.status).toBe(403);
    expect(((await noScope.json()) as { error: { type: string } }).error.type).toBe("permission_denied");

    // Last use shows up in the list.
    await page.reload();
    await poll(() => page.locator("tbody tr", { hasText: "Deploy pipeline" }).locator("[data-label='Last used']").textContent()).not.toBe("Never");
  });

  it("revokes the key in the UI, after which the program gets 401", async () => {
    const row = page.locator("tbody tr", { hasText: "Deploy pipeline" });
    await row.getByRole("button", { name: "Revoke key Deploy pipeline" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor({ state: "visible" });
    expect(await dialog.textContent()).toContain("Revoke “Deploy pipeline”?");
    // The safe choice has focus; Escape cancels.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Keep it");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    expect(await row.locator("[data-label='Status']").textContent()).toBe("Active");
    await row.getByRole("button", { name: "Revoke key Deploy pipeline" }).click();
    await dialog.waitFor({ state: "visible" });
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await dialog.waitFor({ state: "hidden" });
    await poll(() => row.locator("[data-label='Status']").textContent()).toMatch(/^Revoked/);
    expect(await row.getByRole("button").count()).toBe(0);

    const after = await fetch(`${app.url}/api/execution`, { headers: { authorization: `Bearer ${secret}` } });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { type: string } }).error.type).toBe("unauthenticated");

    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-keys.png");
    // Narrow screens: the table turns into stacked rows, nothing scrolls sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await screenshot(page, "console-keys-mobile.png");
    await page.setViewportSize({ width: 1280, height: 860 });
    // The dark scheme keeps its contrast too.
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-keys-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("starts an execution from a goal, follows it live, approves the gate and links the results", async () => {
    await page.getByRole("link", { name: "Executions" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    // The execution the key started is already listed.
    await page.locator(".execution").first().waitFor();

    await page.getByLabel("Goal").fill("A small site for a community garden, with opening hours");
    await page.getByLabel("Outcome").selectOption("website");
    // From the keyboard: Ctrl+Enter in the goal starts it.
    await page.getByLabel("Goal").press("Control+Enter");

    const card = page.locator(".execution", { hasText: "community garden" });
    await card.waitFor();
    // The plan runs until `write`, which the test holds; the page follows it over a WatchExecution stream.
    await poll(() => card.locator(".stage-running").textContent()).toContain("Write");
    expect(await card.locator(".status").textContent()).toBe("Running");
    await poll(() => requests.some((url) => url.endsWith("/zero.v1.ExecutionService/WatchExecution"))).toBe(true);
    // Halfway through writing, the stage shows it; the bar still counts finished stages (2 of 6).
    const writing = await work.next();
    await writing.input.progress(0.5);
    await poll(() => card.locator(".stage-running .stage-progress").textContent()).toBe("50%");
    expect(await card.locator("progress").getAttribute("value")).toBe("33");
    writing.succeed();
    // The change arrives without a reload.
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    expect(Number(await card.locator("progress").getAttribute("value"))).toBeGreaterThan(0);
    expect(await card.getByRole("link", { name: /Open preview/ }).getAttribute("href")).toMatch(/\/preview\/pln_/);

    await card.getByRole("button", { name: "Approve and publish" }).click();
    await poll(() => card.locator(".status").textContent()).toBe("Succeeded");
    expect(await card.locator("progress").getAttribute("value")).toBe("100");
    const published = card.getByRole("link", { name: /Open published site/ });
    expect(await published.getAttribute("href")).toMatch(/\/sites\/pln_/);
    expect(await published.getAttribute("rel")).toBe("noopener noreferrer");

    // Its file to download, and its history on demand: each stage with its attempt and how long it ran.
    const download = card.getByRole("link", { name: "Download site (.zip)" });
    expect(await download.getAttribute("href")).toMatch(/^\/api\/execution\/download\?id=pln_\w+$/);
    await card.locator(".history summary").click();
    const timeline = card.locator(".timeline");
    await poll(() => timeline.locator(".event").count()).toBeGreaterThan(10);
    const events = await timeline.locator(".event").allTextContents();
    expect(events[0]).toContain("Created");
    expect(events.some((text) => /Done.*write · attempt 1.*\d+(\.\d)? (ms|s)/.test(text))).toBe(true);
    expect(events.some((text) => text.includes("Approved"))).toBe(true);
    expect(events.at(-1)).toMatch(/Done.*publish/);

    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-executions.png");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-executions-dark.png");
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "console-executions-mobile.png");
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("asks for changes at the gate: a new draft, listed with its own preview, waits for approval again", async () => {
    await page.getByLabel("Goal").fill("A site for a pottery studio with evening classes");
    await page.getByLabel("Goal").press("Control+Enter");
    const card = page.locator(".execution", { hasText: "pottery studio" });
    await card.waitFor();
    (await work.next()).succeed();
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");

    // Beside Approve: the feedback box. Asking for a new draft runs the writing stages again.
    await card.getByLabel("Ask for changes").fill('Call it "Kiln & Clay" and make it calmer');
    await card.getByRole("button", { name: "Ask for a new draft" }).click();
    await poll(() => card.locator(".status").textContent()).toBe("Running");
    (await work.next()).succeed();
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    const drafts = card.getByRole("region", { name: "Drafts" });
    expect(await drafts.locator("li").allTextContents()).toEqual([expect.stringMatching(/^First draft/), expect.stringMatching(/^Revision 1.*Kiln & Clay/)]);
    const links = await drafts.getByRole("link").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    expect(links).toHaveLength(2);
    expect(links[0]).toMatch(/\/preview\/pln_\w+\/$/);
    expect(links[1]).toMatch(/\/preview\/pln_\w+-r1\/$/);
    await card.locator(".history summary").click();
    await poll(() => card.locator(".event-revision_requested").textContent()).toContain('Changes asked forCall it "Kiln & Clay" and make it calmer');

    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-revision.png");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: "light" });
    // The plan stays at the gate; the next test leaves it be.
  });

  it("cancels a running plan and deletes a plan, each after asking", async () => {
    await page.getByLabel("Goal").fill("A site for a chess club that meets on Tuesdays");
    await page.getByLabel("Goal").press("Control+Enter");
    const card = page.locator(".execution", { hasText: "chess club" });
    await card.waitFor();
    const held = await work.next();
    await poll(() => card.locator(".stage-running").textContent()).toContain("Write");
    const id = (await card.getAttribute("data-plan-id"))!;

    await card.getByRole("button", { name: "Cancel plan" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor({ state: "visible" });
    expect(await dialog.textContent()).toContain("Cancel “A site for a chess club that meets on Tuesdays”?");
    // The safe choice has focus.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Keep it");
    await dialog.getByRole("button", { name: "Cancel plan" }).click();
    await dialog.waitFor({ state: "hidden" });
    await poll(() => card.locator(".status").textContent()).toBe("Cancelled");
    // The stage that was running was told to stop.
    expect(held.input.signal.aborted).toBe(true);
    expect(await card.getByRole("button", { name: "Cancel plan" }).count()).toBe(0);
    expect(await card.locator(".stage-cancelled").count()).toBeGreaterThan(0);
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshot(page, "console-cancelled.png");

    await card.getByRole("button", { name: "Delete" }).click();
    await dialog.waitFor({ state: "visible" });
    expect(await dialog.textContent()).toContain("cannot be undone");
    await dialog.getByRole("button", { name: "Delete plan" }).click();
    await dialog.waitFor({ state: "hidden" });
    await poll(() => card.count()).toBe(0);
    // Focus stays on the list, not lost to the page. The dialog hides before its close event moves focus: wait for that.
    await poll(() => page.evaluate(() => document.activeElement?.id)).toBe("executions-title");
    const gone = await page.evaluate((planId) => fetch(`/api/execution?id=${planId}`).then((r) => r.status), id);
    expect(gone).toBe(404);
  });

  it("pages back through older executions, ten at a time", async () => {
    work.instant.add("write");
    const before = await page.locator(".execution").count();
    const created = await page.evaluate(async () => {
      const statuses: number[] = [];
      for (let i = 1; i <= 10; i++) {
        const res = await fetch("/api/execution", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ goal: `Paging plan ${i}: a website for a corner bakery` }),
        });
        statuses.push(res.status);
      }
      return statuses;
    });
    expect(created).toEqual(Array(10).fill(202));
    await page.reload();
    await poll(() => page.locator(".execution").count()).toBe(10);
    const older = page.getByRole("button", { name: "Show older executions" });
    expect(await older.isVisible()).toBe(true);
    expect(await page.locator(".execution", { hasText: "community garden" }).count()).toBe(0);

    await older.click();
    await poll(() => page.locator(".execution").count()).toBe(10 + before);
    expect(await page.locator(".execution", { hasText: "community garden" }).count()).toBe(1);
    // Fewer than ten came back: there is nothing older, so the button goes.
    expect(await older.isVisible()).toBe(false);
    // Newest first all the way down.
    const titles = await page.locator(".execution .goal").allTextContents();
    expect(titles.indexOf("Paging plan 10: a website for a corner bakery")).toBe(0);
    expect(titles.indexOf("Paging plan 1: a website for a corner bakery")).toBe(9);
  });

  it("downloads a built plan's file, says why when there is none, and sends a person whose session has ended to sign in", async () => {
    const card = page.locator(".execution", { hasText: "community garden" });
    const link = card.getByRole("link", { name: "Download site (.zip)" });
    // The held stages wrote no files: the card says so, where the browser alone would show a failed download.
    await link.click();
    await poll(() => card.getByRole("alert").textContent()).toMatch(/^Plan pln_\w+ has nothing to download until its build stage succeeds\.$/);

    const planId = (await card.getAttribute("data-plan-id"))!;
    await ensureProject(app.artifacts, planId, "Community garden");
    await app.artifacts.put(`preview/${previewKey(planId, undefined)}/index.html`, "<!doctype html><title>Community garden</title>");
    const [saved] = await Promise.all([page.waitForEvent("download"), link.click()]);
    expect(saved.suggestedFilename()).toBe("community-garden.zip");
    expect(await saved.failure()).toBeNull();
    expect(await card.getByRole("alert").isVisible()).toBe(false);
    expect(page.url()).toBe(`${app.url}/console/executions`);

    // The session ends elsewhere (it expired, say): the page does not know until it asks.
    const cookies = await context.cookies();
    await context.clearCookies();
    await link.click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await context.addCookies(cookies);
    await page.goto(`${app.url}/console/executions`);
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor();
  });

  it("signs out, after which the session no longer works", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.goto(`${app.url}/console/keys`);
    await page.waitForURL(`${app.url}/console/sign-in`);
    // Signing in again returns to the page asked for.
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/keys`);
  });

  it("changes the password beside the keys, saying what is wrong, and signs every other session out", async () => {
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
    // Signed in on another device too.
    const elsewhere = await fetch(`${app.url}/zero.v1.ConsoleService/SignIn`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: app.url },
      body: JSON.stringify({ email, password: "a long enough password" }),
    });
    expect(elsewhere.status).toBe(200);
    const otherSession = elsewhere.headers.getSetCookie()[0]!.split(";")[0]!;

    const form = page.getByRole("region", { name: "Change password" });
    const current = form.getByLabel("Current password");
    const fresh = form.getByLabel("New password");
    const submit = form.getByRole("button", { name: "Change password" });
    const alert = form.getByRole("alert");
    // Too short: said where it was typed, before anything is sent.
    await current.fill("not the password");
    await fresh.fill("short");
    await submit.click();
    await poll(() => alert.textContent()).toBe("The new password must be 8 to 256 characters (it has 5).");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("autocomplete"))).toBe("new-password");
    // The wrong current password: the server's words, and focus back on that field.
    await fresh.fill("a newer and longer password");
    await submit.click();
    await poll(() => alert.textContent()).toBe("The current password is incorrect.");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("autocomplete"))).toBe("current-password");
    expect(await accessibilityViolations(page)).toEqual([]);

    await current.fill("a long enough password");
    await submit.click();
    await poll(() => form.locator(".form-success").textContent()).toBe("Password changed. Every other device signed in to this account has been signed out.");
    expect(await alert.isHidden()).toBe(true);
    expect(await current.inputValue()).toBe("");
    expect(await fresh.inputValue()).toBe("");
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, "console-password.png");

    // This page carries on; the other device does not.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/console/keys");
    const other = await fetch(`${app.url}/api/execution`, { headers: { cookie: otherSession } });
    expect(other.status).toBe(401);
    // Only the new password signs in now.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => page.getByRole("alert").textContent()).toBe("The email or password is incorrect.");
    await page.getByLabel("Password").fill("a newer and longer password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
  });

  it("ties each form error to its field, and keeps fields and danger buttons visible in both colour schemes", async () => {
    /** The field's invalid state and the texts that describe it (its aria-describedby, resolved). */
    const fieldState = (id: string) =>
      page.evaluate((fieldId) => {
        const field = document.getElementById(fieldId)!;
        const described = (field.getAttribute("aria-describedby") ?? "").split(/\s+/).filter(Boolean);
        return {
          invalid: field.getAttribute("aria-invalid"),
          describedBy: described.map((ref) => document.getElementById(ref)?.textContent ?? `missing #${ref}`),
        };
      }, id);
    /** Each visible field's border against its own fill and against what it sits on (1.4.11: the border is all that shows it). */
    const fieldBorders = () =>
      page.evaluate(() => {
        // At rest: a focused field shows the focus colour instead.
        (document.activeElement as HTMLElement | null)?.blur();
        return [...document.querySelectorAll<HTMLElement>("input:not([type=checkbox]), textarea, select")]
          .filter((field) => field.offsetParent !== null)
          .map((field) => {
            let behind = "";
            for (let parent = field.parentElement; parent && !behind; parent = parent.parentElement) {
              const fill = getComputedStyle(parent).backgroundColor;
              if (!/^rgba\(.*, 0\)$|^transparent$/.test(fill)) behind = fill;
            }
            const style = getComputedStyle(field);
            return { id: field.id.replace(/pln_\w+/, "pln_…"), border: style.borderTopColor, fill: style.backgroundColor, behind };
          });
      });
    const problems = new Set<string>();
    const checkBorders = async (where: string) => {
      for (const scheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const field of await fieldBorders()) {
          for (const against of [field.fill, field.behind]) {
            const ratio = contrastRatio(field.border, against);
            if (ratio < 3) problems.add(`${where} #${field.id} (${scheme}): border ${field.border} on ${against} is ${ratio.toFixed(2)}:1`);
          }
        }
      }
      await page.emulateMedia({ colorScheme: "light" });
    };

    // A goal too short: the goal is marked invalid and described by the error until a good one is sent.
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor();
    await page.getByLabel("Goal").fill("short");
    await page.getByLabel("Goal").press("Control+Enter");
    await poll(() => page.locator(".start-form").getByRole("alert").textContent()).toMatch(/^The goal must be/);
    const goalError = (await page.locator(".start-form").getByRole("alert").textContent())!;
    expect(await fieldState("goal")).toEqual({ invalid: "true", describedBy: [expect.stringMatching(/^Describe what you want/), goalError] });
    await checkBorders("executions");
    await page.getByLabel("Goal").fill("A site for a choir that sings on Thursdays");
    await page.getByLabel("Goal").press("Control+Enter");
    await page.locator(".execution", { hasText: "choir" }).waitFor();
    await poll(() => fieldState("goal")).toEqual({ invalid: null, describedBy: [expect.stringMatching(/^Describe what you want/)] });

    // Feedback that says nothing: that card's box is marked, after its hint.
    const card = page.locator(".execution", { hasText: "choir" });
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    const feedbackId = `plan-${await card.getAttribute("data-plan-id")}-feedback`;
    await card.getByLabel("Ask for changes").fill("   ");
    await card.getByRole("button", { name: "Ask for a new draft" }).click();
    await poll(() => card.getByRole("alert").textContent()).toBe("Say what should change before asking for a new draft.");
    expect(await fieldState(feedbackId)).toEqual({
      invalid: "true",
      describedBy: [expect.stringMatching(/^Say what to change/), "Say what should change before asking for a new draft."],
    });

    // The confirm dialog's danger button, at rest and under the pointer, in both schemes.
    await poll(() => card.getByRole("button", { name: "Delete" }).count()).toBe(1);
    await card.getByRole("button", { name: "Delete" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor({ state: "visible" });
    const danger = dialog.getByRole("button", { name: "Delete plan" });
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const state of ["rest", "hover"] as const) {
        if (state === "hover") await danger.hover();
        else await dialog.getByRole("heading").hover();
        const painted = await danger.evaluate((element) => ({ color: getComputedStyle(element).color, fill: getComputedStyle(element).backgroundColor }));
        const ratio = contrastRatio(painted.color, painted.fill);
        if (ratio < 4.5) problems.add(`"Delete plan" (${scheme}, ${state}): ${painted.color} on ${painted.fill} is ${ratio.toFixed(2)}:1`);
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });

    // A key name of spaces: the name, after its hint.
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("  ");
    await page.getByRole("button", { name: "Create key" }).click();
    await poll(() => page.locator(".key-form").getByRole("alert").textContent()).toBe("Give the key a name.");
    expect(await fieldState("key-name")).toEqual({ invalid: "true", describedBy: ["So you can tell your keys apart later.", "Give the key a name."] });
    // No scope ticked: every scope box, after its own hint; the name is no longer marked.
    await page.getByLabel("Name").fill("No scopes");
    await page.locator(".key-form input[name=scopes]:checked").evaluateAll((boxes) => {
      for (const box of boxes as HTMLInputElement[]) box.checked = false;
    });
    await page.getByRole("button", { name: "Create key" }).click();
    await poll(() => page.locator(".key-form").getByRole("alert").textContent()).toBe("Choose at least one scope.");
    expect(await fieldState("key-name")).toEqual({ invalid: null, describedBy: ["So you can tell your keys apart later."] });
    expect(await fieldState("scope-read")).toEqual({ invalid: "true", describedBy: [expect.any(String), "Choose at least one scope."] });
    expect(await fieldState("scope-chat")).toEqual({ invalid: "true", describedBy: [expect.any(String), "Choose at least one scope."] });
    await page.getByLabel("Name").fill("");
    // A new password too short marks the new one; a wrong current one then marks the current one instead.
    const passwordForm = page.getByRole("region", { name: "Change password" });
    await passwordForm.getByLabel("Current password").fill("not the password");
    await passwordForm.getByLabel("New password").fill("short");
    await passwordForm.getByRole("button", { name: "Change password" }).click();
    await poll(() => passwordForm.getByRole("alert").textContent()).toBe("The new password must be 8 to 256 characters (it has 5).");
    expect(await fieldState("new-password")).toEqual({
      invalid: "true",
      describedBy: [expect.stringMatching(/^8 to 256 characters/), "The new password must be 8 to 256 characters (it has 5)."],
    });
    expect(await fieldState("current-password")).toEqual({ invalid: null, describedBy: [] });
    await passwordForm.getByLabel("New password").fill("a long enough new password");
    await passwordForm.getByRole("button", { name: "Change password" }).click();
    await poll(() => passwordForm.getByRole("alert").textContent()).toBe("The current password is incorrect.");
    expect(await fieldState("current-password")).toEqual({ invalid: "true", describedBy: ["The current password is incorrect."] });
    expect(await fieldState("new-password")).toEqual({ invalid: null, describedBy: [expect.stringMatching(/^8 to 256 characters/)] });

    // A wrong sign-in: both fields are marked, the error describes them.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => page.getByRole("alert").textContent()).toBe("The email or password is incorrect.");
    expect(await fieldState("auth-email")).toEqual({ invalid: "true", describedBy: ["The email or password is incorrect."] });
    expect(await fieldState("auth-password")).toEqual({ invalid: "true", describedBy: ["The email or password is incorrect."] });
    await checkBorders("sign-in");
    // A sign-up password too short: the password, after its hint.
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Email").fill(`another-${email}`);
    await page.getByLabel("Password").fill("short");
    await page.getByRole("button", { name: "Create account" }).click();
    await poll(() => page.getByRole("alert").textContent()).toBe("The password must be 8 to 256 characters (it has 5).");
    expect(await fieldState("auth-password")).toEqual({
      invalid: "true",
      describedBy: [expect.stringMatching(/^At least 8 characters/), "The password must be 8 to 256 characters (it has 5)."],
    });
    expect(await fieldState("auth-email")).toEqual({ invalid: null, describedBy: [] });

    expect([...problems]).toEqual([]);
    // Signed in again, as the Console was.
    await page.getByRole("link", { name: "Sign in" }).click();
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("a newer and longer password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
  });

  it("loaded nothing from anywhere else and broke no policy", () => {
    const origin = new URL(app.url).origin;
    expect(requests.length).toBeGreaterThan(10);
    expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
