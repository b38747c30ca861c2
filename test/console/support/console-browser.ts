import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { expect } from "vitest";

import { CHROMIUM } from "../../support/tools.js";

export { CHROMIUM, haveChromium } from "../../support/tools.js";

/** A person's browser for the Console: Chromium with its own fresh profile (cookies, storage), at a desktop size, in British English. */
export async function openConsoleBrowser(): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const profile = await fs.mkdtemp(path.join(os.tmpdir(), "zero-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 1280, height: 860 },
    locale: "en-GB",
    colorScheme: "light",
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await fs.rm(profile, { recursive: true, force: true });
    },
  };
}

/** Creates an account through the Console's own form, as a person does; the page is then on Executions, signed in. */
export async function signUpInConsole(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/console/sign-up`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Create account" }).click();
  await page.waitForURL(`${baseUrl}/console/executions`);
}

/** A REST call made from the page, with its session, as another tab or a script would: the status, and the JSON body unless 204. */
export function callFromPage(page: Page, method: string, url: string, body?: unknown) {
  return page.evaluate(
    async ({ method, url, body }) => {
      const response = await fetch(url, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: response.status === 204 ? undefined : ((await response.json()) as { plan?: { id: string } }) };
    },
    { method, url, body },
  );
}

/**
 * Polls `read` as the tests' `poll` does (generous: CI machines are shared), skipping the page's clock a second
 * ahead before each read: what shows up only at a timed refresh shows up sooner. The page's clock must be installed.
 */
export function pollSkippingAhead<T>(page: Page, read: () => Promise<T>) {
  return expect.poll(
    async () => {
      await page.clock.fastForward(1000);
      return read();
    },
    { timeout: 15_000 },
  );
}
