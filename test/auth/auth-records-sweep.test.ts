import fs from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { hashToken } from "../../src/auth/secrets.js";
import { readSessionToken } from "../../src/auth/session-cookie.js";
import { consoleClient, sessionHeaders, signIn, signUp } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

// Found by a privacy review: ended sessions, sign-in counts (kept under the e-mails people typed, theirs or not)
// and the addresses an account signed in from were kept forever on a quiet server.
describe("what sign-in keeps about people", () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it("is deleted once nothing reads it: ended sessions, past sign-in counts and addresses not used for 30 days", async () => {
    const first = await startTestApp({ keepDataDir: true });
    apps.push(first);
    const dataDir = first.dataDir;
    const email = "kept@example.test";
    const password = "a long enough password";
    const { accountId, cookie: signedOut } = await signUp(first.url, email, password);
    await consoleClient(first.url).signOut({}, { headers: sessionHeaders(first.url, signedOut) });
    const live = await signIn(first.url, email, password);
    const idle = await signIn(first.url, email, password);
    await consoleClient(first.url)
      .signIn({ email: "nobody@elsewhere.test", password: "a wrong guess at least" })
      .catch(() => undefined);
    const db = first.store.db;
    // Another week on for one session, two hours on for the counts (past their windows), 31 days for the address.
    await db
      .updateTable("sessions")
      .set({ last_used_at: new Date(Date.now() - 8 * 86_400_000) })
      .where("token_hash", "=", hashToken(readSessionToken(idle)!))
      .execute();
    await db
      .updateTable("sign_in_attempts")
      .set({ window_start: new Date(Date.now() - 2 * 3600_000) })
      .execute();
    await db
      .updateTable("sign_in_known_addresses")
      .set({ last_success_at: new Date(Date.now() - 31 * 86_400_000) })
      .execute();
    expect(await count(first, "sessions")).toBe(3);
    expect(await count(first, "sign_in_attempts")).toBeGreaterThan(0);
    expect(await count(first, "sign_in_known_addresses")).toBe(1);
    await first.close();
    apps.pop();

    // The sweep runs at start and hourly after.
    const second = await startTestApp({ dataDir, databaseUrl: first.databaseUrl });
    apps.push(second);
    await expect.poll(() => count(second, "sessions")).toBe(1);
    await expect.poll(() => count(second, "sign_in_attempts")).toBe(0);
    await expect.poll(() => count(second, "sign_in_known_addresses")).toBe(0);
    // The live session is the one kept, and still works.
    const session = await consoleClient(second.url).getSession({}, { headers: { cookie: live } });
    expect(session.account?.id).toBe(accountId);
    await fs.rm(dataDir, { recursive: true, force: true });
  });
});

async function count(app: TestApp, table: "sessions" | "sign_in_attempts" | "sign_in_known_addresses"): Promise<number> {
  const row = await app.store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
