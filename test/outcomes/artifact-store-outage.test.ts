import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { authHeaders, postExecution, waitForPlan, type Credential, type RestPlan } from "../support/executions.js";
import { FAKE_S3_CREDENTIALS, FakeS3 } from "../support/fake-s3.js";

const GOAL = "A website for my small bakery in Lyon with opening hours";
const RETRY_BASE_MS = 400;

let s3: FakeS3;
let app: TestApp;
let account: TestAccount;
let cred: Credential;
/** A plan at its gate, whose preview is in the bucket. */
let built: RestPlan;

beforeAll(async () => {
  s3 = await new FakeS3().start();
  app = await startTestApp({
    env: {
      ZERO_ARTIFACTS: "s3://zero-sites/tenant-1",
      AWS_ENDPOINT_URL: s3.url,
      AWS_REGION: "eu-west-3",
      AWS_ACCESS_KEY_ID: FAKE_S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: FAKE_S3_CREDENTIALS.secretAccessKey,
      ZERO_S3_FORCE_PATH_STYLE: "true",
      ZERO_STAGE_MAX_ATTEMPTS: "3",
      ZERO_STAGE_RETRY_BASE_MS: String(RETRY_BASE_MS),
      // Heartbeats (a third of the lease) tell a cancelled run soon, wake-up or not; long enough that a
      // loaded machine's late heartbeat does not let the lease run out under the stage.
      ZERO_STAGE_LEASE_MS: "4000",
    },
    // Each retry waits its whole backoff, so a test can change the bucket between two tries.
    retryJitter: () => 0.999,
  });
  account = await createAccountWithKey(app, ["build", "read"]);
  cred = { apiKey: account.apiKey };
  const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: GOAL });
  built = await waitForPlan(app.url, cred, created.body.plan.id, (p) => p.status !== "running", 90_000);
  expect(built.status).toBe("awaiting_approval");
}, 120_000);

afterEach(() => {
  s3.failing = undefined;
  s3.thaw();
});
afterAll(() => s3?.close());

interface RestEvent {
  type: string;
  stage: string | null;
  detail: { error?: { type: string; message: string } } | null;
}

async function history(id: string): Promise<RestEvent[]> {
  const res = await fetch(`${app.url}/api/execution/history?id=${encodeURIComponent(id)}`, { headers: authHeaders(app.url, cred) });
  return ((await res.json()) as { events: RestEvent[] }).events;
}

/** Resolves once `holds` answers true; fails the test after `ms`. */
async function until(holds: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await holds())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time");
    await sleep(25);
  }
}

