import { existsSync } from "node:fs";

/**
 * True when a program some tests need is installed. `.ci/run` installs every
 * one and sets CI=true, so there a missing one fails the run rather than
 * skipping its tests and leaving CI green; elsewhere the skip says why.
 */
export function haveTool(file: string, install: string): boolean {
  if (existsSync(file)) return true;
  if (process.env.CI === "true") throw new Error(`${file} is missing, and CI must have it: ${install}`);
  console.warn(`${file} is not installed: the tests that need it are skipped (${install})`);
  return false;
}

export const CHROMIUM = "/usr/bin/chromium";
export const haveChromium = haveTool(CHROMIUM, "apt-get install chromium");
export const EPUBCHECK = "/usr/bin/epubcheck";
export const haveEpubcheck = haveTool(EPUBCHECK, "apt-get install epubcheck");
