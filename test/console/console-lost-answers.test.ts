import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, openConsoleBrowser, signUpInConsole } from "./support/console-browser.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { HeldWork } from "../support/stage-work.js";

/** Waits for a value in the page; generous, because CI machines are shared and slow. */
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 15_000 });

/**
 * Found using the Console through a day of dropped connections and ended
 * sessions: an answer lost on the way back (the service did the work) made a
 * retry do it twice, and text typed and not sent was lost with the session.
 */
describe.runIf(haveChromium)("the Console when an answer is lost or the session ends", () => {
  let app: TestApp;
  let page: Page;
  let browser: Awaited<ReturnType<typeof openConsoleBrowser>> | undefined;
  const work = new HeldWork();
  const email = `lost-${Date.now()}@example.test`;
  const password = "a long enough password";

  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    browser = await openConsoleBrowser();
    ({ page } = browser);
    await signUpInConsole(page, app.url, email, password);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** The next request to `rpc` reaches the service, but its answer is lost on the way back, as when Wi-Fi drops. */
  const loseNextAnswer = async (rpc: string) => {
    let lost = false;
    await page.route(`**/${rpc}`, async (route) => {
      if (lost) return route.continue();
      lost = true;
      await route.fetch();
      await route.abort("internetdisconnected");
    });
  };

  const plansWithGoal = async (goal: string) => {
    const plans = await page.evaluate(async () => ((await (await fetch("/api/execution")).json()) as { plans: { goal: string }[] }).plans);
    return plans.filter((plan) => plan.goal === goal).length;
  };

  it("starts one plan when a person sends the same goal again after its answer was lost", async () => {
    const goal = "A website for a harbour kayaking school with booking information";
    await loseNextAnswer("zero.v1.ExecutionService/CreateExecution");
    await page.getByLabel("Goal").fill(goal);
    await page.getByRole("button", { name: "Start execution" }).click();
    await poll(() => page.locator(".start-form").getByRole("alert").textContent()).toMatch(/Could not reach the service/);
    // The goal is still there to send again, and sending it gives back the plan the first try made.
    expect(await page.getByLabel("Goal").inputValue()).toBe(goal);
    await page.getByRole("button", { name: "Start execution" }).click();
    await page.locator(".execution", { hasText: "harbour kayaking" }).waitFor();
    await poll(() => page.getByLabel("Goal").inputValue()).toBe("");
    expect(await plansWithGoal(goal)).toBe(1);
  });

  it("lists the key a lost answer made, so it can be seen and revoked", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
    await loseNextAnswer("zero.v1.ConsoleService/CreateApiKey");
    await page.getByLabel("Name").fill("Deploy pipeline");
    await page.getByRole("button", { name: "Create key" }).click();
    await poll(() => page.locator(".key-form").getByRole("alert").textContent()).toMatch(/Could not reach the service/);
    await poll(() => page.locator(".keys-table").getByText("Deploy pipeline", { exact: true }).count()).toBe(1);
  });

  it("keeps a goal typed and not sent through the session's end, a reload and another page, and forgets it at sign-out", async () => {
    await page.getByRole("link", { name: "Executions" }).click();
    const goal = `A site for a choir that sings on Thursdays. ${"We rehearse in the old library. ".repeat(30)}`.trim();
    await page.getByLabel("Goal").fill(goal);
    await page.reload();
    expect(await page.getByLabel("Goal").inputValue()).toBe(goal);
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("link", { name: "Executions" }).click();
    expect(await page.getByLabel("Goal").inputValue()).toBe(goal);

    // The session ends elsewhere; signing in again comes back to the goal as it was.
    const cookies = await page.context().cookies();
    await page.context().clearCookies();
    await page.reload();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    expect(await page.getByLabel("Goal").inputValue()).toBe(goal);
    expect(cookies.length).toBeGreaterThan(0);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${app.url}/console/sign-in`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${app.url}/console/executions`);
    expect(await page.getByLabel("Goal").inputValue()).toBe("");
  });
});