describe("an S3 artifact store that refuses the service or does not answer", () => {
  it("answers a preview and a download 503 unavailable with Retry-After: a page to a browser, the API's error to a client", async () => {
    const page = `${built.previewUrl!}index.html`;
    expect((await fetch(page)).status).toBe(200);
    s3.failing = { status: 403, code: "SignatureDoesNotMatch" };

    const browser = await fetch(page, { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
    expect(browser.status).toBe(503);
    expect(browser.headers.get("retry-after")).toBe("1");
    expect(browser.headers.get("content-type")).toMatch(/^text\/html/);
    expect(browser.headers.get("cache-control")).toBe("no-store");
    const text = await browser.text();
    expect(text).toContain("cannot be shown right now");
    // A visitor learns nothing of the bucket behind the site.
    expect(text).not.toMatch(/S3|403|Signature/);

    const client = await fetch(page, { headers: { accept: "application/json" } });
    expect(client.status).toBe(503);
    expect(client.headers.get("retry-after")).toBe("1");
    const body = (await client.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("unavailable");
    expect(body.error.message).not.toMatch(/S3|403|Signature/);

    const download = await fetch(`${app.url}/api/execution/download?id=${built.id}`, { headers: authHeaders(app.url, cred) });
    expect(download.status).toBe(503);
    expect(((await download.json()) as { error: { type: string } }).error.type).toBe("unavailable");

    s3.failing = undefined;
    expect((await fetch(page)).status).toBe(200);
  });

  it("stops the bucket request of a preview or a download whose client hung up", async () => {
    s3.freeze();
    for (const [url, headers] of [
      [`${built.previewUrl!}index.html`, {}],
      [`${app.url}/api/execution/download?id=${built.id}`, authHeaders(app.url, cred)],
    ] as const) {
      const abandonedBefore = s3.abandoned;
      await expect(fetch(url, { headers, signal: AbortSignal.timeout(500) })).rejects.toThrow();
      await until(() => s3.abandoned > abandonedBefore, 3000);
    }
  });

  it("retries a stage whose store write the bucket refused, as other transient failures are, and it succeeds once the bucket answers", async () => {
    // The first try's first request and the signer's own three retries of it are refused; the stage's retry finds the bucket answering.
    s3.failing = { status: 503, code: "ServiceUnavailable", times: 4 };
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: GOAL });
    const id = created.body.plan.id;
    let retrying: RestEvent | undefined;
    await until(async () => {
      retrying = (await history(id)).find((e) => e.type === "stage_retrying");
      return retrying !== undefined;
    });
    expect(retrying).toMatchObject({ stage: "understand", detail: { error: { type: "unavailable" } } });
    expect(retrying!.detail!.error!.message).toMatch(/artifact store \(S3\)/);
    const plan = await waitForPlan(app.url, cred, id, (p) => p.status !== "running", 60_000);
    expect(plan.status).toBe("awaiting_approval");
    expect(plan.stages.find((s) => s.id === "understand")).toMatchObject({ state: "succeeded", attempts: 2 });
  });

  it("fails a stage, resumable, once the bucket refused every try, saying so without the secret", async () => {
    s3.failing = { status: 403, code: "SignatureDoesNotMatch" };
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: GOAL });
    const plan = await waitForPlan(app.url, cred, created.body.plan.id, (p) => p.status !== "running", 30_000);
    expect(plan).toMatchObject({ status: "failed", resumable: true });
    const understand = plan.stages.find((s) => s.id === "understand")!;
    expect(understand).toMatchObject({ state: "failed", attempts: 3, error: { type: "unavailable" } });
    expect(understand.error!.message).toMatch(/artifact store \(S3\) refused .*403 SignatureDoesNotMatch/);
    expect(JSON.stringify(plan)).not.toContain(FAKE_S3_CREDENTIALS.secretAccessKey);
    // The operator reads what the bucket answered in the log, and no credential there either.
    expect(app.logs.some((line) => line.includes("reaching the S3 bucket failed") && line.includes("SignatureDoesNotMatch"))).toBe(true);
    expect(app.logs.join("\n")).not.toContain(FAKE_S3_CREDENTIALS.secretAccessKey);
  });

  it("stops the bucket request of a stage whose plan is cancelled", async () => {
    s3.freeze();
    const abandonedBefore = s3.abandoned;
    const created = await postExecution<{ plan: RestPlan }>(app.url, cred, { goal: GOAL });
    const id = created.body.plan.id;
    await until(() => s3.held > 0);
    const cancelled = await postExecution<{ plan: RestPlan }>(app.url, cred, { planId: id, cancel: true });
    expect(cancelled.status).toBe(202);
    await until(() => s3.abandoned > abandonedBefore, 3000);
    expect((await waitForPlan(app.url, cred, id, (p) => p.status !== "running")).status).toBe("cancelled");
  });

  it("stays ready while the bucket refuses the service, answering the rest: a shared bucket down must not take every instance, chat included, out of the balancer", async () => {
    s3.failing = { status: 403, code: "InvalidAccessKeyId" };
    try {
      expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${app.url}/api/capabilities`)).status).toBe(200);
    } finally {
      s3.failing = undefined;
    }
  });
});
