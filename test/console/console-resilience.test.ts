import type { Locator, Page, Request, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, callFromPage, openConsoleBrowser, pollSkippingAhead, signUpInConsole } from "./support/console-browser.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { HeldWork, typicalOutcome, type HeldStage } from "../support/stage-work.js";

/** Waits for a value in the page; generous, because CI machines are shared and slow. */
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 15_000 });

const WATCH = /\/zero\.v1\.ExecutionService\/WatchExecution$/;
const LIST = /\/zero\.v1\.ExecutionService\/ListExecutions$/;
const RESUME = /\/zero\.v1\.ExecutionService\/ResumeExecution$/;

/**
 * As a person switching to another tab (or minimising the window) makes a
 * page hidden: headless Chromium keeps every tab visible, so the page is told
 * so the way a browser tells it, by its visibilityState and a visibilitychange event.
 */
const setVisibility = (page: Page, state: "hidden" | "visible") =>
  page.evaluate(`(() => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "${state}" });
    Object.defineProperty(document, "hidden", { configurable: true, get: () => ${state === "hidden"} });
    document.dispatchEvent(new Event("visibilitychange"));
  })()`);

/** How many WatchExecution streams the page holds open (each holds one of the browser's six connections to the service). */
function openWatches(page: Page): () => number {
  const open = new Set<Request>();
  page.on("request", (request) => {
    if (WATCH.test(request.url())) open.add(request);
  });
  const ended = (request: Request) => open.delete(request);
  page.on("requestfinished", ended);
  page.on("requestfailed", ended);
  return () => open.size;
}

/**
 * The Console when the network or the browser gets in the way: several tabs
 * sharing the browser's connections, a read that never answers, an answer
 * lost on the way back, the service away for a moment. One person, one
 * server, one browser, in order.
 */
