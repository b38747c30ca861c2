import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleClient, createAccountWithKey, sessionHeaders, signUp } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";

const code = (e: unknown) => (e instanceof ConnectError ? e.code : undefined);

describe("accounts, sessions and API keys", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("signs up, sets an HttpOnly SameSite=Lax session cookie, and knows the session", async () => {
    let setCookie = "";
    const client = consoleClient(app.url);
    const { account } = await client.signUp(
      { email: "Person@Example.test", password: "correct horse battery" },
      { onHeader: (h) => (setCookie = h.get("set-cookie") ?? "") },
    );
    expect(account?.id).toMatch(/^acc_/);
    expect(account?.email).toBe("person@example.test");
    expect(setCookie).toMatch(/^zero_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax/);
    expect(setCookie).not.toContain("Secure");
    const cookie = setCookie.split(";")[0]!;
    const session = await client.getSession({}, { headers: { cookie } });
    expect(session.account?.id).toBe(account?.id);
  });

  it("refuses bad sign-up input and a second account with the same email", async () => {
    const client = consoleClient(app.url);
    await expect(client.signUp({ email: "not-an-email", password: "long enough" })).rejects.toSatisfy((e) => code(e) === Code.InvalidArgument);
    await expect(client.signUp({ email: "short@example.test", password: "short" })).rejects.toSatisfy((e) => code(e) === Code.InvalidArgument);
    await signUp(app.url, "twice@example.test", "password one");
    await expect(client.signUp({ email: "TWICE@example.test", password: "password two" })).rejects.toSatisfy((e) => code(e) === Code.AlreadyExists);
  });

  it("signs in with the right password only, with the same answer for unknown emails", async () => {
    const client = consoleClient(app.url);
    await signUp(app.url, "signin@example.test", "the right password");
    const ok = await client.signIn({ email: "signin@example.test", password: "the right password" });
    expect(ok.account?.email).toBe("signin@example.test");
    const wrong = await client.signIn({ email: "signin@example.test", password: "the wrong password" }).catch((e: unknown) => e);
    const unknown = await client.signIn({ email: "nobody@example.test", password: "the wrong password" }).catch((e: unknown) => e);
    expect(code(wrong)).toBe(Code.Unauthenticated);
    expect(code(unknown)).toBe(Code.Unauthenticated);
    expect((wrong as ConnectError).rawMessage).toBe((unknown as ConnectError).rawMessage);
  });

  it("creates a key shown once, lists it without the secret, and revokes it at once", async () => {
    const account = await createAccountWithKey(app, ["read", "build"]);
    expect(account.apiKey).toMatch(/^zk_[0-9A-Za-z]{32,}$/);
    const client = consoleClient(app.url);
    const headers = sessionHeaders(app.url, account.cookie);
    const { apiKeys } = await client.listApiKeys({}, { headers });
    expect(apiKeys).toHaveLength(1);
    expect(apiKeys[0]!.scopes).toEqual(["read", "build"]);
    expect(JSON.stringify(apiKeys, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(account.apiKey);

    // The key works for a method in its scope…
    const read = await fetch(`${app.url}/zero.v1.ConsoleService/ListApiKeys`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${account.apiKey}` },
      body: "{}",
    });
    // …but key management accepts only a session, never a key.
    expect(read.status).toBe(403);

    await client.revokeApiKey({ id: apiKeys[0]!.id }, { headers });
    const after = await client.listApiKeys({}, { headers });
    expect(after.apiKeys[0]!.revokedAt).toBeDefined();
    await expect(client.revokeApiKey({ id: "key_doesnotexist" }, { headers })).rejects.toSatisfy((e) => code(e) === Code.NotFound);
  });

  it("refuses unknown scopes and empty names", async () => {
    const { cookie } = await signUp(app.url, "scopes@example.test", "password long");
    const client = consoleClient(app.url);
    const headers = sessionHeaders(app.url, cookie);
    await expect(client.createApiKey({ name: "x", scopes: ["admin"] }, { headers })).rejects.toSatisfy((e) => code(e) === Code.InvalidArgument);
    await expect(client.createApiKey({ name: " ", scopes: ["read"] }, { headers })).rejects.toSatisfy((e) => code(e) === Code.InvalidArgument);
    await expect(client.createApiKey({ name: "x", scopes: [] }, { headers })).rejects.toSatisfy((e) => code(e) === Code.InvalidArgument);
  });

  it("refuses a cookie-authenticated write from another origin, or with no Origin (CSRF)", async () => {
    const { cookie } = await signUp(app.url, "csrf@example.test", "password long");
    const client = consoleClient(app.url);
    const foreign = client.createApiKey({ name: "k", scopes: ["read"] }, { headers: { cookie, origin: "https://evil.example" } });
    await expect(foreign).rejects.toSatisfy((e) => code(e) === Code.PermissionDenied);
    const noOrigin = client.createApiKey({ name: "k", scopes: ["read"] }, { headers: { cookie } });
    await expect(noOrigin).rejects.toSatisfy((e) => code(e) === Code.PermissionDenied);
  });

  it("signs out: the cookie stops working", async () => {
    const { cookie } = await signUp(app.url, "signout@example.test", "password long");
    const client = consoleClient(app.url);
    await client.signOut({}, { headers: sessionHeaders(app.url, cookie) });
    await expect(client.getSession({}, { headers: { cookie } })).rejects.toSatisfy((e) => code(e) === Code.Unauthenticated);
  });

  it("rate limits sign-in attempts per email without telling whether it exists", async () => {
    const client = consoleClient(app.url);
    const results: (number | undefined)[] = [];
    for (let i = 0; i < 12; i++) {
      const error = await client.signIn({ email: "target@example.test", password: `guess ${i}` }).catch((e: unknown) => e);
      results.push(code(error));
    }
    expect(results.slice(0, 10).every((c) => c === Code.Unauthenticated)).toBe(true);
    expect(results.slice(10).every((c) => c === Code.ResourceExhausted)).toBe(true);
  });

  it("stores no secret in clear: passwords, session tokens and key secrets appear only as hashes", async () => {
    const account = await createAccountWithKey(app, ["read"]);
    const token = account.cookie.split("=")[1]!;
    const tables = ["accounts", "sessions", "api_keys"] as const;
    const dump = JSON.stringify(await Promise.all(tables.map((t) => app.store.db.selectFrom(t).selectAll().execute())));
    expect(dump).toContain(account.email);
    for (const secret of [account.password, token, account.apiKey]) expect(dump).not.toContain(secret);
    const logs = app.logs.join("\n");
    for (const secret of [account.password, token, account.apiKey]) expect(logs).not.toContain(secret);
  });
});

describe("ZERO_SIGNUP=closed", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_SIGNUP: "closed" } });
  });
  afterAll(() => app.close());

  it("lets only the first account sign up", async () => {
    await signUp(app.url, "owner@example.test", "password long");
    const second = consoleClient(app.url).signUp({ email: "other@example.test", password: "password long" });
    await expect(second).rejects.toSatisfy((e) => code(e) === Code.PermissionDenied);
  });
});
