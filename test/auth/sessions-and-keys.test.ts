import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_LIVE_KEYS } from "../../src/auth/accounts.js";
import { consoleClient, sessionHeaders, signUp } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

const code = (e: unknown) => (e instanceof ConnectError ? e.code : "ok");

describe("sessions and keys have bounds", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it(`an account holds at most ${MAX_LIVE_KEYS} live keys, even when creates race; revoking one makes room`, async () => {
    const { cookie } = await signUp(app.url, "keys@example.test", "a long enough password");
    const client = consoleClient(app.url);
    const headers = sessionHeaders(app.url, cookie);
    for (let i = 0; i < MAX_LIVE_KEYS - 2; i++) await client.createApiKey({ name: `k${i}`, scopes: ["read"] }, { headers });
    const racing = await Promise.all(
      Array.from({ length: 6 }, (_, i) => client.createApiKey({ name: `race ${i}`, scopes: ["read"] }, { headers }).then(() => "ok", code)),
    );
    expect(racing.filter((r) => r === "ok")).toHaveLength(2);
    expect(racing.filter((r) => r === Code.InvalidArgument)).toHaveLength(4);
    const { apiKeys } = await client.listApiKeys({}, { headers });
    expect(apiKeys.filter((k) => !k.revokedAt)).toHaveLength(MAX_LIVE_KEYS);
    await client.revokeApiKey({ id: apiKeys[0]!.id }, { headers });
    await expect(client.createApiKey({ name: "after revoking", scopes: ["read"] }, { headers })).resolves.toBeDefined();
  });

  it("a session unused for a week has ended, though its 30 days have not", async () => {
    const { cookie, accountId } = await signUp(app.url, "idle@example.test", "a long enough password");
    const client = consoleClient(app.url);
    await expect(client.getSession({}, { headers: { cookie } })).resolves.toBeDefined();
    await app.store.db
      .updateTable("sessions")
      .set({ last_used_at: new Date(Date.now() - 8 * 86_400_000) })
      .where("account_id", "=", accountId)
      .execute();
    expect(await client.getSession({}, { headers: { cookie } }).then(() => "ok", code)).toBe(Code.Unauthenticated);
  });

  it("a session past its 30 days has ended, though it was used a moment ago", async () => {
    const { cookie, accountId } = await signUp(app.url, "capped@example.test", "a long enough password");
    const client = consoleClient(app.url);
    await expect(client.getSession({}, { headers: { cookie } })).resolves.toBeDefined();
    await app.store.db
      .updateTable("sessions")
      .set({ expires_at: new Date(Date.now() - 1000), last_used_at: new Date() })
      .where("account_id", "=", accountId)
      .execute();
    expect(await client.getSession({}, { headers: { cookie } }).then(() => "ok", code)).toBe(Code.Unauthenticated);
  });

  it("a password change signs out every device and hands the caller a new session", async () => {
    const { cookie: laptop } = await signUp(app.url, "change@example.test", "the old password");
    const client = consoleClient(app.url);
    let phone = "";
    await client.signIn(
      { email: "change@example.test", password: "the old password" },
      { onHeader: (h) => (phone = (h.get("set-cookie") ?? "").split(";")[0]!) },
    );
    expect(
      await client
        .changePassword({ currentPassword: "not the password", newPassword: "the new password" }, { headers: sessionHeaders(app.url, laptop) })
        .then(() => "ok", code),
    ).toBe(Code.InvalidArgument);

    let fresh = "";
    await client.changePassword(
      { currentPassword: "the old password", newPassword: "the new password" },
      { headers: sessionHeaders(app.url, laptop), onHeader: (h) => (fresh = (h.get("set-cookie") ?? "").split(";")[0]!) },
    );
    expect(fresh).toMatch(/^zero_session=/);
    expect(fresh).not.toBe(laptop);
    for (const old of [laptop, phone]) {
      expect(await client.getSession({}, { headers: { cookie: old } }).then(() => "ok", code)).toBe(Code.Unauthenticated);
    }
    await expect(client.getSession({}, { headers: { cookie: fresh } })).resolves.toBeDefined();
    expect(await client.signIn({ email: "change@example.test", password: "the old password" }).then(() => "ok", code)).toBe(Code.Unauthenticated);
    await expect(client.signIn({ email: "change@example.test", password: "the new password" })).resolves.toBeDefined();
  });
});
