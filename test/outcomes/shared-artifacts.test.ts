import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { FAKE_S3_CREDENTIALS, FakeS3 } from "../support/fake-s3.js";

/**
 * Builds a website on instance A (B runs no stages) and checks that B, with
 * its own data directory, serves every page of its preview and of its
 * published site byte for byte, with the same ETag and a 304 for it.
 */
async function builtOnAServedByB(a: TestApp, b: TestApp): Promise<void> {
  const account = await createAccountWithKey(a, ["build", "read"]);
  const credential = { apiKey: account.apiKey };
  const created = await postExecution<{ plan: RestPlan }>(a.url, credential, { goal: "A website for my small bakery in Lyon with opening hours" });
  expect(created.status).toBe(202);
  const id = created.body.plan.id;
  const atGate = await waitForPlan(a.url, credential, id, (p) => p.status !== "running", 90_000);
  expect(atGate.status).toBe("awaiting_approval");
  await postExecution(a.url, credential, { planId: id, approve: ["review"] });
  const done = await waitForPlan(a.url, credential, id, (p) => p.status !== "running" && p.status !== "awaiting_approval", 90_000);
  expect(done.status).toBe("succeeded");

  const pages = (await a.artifacts.list(`preview/${id}/`)).map((key) => key.slice(`preview/${id}/`.length));
  expect(pages).toContain("index.html");
  for (const publicUrl of [done.previewUrl!, done.publishedUrl!]) {
    const { pathname } = new URL(publicUrl);
    for (const page of pages) {
      const fromA = await fetch(`${a.url}${pathname}${page}`);
      const fromB = await fetch(`${b.url}${pathname}${page}`);
      expect(fromB.status, `${pathname}${page} on B`).toBe(200);
      expect(Buffer.from(await fromB.arrayBuffer()).equals(Buffer.from(await fromA.arrayBuffer())), page).toBe(true);
      const etag = fromB.headers.get("etag");
      expect(etag).toBe(fromA.headers.get("etag"));
      expect((await fetch(`${b.url}${pathname}${page}`, { headers: { "if-none-match": etag! } })).status).toBe(304);
    }
    expect((await fetch(`${b.url}${pathname}no-such-page.html`)).status).toBe(404);
  }
}

describe.runIf(onRealPostgres)("artifacts in Postgres, two instances on one server", () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const databaseUrl = (await createTestDatabase())!;
    // No ZERO_ARTIFACTS: with DATABASE_URL the database is the default store.
    a = await startTestApp({ databaseUrl });
    b = await startTestApp({ databaseUrl, env: { ZERO_WORKER_CONCURRENCY: "0" } });
  }, 60_000);

  it("serves on B a site built by A", { timeout: 180_000 }, async () => {
    expect(a.config.artifacts).toEqual({ kind: "postgres" });
    await builtOnAServedByB(a, b);
  });
});

describe("artifacts in an S3 bucket, two instances with their own data dirs", () => {
  let s3: FakeS3;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    s3 = await new FakeS3().start();
    const env = {
      ZERO_ARTIFACTS: "s3://zero-sites/tenant-1",
      AWS_ENDPOINT_URL: s3.url,
      AWS_REGION: "eu-west-3",
      AWS_ACCESS_KEY_ID: FAKE_S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: FAKE_S3_CREDENTIALS.secretAccessKey,
      ZERO_S3_FORCE_PATH_STYLE: "true",
    };
    // Instances share plans, and so what their pages show, through one Postgres. A PGlite run has no database two
    // instances can share: there A serves its own pages from the bucket, and Postgres runs (CI) check B.
    const databaseUrl = await createTestDatabase();
    a = await startTestApp({ databaseUrl, env });
    b = onRealPostgres ? await startTestApp({ databaseUrl, env: { ...env, ZERO_WORKER_CONCURRENCY: "0" } }) : a;
  }, 60_000);
  afterAll(() => s3?.close());

  it("serves on B a site built by A", { timeout: 180_000 }, async () => {
    await builtOnAServedByB(a, b);
    expect([...s3.objects.keys()].some((key) => key.startsWith("zero-sites/tenant-1/sites/"))).toBe(true);
    expect(s3.rejected).toBe(0);
  });
});
