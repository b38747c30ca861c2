import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createZeroClient, ZeroError } from "../../src/client/zero-client.js";
import { runCli } from "../support/cli.js";
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
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(Buffer.from(await assembled.arrayBuffer()))).toBe(true);
    // Its size is known, so a browser shows the download's progress; a HEAD says it too.
    expect(res.headers.get("content-length")).toBe(String(bytes.length));
    const head = await fetch(`${app.url}/api/execution/download?id=${book.id}`, { method: "HEAD", headers: { authorization: `Bearer ${account.apiKey}` } });
    expect(head.headers.get("content-length")).toBe(String(bytes.length));
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

describe("downloads in the typed client and the CLI", () => {
  const served = async (plan: RestPlan, name: string) => Buffer.from(await (await fetch(new URL(name, plan.previewUrl!))).arrayBuffer());

  it("client.executions.download streams the file with its name and type; errors are ZeroErrors", async () => {
    const client = createZeroClient({ baseUrl: app.url, apiKey: account.apiKey });
    const file = await client.executions.download(book.id);
    const name = `${book.project!.slug}.epub`;
    expect(file).toMatchObject({ filename: name, contentType: "application/epub+zip" });
    expect(Buffer.from(await new Response(file.body).arrayBuffer()).equals(await served(book, name))).toBe(true);

    const notBuilt = await client.executions.download(failed.id).catch((error: unknown) => error);
    expect(notBuilt).toBeInstanceOf(ZeroError);
    expect(notBuilt).toMatchObject({ type: "not_found", code: Code.NotFound, fromServer: true });
    const stranger = createZeroClient({ baseUrl: app.url, apiKey: (await createAccountWithKey(app, ["read"])).apiKey });
    await expect(stranger.executions.download(site.id)).rejects.toMatchObject({ type: "not_found" });

    // Another server at that URL (a proxy's page, a static host): its 404 is not the service's word on the plan,
    // and fails as an RPC fails from it.
    const foreign = http.createServer((_req, res) => res.writeHead(404, { "content-type": "text/html" }).end("<h1>Not Found</h1>"));
    await new Promise<void>((resolve) => foreign.listen(0, "127.0.0.1", resolve));
    try {
      const elsewhere = createZeroClient({ baseUrl: `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`, apiKey: account.apiKey });
      const refused = await elsewhere.executions.download(book.id).catch((error: unknown) => error);
      expect(refused).toMatchObject({ type: "method_not_allowed", code: Code.Unimplemented, fromServer: false, message: "HTTP 404" });
    } finally {
      foreign.close();
    }
  });

  it("client.executions.download sends the call's headers and keeps to its timeout", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    // A server that takes the request and never answers.
    const silent = http.createServer((req) => void seen.push(req.headers));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const client = createZeroClient({ baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, apiKey: account.apiKey });
      const late = await client.executions.download(book.id, { headers: { "x-trace": "t-1" }, timeoutMs: 200 }).catch((error: unknown) => error);
      expect(late).toBeInstanceOf(ZeroError);
      expect(late).toMatchObject({ type: "deadline_exceeded", code: Code.DeadlineExceeded });
      expect(seen[0]).toMatchObject({ "x-trace": "t-1", authorization: `Bearer ${account.apiKey}` });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it("project-zero download saves the file whole under the service's name, or -o; nothing on a failure", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-download-"));
    const env = { ZERO_URL: app.url, ZERO_API_KEY: account.apiKey };
    const target = path.join(dir, "guide.epub");
    const saved = await runCli(["download", book.id, "-o", target], env);
    expect(saved.code).toBe(0);
    expect(saved.stdout).toMatch(/^Saved .*guide\.epub \([\d,]+ bytes, application\/epub\+zip\)\n$/);
    expect((await fs.readFile(target)).equals(await served(book, `${book.project!.slug}.epub`))).toBe(true);

    const json = await runCli(["download", site.id, "-o", path.join(dir, "site.zip"), "--json"], env);
    expect(JSON.parse(json.stdout)).toEqual({
      file: path.join(dir, "site.zip"),
      bytes: (await fs.stat(path.join(dir, "site.zip"))).size,
      contentType: "application/zip",
    });

    const missing = await runCli(["download", failed.id, "-o", path.join(dir, "never.zip")], env);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain("nothing to download");
    expect((await fs.readdir(dir)).sort()).toEqual(["guide.epub", "site.zip"]);
  });
});
