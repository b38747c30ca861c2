import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findAccountByEmail } from "../../src/auth/accounts.js";
import { hashPassword, newId } from "../../src/auth/secrets.js";
import { beginSignIn, DEFAULT_SIGN_IN_LIMITS } from "../../src/auth/sign-in-limiter.js";
import { consoleClient } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { SIGN_IN_WINDOW_S, wellInsideWindow } from "../support/limit-windows.js";

const code = (e: unknown) => (e instanceof ConnectError ? e.code : "ok");

/**
 * A version before e-mails were composed (NFC) stores an address as it was typed, in lower case. One still
 * runs beside this one during a rolling deploy, or again after a rollback, and the migration leaves a
 * decomposed address alone where its composed form was already another account's.
 */
describe("accounts stored under the spelling their owner typed (an older version, mid-rollout or after a rollback)", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_TRUSTED_PROXIES: "127.0.0.1/32,::1" } });
  });
  afterAll(() => app.close());

  /** Writes the account row as the older version would, bypassing this version's sign-up. */
  async function storedAsOlderVersion(email: string, password: string): Promise<string> {
    const id = newId("acc");
    await app.store.db
      .insertInto("accounts")
      .values({ id, email, password_hash: await hashPassword(password) })
      .execute();
    return id;
  }

  function signIn(email: string, password: string, address = "198.51.100.1") {
    return consoleClient(app.url).signIn({ email, password }, { headers: { "x-forwarded-for": address } });
  }

  it("sign in with what they type, and with the composed form when theirs is the only account", async () => {
    const id = await storedAsOlderVersion("zoe\u0308@example.test", "zoe's own password");
    for (const email of ["zoe\u0308@example.test", "ZOE\u0308@Example.test", " zoe\u0308@example.test ", "zo\u00eb@example.test"]) {
      const { account } = await signIn(email, "zoe's own password");
      expect(account?.id, JSON.stringify(email)).toBe(id);
      expect(account?.email).toBe("zoe\u0308@example.test");
    }
  });

  it("keep their address: a sign-up for it in either spelling is a conflict, as for any taken address", async () => {
    await storedAsOlderVersion("jose\u0301@example.test", "jose's own password");
    for (const email of ["jos\u00e9@example.test", "jose\u0301@example.test", "JOS\u00c9@example.test"]) {
      const outcome = await consoleClient(app.url)
        .signUp({ email, password: "a squatter's password" })
        .catch((e: unknown) => e);
      expect(code(outcome), JSON.stringify(email)).toBe(Code.AlreadyExists);
      expect((outcome as ConnectError).rawMessage).toBe("an account with this email already exists; sign in instead");
    }
    const accounts = await app.store.db
      .selectFrom("accounts")
      .select("email")
      .where("email", "in", ["jos\u00e9@example.test", "jose\u0301@example.test"])
      .execute();
    expect(accounts.map((a) => a.email)).toEqual(["jose\u0301@example.test"]);
  });

  it("with both spellings held by two accounts, each owner reaches their own by typing it", async () => {
    const composed = await storedAsOlderVersion("ren\u00e9@example.test", "the composed owner's password");
    const decomposed = await storedAsOlderVersion("rene\u0301@example.test", "the decomposed owner's password");
    const { account: first } = await signIn("ren\u00e9@example.test", "the composed owner's password");
    expect(first?.id).toBe(composed);
    const { account: second } = await signIn("rene\u0301@example.test", "the decomposed owner's password");
    expect(second?.id).toBe(decomposed);
    // Neither reaches the other's account with their own password.
    expect(code(await signIn("ren\u00e9@example.test", "the decomposed owner's password").catch((e: unknown) => e))).toBe(Code.Unauthenticated);
  });

  it("are still known at the address they signed in from, so guesses from elsewhere do not lock them out", async () => {
    await storedAsOlderVersion("nin\u0303a@example.test", "nina's own password");
    expect(code(await signIn("nin\u0303a@example.test", "nina's own password", "198.51.100.60").catch((e: unknown) => e))).toBe("ok");
    // The limiter the sign-in uses, with a spread limit of 2 rather than 50 failures (each costs a password hash).
    const limits = { ...DEFAULT_SIGN_IN_LIMITS, perEmail: 2 };
    const attemptFrom = async (email: string, address: string) =>
      beginSignIn(app.store.db, { email, address, account: await findAccountByEmail(app.store.db, email) }, limits).then(() => "ok" as const, code);
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    // Guesses spread over addresses and both spellings share one count for the e-mail.
    expect(await attemptFrom("nin\u0303a@example.test", "203.0.113.1")).toBe("ok");
    expect(await attemptFrom("ni\u00f1a@example.test", "203.0.113.2")).toBe("ok");
    expect(await attemptFrom("nin\u0303a@example.test", "203.0.113.3")).toBe(Code.ResourceExhausted);
    expect(await attemptFrom("ni\u00f1a@example.test", "192.0.2.99")).toBe(Code.ResourceExhausted);
    // Nina, at the address she signed in from before, gets in, in either spelling.
    for (const email of ["ni\u00f1a@example.test", "nin\u0303a@example.test"]) {
      expect(await attemptFrom(email, "198.51.100.60"), JSON.stringify(email)).toBe("ok");
    }
  });

  it("with both spellings held by two accounts, the owner of one can neither reset nor borrow the other's sign-in limits", async () => {
    const attacker = await storedAsOlderVersion("mar\u00eda@example.test", "the attacker's own password");
    await storedAsOlderVersion("mari\u0301a@example.test", "the victim's password");
    const limits = { ...DEFAULT_SIGN_IN_LIMITS, perPair: 2 };
    const from = "203.0.113.77";
    const victim = "mari\u0301a@example.test";
    const guessVictim = async () =>
      beginSignIn(app.store.db, { email: victim, address: from, account: await findAccountByEmail(app.store.db, victim) }, limits).then(
        () => "ok" as const,
        code,
      );
    await wellInsideWindow(SIGN_IN_WINDOW_S);
    expect(await guessVictim()).toBe("ok");
    expect(await guessVictim()).toBe("ok");
    expect(await guessVictim()).toBe(Code.ResourceExhausted);
    // The attacker signs in to their own account, of the same address in the other spelling, from the same place.
    const own = await beginSignIn(
      app.store.db,
      { email: "mar\u00eda@example.test", address: from, account: await findAccountByEmail(app.store.db, "mar\u00eda@example.test") },
      limits,
    );
    await own.succeeded(attacker);
    // The victim's count stands, and the attacker's address is not known for the victim's account.
    expect(await guessVictim()).toBe(Code.ResourceExhausted);
  });
});
