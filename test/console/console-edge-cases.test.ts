import type { Locator, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, callFromPage, openConsoleBrowser, pollSkippingAhead, signUpInConsole } from "./support/console-browser.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { HeldWork, typicalOutcome } from "../support/stage-work.js";
import { SIGN_IN_WINDOW_S, wellInsideWindow } from "../support/limit-windows.js";

/** Waits for a value in the page; generous, because CI machines are shared and slow. */
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 15_000 });

// Page-side code as expressions: this file is type-checked without the DOM library.
/** True when nothing on the page reaches past the viewport's right edge. */
const fitsViewport = (page: Page) => page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth");
/** The id of the element with keyboard focus ("" for none, e.g. the page body). */
const focusedId = (page: Page) => page.evaluate<string>("document.activeElement?.id ?? ''");
/**
 * The focused control, described, when a person cannot see it: something else
 * (the sticky header) is drawn at its centre, or it is off the screen. "" when
 * it is in plain sight or nothing has focus.
 */
const hiddenFocus = (page: Page) =>
  page.evaluate<string>(`(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return "";
    const r = e.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + Math.min(r.height / 2, 10));
    if (hit && (hit === e || e.contains(hit) || hit.contains(e))) return "";
    const label = (e.textContent || e.id || e.tagName).trim().slice(0, 40);
    return label + " at top=" + Math.round(r.top) + ", under " + (hit ? (hit.closest(".topbar") ? "the header" : hit.tagName) : "nothing (off screen)");
  })()`);

/** A lone UTF-16 surrogate (half an emoji), or the replacement character one turns into on the way out. */
const BROKEN_TEXT = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|\uFFFD/;

/**
 * The corners a tester found in the Console: long unbroken text, changes
 * made outside the page (another tab, the API), focus after a request,
 * characters beyond the Basic Multilingual Plane, sessions ended elsewhere.
 * One person, one server, one browser, in order, as in console-browser.test.ts.
 */
