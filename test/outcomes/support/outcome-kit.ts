import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import type { Browser } from "playwright-core";
import { inflateRawSync } from "node:zlib";
import { afterAll } from "vitest";
import { HtmlValidate, type Report } from "html-validate";
import type { ChatCompleter, ChatCompletionJson } from "../../../src/chat/chat-types.js";
import { ChatRouter } from "../../../src/chat/chat-router.js";
import { FreePool } from "../../../src/chat/free-pool.js";
import { UpstreamClient } from "../../../src/chat/upstream-client.js";
import { ServiceError } from "../../../src/server/errors.js";
import { openStore, type Store } from "../../../src/db/database.js";
import { createFileArtifactStore, type ArtifactStore } from "../../../src/outcomes/artifact-store.js";
import { createLogger } from "../../../src/observability/logger.js";
import type { OutcomeDeps } from "../../../src/outcomes/stage-support.js";

// Nothing here leads to test/support/database.ts (helpers that need a running service's database live in
// recorded-plans.ts): the stage-level and browser tests that use this kit then run once, not again on
// Postgres (test/vitest.config.ts).

/**
 * A ChatCompleter that posts to an OpenAI-compatible server, for stage-level
 * tests that do not start the whole service (the end-to-end tests use the
 * real chat router instead). Non-2xx answers become ServiceErrors, as the
 * router's do.
 */
export function httpCompleter(baseUrl: string): ChatCompleter & { calls: number } {
  const completer = {
    calls: 0,
    async complete(request: Record<string, unknown>, options: { signal?: AbortSignal }): Promise<ChatCompletionJson> {
      completer.calls++;
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
        signal: options.signal,
      });
      if (!res.ok) throw new ServiceError("upstream_error", `the upstream answered ${res.status}`);
      return (await res.json()) as ChatCompletionJson;
    },
  };
  return completer;
}

let routerDatabase: Promise<{ store: Store; dir: string }> | undefined;

/** The database of the file's free pools: an embedded PGlite, as the suite's, opened at the first (not through test/support/database.ts: see above). */
function freePoolDatabase(): Promise<{ store: Store; dir: string }> {
  routerDatabase ??= (async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-router-"));
    const template = process.env.ZERO_TEST_PGLITE_TEMPLATE;
    const store = await openStore({
      databaseUrl: undefined,
      dataDir: dir,
      embedded: "pglite",
      logger: createLogger("silent"),
      pgliteTemplate: template ? new Blob([await fs.readFile(template)]) : undefined,
    });
    return { store, dir };
  })();
  return routerDatabase;
}

afterAll(async () => {
  const opened = await routerDatabase?.catch(() => undefined);
  if (!opened) return;
  await opened.store.close();
  await fs.rm(opened.dir, { recursive: true, force: true });
});

/**
 * The service's own chat router and upstream client in front of an
 * OpenAI-compatible server, drawing on the service's own free pool (by
 * default with a capacity no test spends): a stage meets the router's own
 * errors (a provider's 400, a 429 with its Retry-After, a spent pool), as it
 * does in the service.
 */
export async function routerCompleter(baseUrl: string, options: { capacity?: number } = {}): Promise<ChatCompleter & { close(): Promise<void> }> {
  const logger = createLogger("silent");
  const { store } = await freePoolDatabase();
  // As chatPart builds it on an embedded database: one instance, so no NOTIFY channel to listen on.
  const pool = new FreePool({ db: store.db, capacity: options.capacity ?? 1_000_000, logger });
  await pool.start();
  const upstreams = new UpstreamClient(
    [{ name: "fake", baseUrl, apiKey: "sk-fake", model: "fake-model" }],
    { connectMs: 2000, firstByteMs: 10_000, idleMs: 10_000 },
    logger,
  );
  const router = new ChatRouter({ upstreams, pool });
  return {
    complete: (request, options) => router.complete(request, options),
    close: async () => {
      await upstreams.close();
      await pool.stop();
    },
  };
}

/** Dependencies for the stages with a fresh artifact store in a temp dir. */
export async function outcomeDeps(
  options: { chat?: ChatCompleter; offlineWriter?: boolean; upstream?: boolean } = {},
): Promise<OutcomeDeps & { artifacts: ArtifactStore; dir: string }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-outcomes-"));
  return {
    dir,
    config: {
      dataDir: dir,
      publicUrl: "http://zero.test",
      offlineWriter: options.offlineWriter ?? true,
      upstreams: options.upstream ? [{ name: "fake", baseUrl: "http://unused", apiKey: "", model: "m" }] : [],
    },
    chat: options.chat,
    artifacts: createFileArtifactStore(path.join(dir, "artifacts")),
    logger: createLogger("silent"),
  };
}

