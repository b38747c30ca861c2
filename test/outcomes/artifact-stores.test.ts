import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AwsV4Signer } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyTree, createFileArtifactStore, replaceTree, type ArtifactStore } from "../../src/outcomes/artifact-store.js";
import { deletePlanArtifacts } from "../../src/outcomes/plan-artifacts.js";
import { ensureProject, readProject, slugify, slugOwner } from "../../src/outcomes/projects.js";
import { createPostgresArtifactStore } from "../../src/outcomes/postgres-artifact-store.js";
import { createS3ArtifactStore } from "../../src/outcomes/s3-artifact-store.js";
import type { S3Config } from "../../src/config.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { FAKE_S3_CREDENTIALS, FakeS3 } from "../support/fake-s3.js";

let app: TestApp;
let s3: FakeS3;
let dir: string;

beforeAll(async () => {
  // The app's own database: PGlite, or a fresh database on TEST_DATABASE_URL in the postgres project.
  app = await startTestApp();
  s3 = await new FakeS3().start();
  s3.pageSize = 3;
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-artifact-stores-"));
});
afterAll(async () => {
  await s3?.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

const s3Config = (overrides: Partial<S3Config> = {}): S3Config => ({
  bucket: "zero-test",
  prefix: "deploy/one",
  endpoint: s3.url,
  region: "eu-west-3",
  ...FAKE_S3_CREDENTIALS,
  sessionToken: undefined,
  forcePathStyle: true,
  ...overrides,
});

const backends: [string, () => ArtifactStore][] = [
  ["file", () => createFileArtifactStore(path.join(dir, "artifacts"))],
  ["postgres", () => createPostgresArtifactStore(app.store.db)],
  ["s3", () => createS3ArtifactStore(s3Config())],
];

/** Resolves once `holds` is true; fails the test after a few seconds. */
async function until(holds: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !holds(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(holds()).toBe(true);
}

const text = (bytes: Uint8Array | undefined) => (bytes ? new TextDecoder().decode(bytes) : undefined);

describe.each(backends)("the %s artifact store", (name, open) => {
  let store: ArtifactStore;
  beforeAll(() => {
    store = open();
  });
  const p = `preview/pln_${name}`;

  it("writes, reads back byte for byte and replaces", async () => {
    const binary = Uint8Array.from({ length: 256 * 3 }, (_, i) => i % 256);
    expect(await store.put(`${p}/a/logo.png`, binary)).toBe(true);
    expect(await store.get(`${p}/a/logo.png`)).toEqual(binary);
    expect(await store.put(`${p}/index.html`, "<p>first</p>")).toBe(true);
    expect(await store.put(`${p}/index.html`, "<p>second, é</p>")).toBe(true);
    expect(text(await store.get(`${p}/index.html`))).toBe("<p>second, é</p>");
    expect(await store.put(`${p}/empty.txt`, "")).toBe(true);
    expect(await store.get(`${p}/empty.txt`)).toEqual(new Uint8Array(0));
  });

  it("writes an ifAbsent key once: a second writer, even a simultaneous one, is refused and changes nothing", async () => {
    expect(await store.put(`index/slugs/${name}-bakery`, "pln_first", { ifAbsent: true })).toBe(true);
    expect(await store.put(`index/slugs/${name}-bakery`, "pln_second", { ifAbsent: true })).toBe(false);
    expect(text(await store.get(`index/slugs/${name}-bakery`))).toBe("pln_first");
    const racers = await Promise.all(Array.from({ length: 8 }, (_, i) => store.put(`index/slugs/${name}-raced`, `pln_${i}`, { ifAbsent: true })));
    expect(racers.filter(Boolean)).toHaveLength(1);
    expect(text(await store.get(`index/slugs/${name}-raced`))).toBe(`pln_${racers.indexOf(true)}`);
  });

  it("an ifAbsent write cancelled at any moment either took the key with its body or left it free", async () => {
    // A stage cancelled while it claims its slug: an empty claim would name no plan and block the slug for good.
    const keptWrongly: { key: string; stored: string | undefined }[] = [];
    for (let ticks = 0; ticks < 40; ticks++) {
      const key = `index/slugs/${name}-cancelled-${ticks}`;
      const cancel = new AbortController();
      const claim = store.put(key, "pln_claimer", { ifAbsent: true, signal: cancel.signal }).catch(() => false);
      for (let i = 0; i < ticks; i++) await new Promise((resolve) => setImmediate(resolve));
      cancel.abort();
      await claim;
      const stored = text(await store.get(key));
      if (stored !== undefined && stored !== "pln_claimer") keptWrongly.push({ key, stored });
    }
    expect(keptWrongly).toEqual([]);
  });

  it("answers undefined for a missing or invalid key, and refuses to write an invalid one", async () => {
    expect(await store.get(`${p}/nope.html`)).toBeUndefined();
    expect(await store.get("../secret.txt")).toBeUndefined();
    await expect(store.put("a/../b", "x")).rejects.toThrow(/invalid artifact key/);
  });

  it("keeps keys in any script's letters (a slug in Cyrillic, Japanese, Hindi), listed and removed like any other", async () => {
    const site = `sites/кофейня-${name}`;
    const book = `books/東京カフェ-${name}`;
    for (const key of [`${site}/index.html`, `${site}/меню.html`, `${book}/東京カフェ-${name}.epub`, `index/slugs/मीठा-घर-${name}`]) {
      expect(await store.put(key, key), key).toBe(true);
      expect(text(await store.get(key)), key).toBe(key);
    }
    expect(await store.list(`${site}/`)).toEqual([`${site}/index.html`, `${site}/меню.html`]);
    expect(await store.removeAll(`${site}/`)).toBe(2);
    expect(await store.list(`${book}/`)).toEqual([`${book}/東京カフェ-${name}.epub`]);
    // Letters, marks and digits only: look-alikes of dots and slashes are not.
    for (const key of ["sites/\uFF0E\uFF0E/x", "sites/a\u2215b", "sites/\u0301a", "sites/a b"])
      await expect(store.put(key, "x"), key).rejects.toThrow(/invalid artifact key/);
  });

  it("lists a prefix sorted, without its neighbours, and removes a key or a whole prefix", async () => {
    const mine = `sites/${name}-site`;
    for (const file of ["index.html", "b/deep/page.html", "a.css", "menu.html", "z.txt"]) await store.put(`${mine}/${file}`, file);
    await store.put(`${mine}-2/index.html`, "the neighbour");
    await store.put(`${mine}0/index.html`, "the other neighbour");
    expect(await store.list(`${mine}/`)).toEqual([`${mine}/a.css`, `${mine}/b/deep/page.html`, `${mine}/index.html`, `${mine}/menu.html`, `${mine}/z.txt`]);
    expect(await store.list(`sites/${name}-none/`)).toEqual([]);
    expect(await store.list("../")).toEqual([]);

    await store.remove(`${mine}/z.txt`);
    await store.remove(`${mine}/never-was.txt`);
    expect(await store.get(`${mine}/z.txt`)).toBeUndefined();
    expect(await store.removeAll(`${mine}/`)).toBe(4);
    expect(await store.list(`${mine}/`)).toEqual([]);
    expect(await store.get(`${mine}/index.html`)).toBeUndefined();
    expect(text(await store.get(`${mine}-2/index.html`))).toBe("the neighbour");
    expect(text(await store.get(`${mine}0/index.html`))).toBe("the other neighbour");
    expect(await store.removeAll(`${mine}/`)).toBe(0);
  });

  it("gives each plan of a common name an address of its own in a few tries, however many plans came before", async () => {
    const named = `Harbour Lights ${name}`;
    const base = slugify(named);
    const slugs: string[] = [];
    for (let i = 0; i < 12; i++) slugs.push((await ensureProject(store, `pln_common_${name}_${i}`, named)).slug);
    expect(slugs.slice(0, 5)).toEqual([base, `${base}-2`, `${base}-3`, `${base}-4`, `${base}-5`]);
    expect(new Set(slugs).size).toBe(12);
    for (const slug of slugs.slice(5)) expect(slug).toMatch(new RegExp(`^${base}-[0-9a-z]{5,}$`));
    // The 13th plan tries the five numbered slugs and then its own: counting on would have tried 13.
    let claims = 0;
    const counting: ArtifactStore = {
      ...store,
      put: (key, body, options) => {
        if (key.startsWith("index/slugs/")) claims++;
        return store.put(key, body, options);
      },
    };
    const late = await ensureProject(counting, `pln_common_${name}_late`, named);
    expect(claims).toBe(6);
    // A crash between its claim and its record: the re-run finds the same claim again.
    await store.remove(`index/plans/pln_common_${name}_late/project.json`);
    expect((await ensureProject(store, `pln_common_${name}_late`, named)).slug).toBe(late.slug);
  });

  it("removes everything a deleted plan left, and nothing of another plan's", async () => {
    const planId = `pln_gone_${name}`;
    const { slug } = await ensureProject(store, planId, `Gone ${name}`);
    const other = await ensureProject(store, `pln_kept_${name}`, `Gone ${name}`);
    expect(other.slug).toBe(`${slug}-2`);
    await replaceTree(
      store,
      `preview/${planId}/`,
      new Map([
        ["index.html", "a"],
        ["style.css", "b"],
      ]),
    );
    await copyTree(store, `preview/${planId}/`, `sites/${slug}/`);
    await store.put(`sites/${other.slug}/index.html`, "kept");
    await deletePlanArtifacts(store, planId);
    for (const prefix of [`preview/${planId}/`, `sites/${slug}/`, `index/plans/${planId}/`]) expect(await store.list(prefix)).toEqual([]);
    // The address that was public stays the deleted plan's, so no other plan takes it over.
    expect(await slugOwner(store, slug)).toBe(planId);
    expect(await readProject(store, `pln_kept_${name}`)).toEqual(other);
    expect(text(await store.get(`sites/${other.slug}/index.html`))).toBe("kept");
    // A second sweep finds nothing more to remove, and breaks nothing.
    await deletePlanArtifacts(store, planId, { slug });
    expect(await store.list(`sites/${slug}/`)).toEqual([]);
  });
});

describe("the postgres artifact store", () => {
  const blobs = async () =>
    (await app.store.db.selectFrom("artifact_blobs").select(["sha256", "size"]).where("size", "=", 4242).execute()).map((r) => r.sha256);

  it("keeps each distinct content once, and drops it with the last key that names it", async () => {
    const store = createPostgresArtifactStore(app.store.db);
    const page = "x".repeat(4242);
    await store.put("preview/pln_dedup1/index.html", page);
    await store.put("preview/pln_dedup2/index.html", page);
    await store.put("sites/dedup/index.html", page);
    expect(await blobs()).toHaveLength(1);

    await store.removeAll("preview/pln_dedup1/");
    await store.remove("preview/pln_dedup2/index.html");
    expect(await blobs()).toHaveLength(1);
    // Replacing the last key's content collects the old one.
    await store.put("sites/dedup/index.html", "y".repeat(4242));
    const [left] = await blobs();
    expect(await blobs()).toHaveLength(1);
    await store.remove("sites/dedup/index.html");
    expect(await blobs()).not.toContain(left);
    expect(await blobs()).toEqual([]);
    // A refused ifAbsent write leaves no blob behind.
    expect(await store.put("index/slugs/dedup", "a".repeat(4242), { ifAbsent: true })).toBe(true);
    expect(await store.put("index/slugs/dedup", "b".repeat(4242), { ifAbsent: true })).toBe(false);
    expect(await blobs()).toHaveLength(1);
  });
});

describe("the s3 artifact store", () => {
  it("keeps its keys under the configured prefix, so several deployments can share a bucket", async () => {
    const one = createS3ArtifactStore(s3Config({ prefix: "deploy/a" }));
    const two = createS3ArtifactStore(s3Config({ prefix: "deploy/b" }));
    await one.put("preview/pln_shared/index.html", "a");
    expect(s3.objects.has("zero-test/deploy/a/preview/pln_shared/index.html")).toBe(true);
    expect(await two.get("preview/pln_shared/index.html")).toBeUndefined();
    expect(await two.list("preview/pln_shared/")).toEqual([]);
  });

  it("signs every request: the server refuses a wrong secret, and a put with it fails", async () => {
    const before = s3.rejected;
    const wrong = createS3ArtifactStore(s3Config({ secretAccessKey: "not-the-secret" }));
    await expect(wrong.put("preview/pln_wrong/index.html", "x")).rejects.toThrow(/403 SignatureDoesNotMatch/);
    await expect(wrong.get("preview/pln_wrong/index.html")).rejects.toThrow(/403/);
    expect(s3.rejected).toBeGreaterThan(before);
  });

  it("bounds every call: a bucket that does not answer fails it as unavailable, and the caller's signal stops it at once", async () => {
    const store = createS3ArtifactStore(s3Config(), { requestTimeoutMs: 300 });
    s3.freeze();
    try {
      for (const call of [
        () => store.put("preview/pln_hung/index.html", "x"),
        () => store.get("preview/pln_hung/index.html"),
        () => store.list("preview/pln_hung/"),
        () => store.remove("preview/pln_hung/index.html"),
      ]) {
        const started = performance.now();
        await expect(call()).rejects.toMatchObject({ type: "unavailable", message: expect.stringMatching(/artifact store \(S3\) did not answer/) });
        expect(performance.now() - started).toBeLessThan(3000);
      }

      const patient = createS3ArtifactStore(s3Config(), { requestTimeoutMs: 60_000 });
      const abandonedBefore = s3.abandoned;
      const caller = new AbortController();
      const put = patient.put("preview/pln_hung/index.html", "x", { signal: caller.signal });
      await until(() => s3.held > 0);
      const started = performance.now();
      caller.abort(new Error("the stage was cancelled"));
      await expect(put).rejects.toThrow("the stage was cancelled");
      expect(performance.now() - started).toBeLessThan(1000);
      // The request itself was stopped, not left to hang on the bucket.
      await until(() => s3.abandoned > abandonedBefore);
    } finally {
      s3.thaw();
    }
    expect(s3.objects.has("zero-test/deploy/one/preview/pln_hung/index.html")).toBe(false);
  });

  it("calls a bucket that refuses the service (403, 5xx) or cannot be reached unavailable, naming the store, never the secret", async () => {
    const store = createS3ArtifactStore(s3Config(), { requestTimeoutMs: 2000 });
    for (const failing of [
      { status: 403, code: "SignatureDoesNotMatch" },
      { status: 403, code: "AccessDenied" },
      { status: 503, code: "SlowDown" },
      { status: 500, code: "InternalError" },
    ]) {
      s3.failing = failing;
      try {
        for (const call of [
          () => store.put("preview/pln_refused/index.html", "x"),
          () => store.get("preview/pln_refused/index.html"),
          () => store.list("preview/"),
        ]) {
          const error = await call().then(
            () => undefined,
            (thrown: unknown) => thrown as { type?: string; message: string },
          );
          expect(error).toMatchObject({ type: "unavailable", message: expect.stringContaining(`artifact store (S3) refused`) });
          expect(error!.message).toContain(`${failing.status} ${failing.code}`);
          expect(error!.message).not.toContain(FAKE_S3_CREDENTIALS.secretAccessKey);
        }
      } finally {
        s3.failing = undefined;
      }
    }
    const closed = await new FakeS3().start();
    await closed.close();
    const unreachable = createS3ArtifactStore(s3Config({ endpoint: closed.url }), { requestTimeoutMs: 2000 });
    await expect(unreachable.get("preview/pln_refused/index.html")).rejects.toMatchObject({
      type: "unavailable",
      message: expect.stringContaining("artifact store (S3) could not be reached"),
    });
  });

  it("computes AWS's published signature for its GET Object example", async () => {
    // https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object".
    const signer = new AwsV4Signer({
      method: "GET",
      url: "https://examplebucket.s3.amazonaws.com/test.txt",
      headers: { range: "bytes=0-9", "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
      accessKeyId: "AKIAIOSFODNN7EXAMPLE",
      secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      service: "s3",
      region: "us-east-1",
      datetime: "20130524T000000Z",
      allHeaders: true,
    });
    expect(await signer.signature()).toBe("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  });
});