describe.runIf(haveChromium)("the Console at its edges", () => {
  let app: TestApp;
  let page: Page;
  let browser: Awaited<ReturnType<typeof openConsoleBrowser>> | undefined;
  const pageErrors: string[] = [];
  // Every stage finishes at once except `write`, which waits for the test.
  const work = new HeldWork();
  work.instant = new Set(["understand", "outline", "build", "assemble", "review", "publish"]);
  const email = `edges-${Date.now()}@example.test`;
  const password = "a long enough password";

  beforeAll(async () => {
    // One person makes more than the default 20 plans and drafts an hour here (paging needs more than a page of them).
    app = await startTestApp({ stageWork: work.resolver, env: { ZERO_GENERATION_LIMIT: "200" } });
    browser = await openConsoleBrowser();
    ({ page } = browser);
    page.on("pageerror", (error) => pageErrors.push(error.message));
    // Playwright's clock, flowing as real time does, so a test can skip ahead to the Console's next list refresh.
    await page.clock.install();
    await signUpInConsole(page, app.url, email, password);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** Through the REST API with the page's own session, as another tab or a script would. */
  const api = (method: string, url: string, body?: unknown) => callFromPage(page, method, url, body);
  const pollAhead = <T>(read: () => Promise<T>) => pollSkippingAhead(page, read);

  /** Each test starts from a fresh load of one page, so one failure does not leave the next somewhere else. */
  async function open(name: "executions" | "keys"): Promise<void> {
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(`${app.url}/console/${name}`);
    await page.getByRole("heading", { level: 1, name: name === "keys" ? "API keys" : "Executions" }).waitFor();
  }

  /** True when the browser sets the element right to left, as its text reads (its directionality). */
  const rightToLeft = (element: Locator) => element.evaluate((e) => e.matches(":dir(rtl)"));

  /** The name and description Chromium gives assistive tech for each element matching `selector`, in page order. */
  async function accessibleTexts(selector: string): Promise<{ name: string; description: string }[]> {
    const cdp = await page.context().newCDPSession(page);
    try {
      const { root } = await cdp.send("DOM.getDocument", { depth: 0 });
      const { nodeIds } = await cdp.send("DOM.querySelectorAll", { nodeId: root.nodeId, selector });
      const texts: { name: string; description: string }[] = [];
      for (const nodeId of nodeIds) {
        const [node] = (await cdp.send("Accessibility.getPartialAXTree", { nodeId, fetchRelatives: false })).nodes;
        texts.push({ name: String(node?.name?.value ?? ""), description: String(node?.description?.value ?? "") });
      }
      return texts;
    } finally {
      await cdp.detach();
    }
  }

  /** Stops the Console's list refreshes from reaching the server until `release`, so a test can make its cards stale on purpose. */
  async function holdListRefreshes(): Promise<{ release(): Promise<void> }> {
    const held: Route[] = [];
    const pattern = /\/zero\.v1\.ExecutionService\/ListExecutions$/;
    await page.route(pattern, (route) => void held.push(route));
    return {
      async release() {
        await page.unroute(pattern);
        for (const route of held) await route.continue();
      },
    };
  }

  /** Starts a plan from the form and lets it run to the gate; `projectName` is the name its understand stage gives the project (the card's title). */
  async function planAtGate(goal: string, outcome?: { warning?: string }, projectName?: string): Promise<Locator> {
    if (projectName) work.instant.delete("understand");
    try {
      await page.getByLabel("Goal").fill(goal);
      await page.getByLabel("Goal").press("Control+Enter");
      if (projectName) {
        const understood = await work.next();
        const typical = typicalOutcome(understood.input);
        understood.succeed({ ...typical, project: { ...typical.project!, name: projectName } });
      }
    } finally {
      work.instant.add("understand");
    }
    const card = page.locator(".execution", { hasText: goal.slice(0, 40) });
    await card.waitFor();
    const held = await work.next();
    held.succeed({ ...typicalOutcome(held.input), ...outcome });
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    return card;
  }

  it("keeps long unbroken text inside the page at 375 px and 1,280 px", async () => {
    // A 100-character key name, the server's longest.
    await open("keys");
    await page.getByLabel("Name").fill("k".repeat(100));
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("button", { name: "Done, I have saved it" }).click();
    await page.locator("tbody tr").first().waitFor();
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 860 });
      expect(await fitsViewport(page), `keys at ${width} px`).toBe(true);
    }

    // Revision feedback with a long address is copied into the plan's warning.
    await open("executions");
    const card = await planAtGate("A site for a bicycle repair cafe with long words", {
      warning: `Use https://example.com/${"q".repeat(150)}${"x".repeat(2000)}`,
    });
    expect(await card.locator(".notice-warn").textContent()).toContain("https://example.com/qqq");
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 860 });
      expect(await fitsViewport(page), `executions at ${width} px`).toBe(true);
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("never leaves the control with keyboard focus under the sticky header, on a phone or a desktop", async () => {
    await open("executions");
    await planAtGate("A site for a sailing club, reached from the keyboard");
    await planAtGate("A site for a rowing club, reached from the keyboard");
    const hidden: string[] = [];
    for (const [width, height] of [
      [390, 844],
      [1280, 860],
    ] as const) {
      await page.setViewportSize({ width, height });
      await page.goto(`${app.url}/console/executions`);
      await page.locator(".execution").nth(1).waitFor();
      // Down the page and back up: Shift+Tab scrolls up, where the header waits.
      for (const key of [...Array<string>(40).fill("Tab"), ...Array<string>(40).fill("Shift+Tab")]) {
        await page.keyboard.press(key);
        const where = await hiddenFocus(page);
        if (where) hidden.push(`${width} px, ${key}: ${where}`);
      }
    }
    expect(hidden).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("shows plans created, changed and deleted elsewhere without a reload, while none is running", async () => {
    await open("executions");
    const created = await api("POST", "/api/execution", { goal: "A site made in another tab for a choir" });
    expect(created.status).toBe(202);
    (await work.next()).succeed();
    const card = page.locator(".execution", { hasText: "another tab for a choir" });
    // allTextContents, not textContent: it reads at once rather than wait for a card the clock has not yet let in.
    await pollAhead(() => card.locator(".status").allTextContents()).toEqual(["Waiting for approval"]);

    expect((await api("POST", "/api/execution", { planId: created.body!.plan!.id, cancel: true })).status).toBe(202);
    await pollAhead(() => card.locator(".status").textContent()).toBe("Cancelled");

    expect((await api("DELETE", `/api/execution?id=${created.body!.plan!.id}`)).status).toBe(204);
    await pollAhead(() => card.count()).toBe(0);
  });

  it("after showing older executions, still drops plans deleted elsewhere, older or newest, and keeps the rest", async () => {
    // Eleven more plans, each run straight to the gate: more than one page.
    work.instant.add("write");
    try {
      for (let i = 1; i <= 11; i++) {
        const created = await api("POST", "/api/execution", { goal: `Older-page plan ${i}: a site for a village hall` });
        expect(created.status).toBe(202);
        // At the gate before the next, so none is left writing (held) once `write` is held again.
        await poll(async () => (await api("GET", `/api/execution?id=${created.body!.plan!.id}`)).body?.plan).toMatchObject({ status: "awaiting_approval" });
      }
    } finally {
      work.instant.delete("write");
    }
    await open("executions");
    const cards = page.locator(".execution");
    await poll(() => cards.count()).toBe(10);
    await page.getByRole("button", { name: "Show older executions" }).click();
    await poll(() => cards.count()).toBeGreaterThan(10);
    const ids = await cards.evaluateAll((items) => items.map((item) => item.getAttribute("data-plan-id")!));
    const [newest, older] = [ids[0]!, ids.at(-1)!];
    expect((await api("DELETE", `/api/execution?id=${older}`)).status).toBe(204);
    expect((await api("DELETE", `/api/execution?id=${newest}`)).status).toBe(204);
    // Gone within the usual refresh, without a reload; the older pages shown stay shown.
    await pollAhead(() => cards.evaluateAll((items) => items.map((item) => item.getAttribute("data-plan-id")!))).toEqual(
      ids.filter((id) => id !== newest && id !== older),
    );
  });

  it("re-reads a plan when an action finds it changed elsewhere, and says so in plain words", async () => {
    await open("executions");
    const card = await planAtGate("A site for a lending library of tools");
    const hold = await holdListRefreshes();
    try {
      const id = (await card.getAttribute("data-plan-id"))!;
      expect((await api("POST", "/api/execution", { planId: id, cancel: true })).status).toBe(202);
      // The card still offers what no longer applies; asking for a draft of a cancelled plan is a 409.
      await card.getByLabel("Ask for changes").fill("Make it friendlier");
      await card.getByRole("button", { name: "Ask for a new draft" }).click();
      await poll(() => card.locator(".status").textContent()).toBe("Cancelled");
      const alert = card.getByRole("alert");
      await poll(() => alert.textContent()).toBe("Not done: this plan changed elsewhere and was cancelled.");
      expect(await alert.textContent()).not.toContain("pln_");
    } finally {
      await hold.release();
    }
  });

  it("says a revision cancelled while it was written was never built, not that it is still being written", async () => {
    await open("executions");
    const card = await planAtGate("A site for a bicycle repair cafe by the canal");
    const id = (await card.getAttribute("data-plan-id"))!;
    expect((await api("POST", "/api/execution", { planId: id, feedback: "Make it calmer" })).status).toBe(202);
    await work.next(); // the revision's `write`, held
    const drafts = card.getByRole("region", { name: "Drafts" });
    // Asked for elsewhere while nothing runs: the card learns of it at the next list refresh (read at once, as the region may not be there yet).
    await pollAhead(() => drafts.allTextContents()).toEqual([expect.stringContaining("being written…")]);
    expect((await api("POST", "/api/execution", { planId: id, cancel: true })).status).toBe(202);
    await poll(() => card.locator(".status").textContent()).toBe("Cancelled");
    await poll(() => drafts.textContent()).toContain("not built");
    expect(await drafts.textContent()).not.toContain("being written");
  });

  it("keeps keyboard focus on the card after Approve and after asking for a new draft, through its live redraws", async () => {
    await open("executions");
    const focusInCard = async (card: Locator) =>
      page.evaluate<boolean>(
        `document.querySelector('[data-plan-id="${await card.getAttribute("data-plan-id")}"]')?.contains(document.activeElement) ?? false`,
      );
    const approved = await planAtGate("A site for a book swap in the town hall");
    await approved.getByRole("button", { name: "Approve and publish" }).focus();
    await page.keyboard.press("Enter");
    await poll(() => approved.locator(".status").textContent()).toBe("Succeeded");
    expect(await focusInCard(approved)).toBe(true);

    const revised = await planAtGate("A site for a seed library at the allotments");
    await revised.getByLabel("Ask for changes").fill("Make it calmer");
    await revised.getByRole("button", { name: "Ask for a new draft" }).focus();
    await page.keyboard.press("Enter");
    const held = await work.next(); // the revision's `write`
    await poll(() => revised.locator(".status").textContent()).toBe("Running");
    held.succeed(typicalOutcome(held.input));
    await poll(() => revised.locator(".status").textContent()).toBe("Waiting for approval");
    expect(await focusInCard(revised)).toBe(true);
  });

  it("approves only the draft the card shows: a newer one made elsewhere is shown, not published", async () => {
    await open("executions");
    const card = await planAtGate("A site for a community orchard");
    const hold = await holdListRefreshes();
    try {
      const id = (await card.getAttribute("data-plan-id"))!;
      expect((await api("POST", "/api/execution", { planId: id, feedback: "Make it greener" })).status).toBe(202);
      const held = await work.next();
      held.succeed(typicalOutcome(held.input));
      await poll(async () => (await api("GET", `/api/execution?id=${id}`)).body?.plan).toMatchObject({
        status: "awaiting_approval",
        revisions: [{ number: 1 }],
      });
      // The card still shows the first draft; approving it must not publish the second.
      await card.getByRole("button", { name: "Approve and publish" }).click();
      const alert = card.getByRole("alert");
      await poll(() => alert.textContent()).toBe("Not done: a newer draft was asked for elsewhere; look at it before you approve or ask for changes.");
      expect((await api("GET", `/api/execution?id=${id}`)).body?.plan).toMatchObject({ status: "awaiting_approval", publishedUrl: null });
      expect(await card.textContent()).toContain("Make it greener");
    } finally {
      await hold.release();
    }
  });

  it("keeps saying why an approval was refused, and what was typed at the gate, while a draft asked for elsewhere is written", async () => {
    await open("executions");
    const card = await planAtGate("A site for a tool library that another tab revises");
    const id = (await card.getAttribute("data-plan-id"))!;
    const said = card.locator("[data-plan-error]");
    const message = "Not done: a newer draft was asked for elsewhere; look at it before you approve or ask for changes.";
    const hold = await holdListRefreshes();
    let held: Awaited<ReturnType<HeldWork["next"]>>;
    try {
      await card.getByLabel("Ask for changes").fill("Put the opening hours first");
      // Another tab asks for a new draft; this card still shows the gate.
      expect((await api("POST", "/api/execution", { planId: id, feedback: "Make it greener" })).status).toBe(202);
      held = await work.next();
      await card.getByRole("button", { name: "Approve and publish" }).click();
      await poll(() => card.locator(".status").textContent()).toBe("Running");
      await poll(() => said.textContent()).toBe(message);
      expect(await said.getAttribute("role")).toBe("alert");
    } finally {
      await hold.release();
    }
    // The card is redrawn while the new draft is written: the reason stays on it.
    await held.input.progress(0.5);
    await poll(() => card.locator(".stage-progress").textContent()).toBe("50%");
    expect(await said.isVisible()).toBe(true);
    expect(await said.textContent()).toBe(message);
    held.succeed(typicalOutcome(held.input));
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    // Back at the gate with the new draft: the reason is still there, and so are the words typed before.
    expect(await card.getByRole("region", { name: "Drafts" }).textContent()).toContain("Make it greener");
    expect(await said.textContent()).toBe(message);
    expect(await card.getByLabel("Ask for changes").inputValue()).toBe("Put the opening hours first");

    // Acting on the card ends the explanation; words sent for a draft are not put back afterwards.
    await card.getByRole("button", { name: "Ask for a new draft" }).click();
    const rewrite = await work.next();
    await poll(() => said.isHidden()).toBe(true);
    rewrite.succeed(typicalOutcome(rewrite.input));
    await poll(() => card.getByRole("region", { name: "Drafts" }).textContent()).toContain("Put the opening hours first");
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    expect(await card.getByLabel("Ask for changes").inputValue()).toBe("");
    expect(await said.isHidden()).toBe(true);
  });

  it("clears a plan deleted elsewhere when an action finds it gone", async () => {
    await open("executions");
    const first = await planAtGate("A site for a seed swap that is deleted elsewhere");
    const second = await planAtGate("A site for a repair night that is deleted elsewhere");
    const hold = await holdListRefreshes();
    try {
      // Approve on a deleted plan: the card goes, with one short message, not two errors.
      await first.locator(".history summary").click();
      await first.locator(".timeline").waitFor();
      expect((await api("DELETE", `/api/execution?id=${await first.getAttribute("data-plan-id")}`)).status).toBe(204);
      await first.getByRole("button", { name: "Approve and publish" }).click();
      await poll(() => first.count()).toBe(0);
      const notice = page.locator(".list-notice");
      await poll(() => notice.textContent()).toContain("no longer exists");
      expect(await page.getByRole("alert").count()).toBe(0);

      // Delete on a deleted plan: the dialog closes and the card goes.
      expect((await api("DELETE", `/api/execution?id=${await second.getAttribute("data-plan-id")}`)).status).toBe(204);
      await second.getByRole("button", { name: "Delete" }).click();
      const dialog = page.getByRole("dialog");
      await dialog.waitFor({ state: "visible" });
      await dialog.getByRole("button", { name: "Delete plan" }).click();
      await dialog.waitFor({ state: "hidden" });
      await poll(() => second.count()).toBe(0);
      await poll(() => focusedId(page)).toBe("executions-title");
    } finally {
      await hold.release();
    }
  });

  it("keeps keyboard focus in the form after starting an execution, whether it starts or fails", async () => {
    await open("executions");
    await page.getByLabel("Goal").fill("A site for a book club, started with Enter on the button");
    await page.getByRole("button", { name: "Start execution" }).press("Enter");
    await page.locator(".execution", { hasText: "book club" }).waitFor();
    (await work.next()).succeed();
    await poll(() => focusedId(page)).toBe("goal");

    await page.route(/\/CreateExecution$/, (route) => route.abort());
    try {
      await page.getByLabel("Goal").fill("A site for a bike shop, started while the service is away");
      await page.getByLabel("Goal").press("Control+Enter");
      await poll(() => page.locator(".start-form .form-error").textContent()).toContain("Could not reach the service");
      await poll(() => focusedId(page)).toBe("goal");
    } finally {
      await page.unroute(/\/CreateExecution$/);
    }
  });

  it("explains feedback that is only spaces instead of doing nothing", async () => {
    await open("executions");
    const card = await planAtGate("A site for a knitting circle that meets on Sundays");
    await card.getByLabel("Ask for changes").fill("   ");
    await card.getByRole("button", { name: "Ask for a new draft" }).click();
    await poll(() => card.getByRole("alert").textContent()).toBe("Say what should change before asking for a new draft.");
    expect(await card.locator(".status").textContent()).toBe("Waiting for approval");
  });

  it("counts lengths in characters, not UTF-16 units, and cuts titles on whole characters", async () => {
    await open("executions");
    // 1,500 emoji are 3,000 UTF-16 units but 1,500 characters: all are kept.
    await page.getByLabel("Goal").fill("🚲".repeat(1500));
    expect([...(await page.getByLabel("Goal").inputValue())].length).toBe(1500);
    await page.getByLabel("Goal").fill("🚲".repeat(2001));
    expect([...(await page.getByLabel("Goal").inputValue())].length).toBe(2001);
    await page.getByRole("button", { name: "Start execution" }).click();
    await poll(() => page.locator(".start-form .form-error").textContent()).toBe("The goal must be 8 to 2000 characters (it has 2001).");

    // A title cut at 80 characters keeps the emoji whole.
    const goal = `${"a".repeat(78)}${"🚲".repeat(10)}`;
    await page.getByLabel("Goal").fill(goal);
    await page.getByLabel("Goal").press("Control+Enter");
    const card = page.locator(".execution", { hasText: "a".repeat(78) });
    await card.waitFor();
    (await work.next()).succeed();
    await card.getByRole("button", { name: "Delete" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor({ state: "visible" });
    const title = (await dialog.locator("h2").textContent())!;
    expect(title).not.toMatch(BROKEN_TEXT);
    expect(title).toBe(`Delete “${"a".repeat(78)}🚲…”?`);
    await page.keyboard.press("Escape");

    // A key name of 100 emoji is within the server's 100 characters.
    await open("keys");
    await page.getByLabel("Name").fill("🔑".repeat(101));
    expect([...(await page.getByLabel("Name").inputValue())].length).toBe(101);
    await page.getByRole("button", { name: "Create key" }).click();
    await poll(() => page.locator(".key-form .form-error").textContent()).toBe("The name can be at most 100 characters (it has 101).");
    await page.getByLabel("Name").fill("🔑".repeat(100));
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("button", { name: "Done, I have saved it" }).click();
    await poll(() => page.locator(".key-name", { hasText: "🔑🔑🔑" }).textContent()).toBe("🔑".repeat(100));
  });

  it("keeps an open history in place while the plan runs, adding only the new events, in a live region", async () => {
    await open("executions");
    const goal = "A site for a tea house, watched with its history open";
    await page.getByLabel("Goal").fill(goal);
    await page.getByLabel("Goal").press("Control+Enter");
    const card = page.locator(".execution", { hasText: goal });
    await card.waitFor();
    const writing = await work.next();
    await poll(() => card.locator(".stage-running").textContent()).toContain("Write");
    // Opened from the keyboard.
    await card.locator(".history summary").focus();
    await page.keyboard.press("Enter");
    await poll(() => card.locator(".timeline .event").count()).toBeGreaterThan(0);
    const id = (await card.getAttribute("data-plan-id"))!;
    await page.evaluate(`(() => {
      const card = document.querySelector('[data-plan-id="${id}"]');
      window.shownEvents = Array.from(card.querySelectorAll(".timeline .event"));
      window.loadingSeen = 0;
      new MutationObserver(() => {
        if (document.querySelector('[data-plan-id="${id}"] .history')?.textContent.includes("Loading")) window.loadingSeen++;
      }).observe(document.querySelector(".executions"), { subtree: true, childList: true, characterData: true });
    })()`);

    // Each tick and each stage change redraws the card.
    await writing.input.progress(0.3);
    await poll(() => card.locator(".stage-progress").textContent()).toBe("30%");
    await writing.input.progress(0.6);
    await poll(() => card.locator(".stage-progress").textContent()).toBe("60%");
    writing.succeed();
    await poll(() => card.locator(".status").textContent()).toBe("Waiting for approval");
    await poll(() => card.locator(".event-awaiting_approval").count()).toBe(1);

    const history = await page.evaluate<{ loadingSeen: number; shown: number; kept: number; added: number; addedLive: number }>(`(() => {
      const events = Array.from(document.querySelectorAll('[data-plan-id="${id}"] .timeline .event'));
      const added = events.slice(window.shownEvents.length);
      return {
        loadingSeen: window.loadingSeen,
        shown: window.shownEvents.length,
        kept: window.shownEvents.filter((event, i) => events[i] === event).length,
        added: added.length,
        addedLive: added.filter((event) => event.closest('[aria-live="polite"]')).length,
      };
    })()`);
    // The events already read stay as they were (not redrawn, so not read out again); the new ones are added and read out.
    expect(history).toEqual({ loadingSeen: 0, shown: history.shown, kept: history.shown, added: history.added, addedLive: history.added });
    expect(history.added).toBeGreaterThan(0);
    expect(await card.locator(".timeline .event").allTextContents()).toHaveLength(history.shown + history.added);
    // Keyboard focus stayed on the disclosure through the redraws.
    expect(await page.evaluate<string>("document.activeElement?.textContent ?? ''")).toBe("History");
    expect(await card.locator(".history").getAttribute("open")).toBe("");
  });

  it("shows right-to-left text people type, and what it becomes, right to left", async () => {
    await open("executions");
    const goal = 'אתר לחנות פרחים בתל אביב, בשם "פרחי השרון" (2024)!';
    await page.getByLabel("Goal").fill(goal);
    expect(await rightToLeft(page.getByLabel("Goal"))).toBe(true);
    const card = await planAtGate(goal, undefined, "פרחי השרון");
    expect(await rightToLeft(card.locator("h3"))).toBe(true);
    expect(await rightToLeft(card.locator(".goal"))).toBe(true);
    const feedback = "תעשו את זה רגוע יותר (בבקשה)!";
    await card.getByLabel("Ask for changes").fill(feedback);
    expect(await rightToLeft(card.getByLabel("Ask for changes"))).toBe(true);
    await card.getByRole("button", { name: "Ask for a new draft" }).click();
    (await work.next()).succeed();
    await poll(() => card.locator(".draft-feedback").textContent()).toBe(feedback);
    expect(await rightToLeft(card.locator(".draft-feedback"))).toBe(true);
    await card.locator(".history summary").click();
    await poll(() => card.locator(".event-feedback").textContent()).toBe(feedback);
    expect(await rightToLeft(card.locator(".event-feedback"))).toBe(true);
    // Left-to-right text stays left to right.
    const english = await planAtGate("A site for a flower shop in Tel Aviv");
    expect(await rightToLeft(english.locator(".goal"))).toBe(false);

    await open("keys");
    const keyName = "מפתח הפריסה (ראשי)";
    await page.getByLabel("Name").fill(keyName);
    expect(await rightToLeft(page.getByLabel("Name"))).toBe(true);
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("button", { name: "Done, I have saved it" }).click();
    const listed = page.locator(".key-name", { hasText: keyName });
    await listed.waitFor();
    expect(await rightToLeft(listed)).toBe(true);
  });

  it("says which plan each card's button acts on, after the words the button shows", async () => {
    await open("executions");
    const cards = [
      { title: "Lighthouse museum", card: await planAtGate("A site for a lighthouse museum on the coast", undefined, "Lighthouse museum") },
      { title: "Harbour ferry", card: await planAtGate("A site for a harbour ferry timetable", undefined, "Harbour ferry") },
    ];
    for (const { title, card } of cards) {
      const id = (await card.getAttribute("data-plan-id"))!;
      const controls = await accessibleTexts(`[data-plan-id="${id}"] .execution-actions :is(button, a)`);
      expect(controls.map((control) => control.name)).toEqual([
        "Approve and publish",
        "Open preview (opens in a new tab)",
        "Download site (.zip)",
        "Cancel plan",
        "Delete",
        "Ask for a new draft",
      ]);
      expect(controls.map((control) => control.description)).toEqual(controls.map(() => title));
    }
  });

  it("says so on the page when signing out fails", async () => {
    await open("executions");
    await page.route(/\/SignOut$/, (route) => route.abort());
    try {
      await page.getByRole("button", { name: "Sign out" }).click();
      const alert = page.locator(".topbar").getByRole("alert");
      await poll(() => alert.textContent()).toContain("Could not reach the service");
      expect(await alert.isVisible()).toBe(true);
      expect(await page.getByRole("button", { name: "Sign out" }).isEnabled()).toBe(true);
    } finally {
      await page.unroute(/\/SignOut$/);
    }
  });

  it("after a session ended elsewhere, says so on the sign-in screen and returns to the page after signing in", async () => {
    await open("keys");
    // Signed out from another tab: this page still thinks it is signed in.
    const ended = await page.evaluate(() =>
      fetch("/zero.v1.ConsoleService/SignOut", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.status),
    );
    expect(ended).toBe(200);
    await page.getByLabel("Name").fill("After the session ended");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    // On the screen, not only read out.
    const notice = page.locator("main").getByText("Your session has ended. Sign in again.");
    await poll(() => notice.isVisible()).toBe(true);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/keys`);
  });

  it("takes a password of 256 characters with emoji whole, at sign-up and at sign-in", async () => {
    // 256 characters, the longest the service allows, but 312 UTF-16 units.
    const longPassword = `${"p".repeat(200)}${"🔑".repeat(56)}`;
    const other = `emoji-password-${Date.now()}@example.test`;
    await open("executions");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Email").fill(other);
    // One more is past the policy, counted in characters as the service counts.
    await page.getByLabel("Password").fill(`${longPassword}🔑`);
    await page.getByRole("button", { name: "Create account" }).click();
    await poll(() => page.getByRole("alert").textContent()).toBe("The password must be 8 to 256 characters (it has 257).");
    await page.getByLabel("Password").fill(longPassword);
    expect(await page.getByLabel("Password").inputValue()).toBe(longPassword);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${app.url}/console/executions`);

    // The service holds the whole password, not a cut one.
    const elsewhere = await fetch(`${app.url}/zero.v1.ConsoleService/SignIn`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: app.url },
      body: JSON.stringify({ email: other, password: longPassword }),
    });
    expect(elsewhere.status).toBe(200);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByLabel("Email").fill(other);
    await page.getByLabel("Password").fill(longPassword);
    expect(await page.getByLabel("Password").inputValue()).toBe(longPassword);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    expect(await page.locator(".account-email").textContent()).toBe(other);
  });

  it("signs up and in with an address that has accented letters, sent exactly as typed", async () => {
    const stamp = Date.now();
    const accented = `josé-${stamp}@example.test`;
    const accentedDomain = `jose-${stamp}@exämple.test`;
    // This spelling made through the API, as the service allows.
    const made = await fetch(`${app.url}/zero.v1.ConsoleService/SignUp`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: app.url },
      body: JSON.stringify({ email: accentedDomain, password }),
    });
    expect(made.status).toBe(200);

    await open("executions");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Email").fill(accented);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    expect(await page.locator(".account-email").textContent()).toBe(accented);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByLabel("Email").fill(accentedDomain);
    expect(await page.getByLabel("Email").inputValue()).toBe(accentedDomain);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    expect(await page.locator(".account-email").textContent()).toBe(accentedDomain);
    // A password manager saves the change of password under the address as it is.
    await open("keys");
    expect(await page.locator('input[autocomplete="username"]').inputValue()).toBe(accentedDomain);
  });

  it("says when to try again after too many sign-in attempts", async () => {
    await open("executions");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    const stranger = `nobody-${Date.now()}@example.test`;
    // The eleventh try must count in the same window as the ten (a CI run at 09:14:5x crossed one).
    await wellInsideWindow(SIGN_IN_WINDOW_S, 30_000);
    const statuses = await page.evaluate(async (who) => {
      const out: number[] = [];
      for (let i = 0; i < 10; i++) {
        const response = await fetch("/zero.v1.ConsoleService/SignIn", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: who, password: "not the password" }),
        });
        out.push(response.status);
      }
      return out;
    }, stranger);
    expect(statuses.every((status) => status === 401)).toBe(true);
    await page.getByLabel("Email").fill(stranger);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => page.getByRole("alert").textContent()).toMatch(/^Too many sign-in attempts; try again in \d+ (minutes?|seconds?)\.$/);
  });

  it("threw nothing in the page", () => {
    expect(pageErrors).toEqual([]);
  });
});