/** Validates built pages with html-validate's recommended rules; returns a readable list of problems. */
export async function htmlProblems(files: ReadonlyMap<string, string>): Promise<string[]> {
  const validator = new HtmlValidate({ extends: ["html-validate:recommended"] });
  const problems: string[] = [];
  for (const [name, source] of files) {
    if (!name.endsWith(".html")) continue;
    const report: Report = await validator.validateString(source, name);
    for (const result of report.results) {
      for (const m of result.messages) problems.push(`${name}:${m.line}:${m.column} ${m.ruleId} ${m.message}`);
    }
  }
  return problems;
}

/** Page text without markup, entities decoded enough to read. */
export function textOf(page: string): string {
  return page
    .replace(/<[^>]+>/g, " ")
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ");
}

/** Reads every key under a prefix as text. */
export async function readTree(store: ArtifactStore, prefix: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const key of await store.list(prefix)) files.set(key.slice(prefix.length), new TextDecoder().decode(await store.get(key)));
  return files;
}

/** Chromium and epubcheck are installed by `.ci/run`; locally a missing one skips its checks, in CI it fails them. */
export { CHROMIUM, EPUBCHECK, haveChromium, haveEpubcheck } from "../../support/tools.js";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** Where screenshots go; gitignored, kept by CI as artifacts. */
export const TEST_ARTIFACTS = path.resolve("test-artifacts");

/**
 * Serious and critical axe-core findings on a page. axe is injected through
 * the DevTools protocol with CSP bypassed; the page's own scripts stay off.
 */
export async function seriousViolations(browser: Browser, url: string): Promise<{ id: string; impact: string | null; nodes: number }[]> {
  const axeSource = await fs.readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  const audit = await browser.newContext({ bypassCSP: true });
  try {
    const page = await audit.newPage();
    await page.goto(url);
    await page.addScriptTag({ content: axeSource });
    const violations = await page.evaluate(async () => {
      const result = await (
        globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string | null; nodes: unknown[] }[] }> } }
      ).axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
    });
    return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  } finally {
    await audit.close();
  }
}

/** A minimal zip reader for tests: names, methods and inflated text, in archive order. */
export function readZip(bytes: Uint8Array): { name: string; method: number; text: string }[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: { name: string; method: number; text: string }[] = [];
  let at = 0;
  while (view.getUint32(at, true) === 0x04034b50) {
    const method = view.getUint16(at + 8, true);
    const size = view.getUint32(at + 18, true);
    const nameLength = view.getUint16(at + 26, true);
    const extra = view.getUint16(at + 28, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 30, at + 30 + nameLength));
    const data = bytes.subarray(at + 30 + nameLength + extra, at + 30 + nameLength + extra + size);
    const raw = method === 0 ? data : new Uint8Array(inflateRawSync(data));
    entries.push({ name, method, text: new TextDecoder().decode(raw) });
    at += 30 + nameLength + extra + size;
  }
  return entries;
}

/**
 * Problems that make a document not well-formed XML: unbalanced or crossed
 * tags, unquoted attributes, a bare "<" or an "&" that starts no entity.
 * Small on purpose (no XML parser among the dependencies); epubcheck checks books fully.
 */
export function xmlProblems(source: string): string[] {
  const problems: string[] = [];
  const open: string[] = [];
  const body = source
    .replace(/^<\?xml[^>]*\?>\s*/, "")
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/<!DOCTYPE[^>]*>/, "");
  const tag = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (const match of body.matchAll(tag)) {
    const text = body.slice(last, match.index);
    if (/[<>]/.test(text)) problems.push(`markup that is not a well-formed tag near: ${text.slice(0, 60)}`);
    if (/&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);)/i.test(text + match[3])) problems.push(`a bare & near: ${match[0].slice(0, 60)}`);
    const [, closing, name, , selfClosing] = match;
    if (closing) {
      const expected = open.pop();
      if (expected !== name) problems.push(`</${name}> closes <${expected}>`);
    } else if (!selfClosing) open.push(name!);
    last = match.index + match[0].length;
  }
  if (/[<>]/.test(body.slice(last))) problems.push("markup after the last tag");
  if (open.length > 0) problems.push(`unclosed: ${open.join(", ")}`);
  return problems;
}