describe.runIf(haveChromium)("the Console under disruption", () => {
  let app: TestApp;
  let page: Page;
  let browser: Awaited<ReturnType<typeof openConsoleBrowser>> | undefined;
  const pageErrors: string[] = [];
  // Every stage finishes at once except `write`, which waits for the test.
  const work = new HeldWork();
  work.instant = new Set(["understand", "outline", "build", "assemble", "review", "publish"]);

  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    browser = await openConsoleBrowser();
    ({ page } = browser);
    page.on("pageerror", (error) => pageErrors.push(error.message));
    // Playwright's clock, flowing as real time does, so a test can skip ahead to the Console's next list refresh or a call's timeout.
    await page.clock.install();
    await signUpInConsole(page, app.url, `disrupted-${Date.now()}@example.test`, "a long enough password");
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** Through the REST API with the page's own session, as another tab or a script would. */
  const api = (method: string, url: string, body?: unknown) => callFromPage(page, method, url, body);
  const pollAhead = <T>(read: () => Promise<T>) => pollSkippingAhead(page, read);

  async function open(): Promise<void> {
    await page.goto(`${app.url}/console/executions`);
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor();
  }

  /** A plan started through the API, held in its `write` stage: running until the test lets it go on. */
  async function runningPlan(goal: string): Promise<HeldStage> {
    expect((await api("POST", "/api/execution", { goal })).status).toBe(202);
    return work.next();
  }

  /** Starts a plan from the form and lets it run to the gate. */
  async function planAtGate(goal: string): Promise<Locator> {
    await page.getByLabel("Goal").fill(goal);
    await page.getByLabel("Goal").press("Control+Enter");
    const card = page.locator(".execution", { hasText: goal });
    await card.waitFor();
    const held = await work.next();
    held.succeed(typicalOutcome(held.input));
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    return card;
  }

  it("leaves room for requests with three tabs open on running plans, and a hidden tab lets go of its streams until shown again", async () => {
    const writing = [
      await runningPlan("A site for a choir, written while three tabs watch"),
      await runningPlan("A site for a bakery, written while three tabs watch"),
    ];
    const tabs = [page, await browser!.context.newPage(), await browser!.context.newPage()];
    const watches = tabs.map(openWatches);
    try {
      for (const tab of tabs) {
        await tab.goto(`${app.url}/console/executions`);
        await poll(() => tab.locator(".execution .status", { hasText: "Running" }).count()).toBe(2);
      }
      for (const held of watches) await poll(held).toBeGreaterThan(0);

      // All three visible, side by side: the front one can still start a plan, and its list still refreshes.
      const goal = "A site for a florist, started with two other tabs open";
      await page.getByLabel("Goal").fill(goal);
      await page.getByLabel("Goal").press("Control+Enter");
      const card = page.locator(".execution", { hasText: goal });
      await poll(() => card.count()).toBe(1);
      writing.push(await work.next());
      await writing[0]!.input.progress(0.4);
      await pollAhead(() => page.locator(".stage-progress").allTextContents()).toContain("40%");

      // Two go to the background: they hold no stream while hidden.
      await setVisibility(tabs[1]!, "hidden");
      await setVisibility(tabs[2]!, "hidden");
      await poll(watches[1]!).toBe(0);
      await poll(watches[2]!).toBe(0);
      await writing[1]!.input.progress(0.6);
      await pollAhead(() => page.locator(".stage-progress").allTextContents()).toContain("60%");

      // Shown again: it follows the running plans again at once.
      await writing[0]!.input.progress(0.7);
      await setVisibility(tabs[1]!, "visible");
      await poll(() => tabs[1]!.locator(".stage-progress").allTextContents()).toContain("70%");
      await poll(watches[1]!).toBeGreaterThan(0);
      expect(watches[2]!()).toBe(0);
    } finally {
      for (const tab of tabs.slice(1)) await tab.close();
      for (const held of writing) held.succeed(typicalOutcome(held.input));
    }
  });

  it("keeps the list current after a read that never answers", async () => {
    await open();
    // One list read is lost on the way (a connection that died while the laptop slept): no answer, no error.
    let lost = false;
    await page.route(LIST, (route: Route) => {
      if (lost) return void route.continue();
      lost = true;
    });
    try {
      await poll(async () => {
        await page.clock.fastForward(1000);
        return lost;
      }).toBe(true);
      // The read gives up in time, says so, and the list is read again.
      await page.clock.fastForward(15_000);
      await poll(() => page.locator(".empty").textContent()).toContain("Could not load executions");
      const created = await runningPlan("A site for a cycling club, made while a read hung");
      const card = page.locator(".execution", { hasText: "made while a read hung" });
      await pollAhead(() => card.locator(".status").allTextContents()).toEqual(["Running"]);
      expect(await page.locator(".empty").isHidden()).toBe(true);
      created.succeed(typicalOutcome(created.input));
      await pollAhead(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    } finally {
      await page.unroute(LIST);
    }
  });

  it("does not put feedback back in the box at the next gate when the answer to it was lost, though the draft was asked for", async () => {
    await open();
    const card = await planAtGate("A site for a pottery studio, revised over a flaky connection");
    const feedback = "Put the class timetable on the first page";
    await card.getByLabel("Ask for changes").fill(feedback);
    // The request reaches the service; its answer does not reach the page.
    await page.route(RESUME, async (route) => {
      await route.fetch();
      await route.abort("internetdisconnected");
    });
    try {
      await card.getByRole("button", { name: "Ask for a new draft" }).click();
      await poll(() => card.locator("[data-plan-error]").textContent()).toContain("Could not reach the service");
    } finally {
      await page.unroute(RESUME);
    }
    const rewrite = await work.next();
    expect(rewrite.input.revision?.feedback).toBe(feedback);
    rewrite.succeed(typicalOutcome(rewrite.input));
    await pollAhead(() => card.getByRole("region", { name: "Drafts" }).allTextContents()).toEqual([expect.stringContaining(feedback)]);
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    expect(await card.getByLabel("Ask for changes").inputValue()).toBe("");
  });

  it("takes back 'Could not reach the service' from a card once the service answers again", async () => {
    await open();
    const card = await planAtGate("A site for a chess club, approved while the service was away");
    const said = card.locator("[data-plan-error]");
    await page.route(RESUME, (route) => route.abort("internetdisconnected"));
    try {
      await card.getByRole("button", { name: "Approve and publish" }).click();
      await poll(() => said.textContent()).toContain("Could not reach the service");
    } finally {
      await page.unroute(RESUME);
    }
    // The next read of the list finds the service there: the card no longer says it could not be reached.
    await pollAhead(() => said.isHidden()).toBe(true);
    expect(await card.locator(".status").textContent()).toBe("Waiting for approval");
    expect(await card.getByRole("button", { name: "Approve and publish" }).isEnabled()).toBe(true);
  });

  it("threw nothing in the page", () => {
    expect(pageErrors).toEqual([]);
  });
});
