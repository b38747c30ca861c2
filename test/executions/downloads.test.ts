import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeUpstream } from "../chat/support/fake-upstream.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { rawAnswer, writerModel } from "../outcomes/support/model-answers.js";

const run = promisify(execFile);
const settled = (p: RestPlan) => p.status !== "running";

let upstream: FakeUpstream;
let app: TestApp;
let account: TestAccount;
let site: RestPlan;
let book: RestPlan;
let failed: RestPlan;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  app = await startTestApp({ env: { ZERO_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstream.url, apiKey: "sk-fake", model: "fake-model" }]) } });
  account = await createAccountWithKey(app, ["build", "read"]);
  const credential = { apiKey: account.apiKey };
  // First a plan that never builds: the model answers nonsense, so `understand` fails.
  upstream.otherwise(rawAnswer("not json at all"));
  const broken = await postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A website for a cheese shop in Annecy" });
  failed = await waitForPlan(app.url, credential, broken.body.plan.id, settled, 90_000);
  upstream.otherwise(writerModel);
  const [s, b] = await Promise.all([
    postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A website for my small bakery in Lyon with opening hours" }),
    postExecution<{ plan: RestPlan }>(app.url, credential, { goal: "A short guide to growing vegetables on a small city balcony", outcome: "ebook" }),
  ]);
  site = await waitForPlan(app.url, credential, s.body.plan.id, settled, 90_000);
  book = await waitForPlan(app.url, credential, b.body.plan.id, settled, 90_000);
}, 240_000);

afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

function download(id: string, apiKey = account.apiKey): Promise<Response> {
  return fetch(`${app.url}/api/execution/download?id=${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${apiKey}` } });
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .sort();
}

describe("GET /api/execution/download", () => {
  it("gives a built website as a zip holding every file the preview serves, byte for byte", async () => {
    expect(site.status).toBe("awaiting_approval");
    const res = await download(site.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/zip");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${site.project!.slug}.zip"`);
    // Streamed: chunked, not announced with a length computed from a buffer.
    expect(res.headers.get("content-length")).toBeNull();

    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-site-zip-"));
    await fs.writeFile(path.join(dir, "site.zip"), new Uint8Array(await res.arrayBuffer()));
    await run("unzip", ["-q", path.join(dir, "site.zip"), "-d", path.join(dir, "out")]);
    const unzipped = await filesUnder(path.join(dir, "out"));
    const prefix = `preview/${site.id}/`;
    expect(unzipped).toEqual((await app.artifacts.list(prefix)).map((key) => key.slice(prefix.length)).sort());
    expect(unzipped).toContain("index.html");
    expect(unzipped).toContain("style.css");
    for (const name of unzipped) {
      const served = await fetch(new URL(name, site.previewUrl!));
      expect(served.status, name).toBe(200);
      expect(Buffer.from(await fs.readFile(path.join(dir, "out", name))).equals(Buffer.from(await served.arrayBuffer())), name).toBe(true);
    }
  });

  it("gives an assembled book as its EPUB, byte-identical to the one the preview serves", async () => {
    expect(book.status).toBe("awaiting_approval");
    const res = await download(book.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/epub+zip");
    const name = `${book.project!.slug}.epub`;
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${name}"`);
    const assembled = await fetch(new URL(name, book.previewUrl!));
    expect(assembled.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(await assembled.arrayBuffer()))).toBe(true);
  });

  it("is a 404 before the build succeeded, for another account's plan, and for a missing one", async () => {
    expect(failed.status).toBe("failed");
    const other = await createAccountWithKey(app, ["build", "read"]);
    for (const res of [await download(failed.id), await download(site.id, other.apiKey), await download("pln_doesnotexist")]) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe("not_found");
    }
  });

  it("needs the read scope and an id, with the documented errors", async () => {
    const buildOnly = await createAccountWithKey(app, ["build"]);
    expect((await download(site.id, buildOnly.apiKey)).status).toBe(403);
    const anonymous = await fetch(`${app.url}/api/execution/download?id=${site.id}`);
    expect(anonymous.status).toBe(401);
    const noId = await fetch(`${app.url}/api/execution/download`, { headers: { authorization: `Bearer ${account.apiKey}` } });
    expect(noId.status).toBe(400);
    expect(((await noId.json()) as { error: { type: string } }).error.type).toBe("invalid_request");
  });
});
