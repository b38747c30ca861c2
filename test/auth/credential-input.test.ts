import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Kysely } from "kysely";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { up as composeEmails } from "../../src/db/migrations/2026-11-30T00-00_account-email-nfc.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { PROTOCOLS, rpcTransport } from "../support/transports.js";

/**
 * Credentials arrive from anyone, before any sign-in: their checks must cost
 * time linear in a bounded length, so no body can hold the event loop.
 */
describe("credential input is bounded before it is parsed", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  // Just under the 1 MiB body cap. `a@` + dots + `@` made the old e-mail regex backtrack quadratically.
  const pathologicalEmail = `a@${".".repeat(1_000_000)}@`;

  // No wall-clock bound here: on a shared two-core CI machine a timed assertion decides nothing. What keeps
  // these checks linear is structural: the length is capped before anything else reads the input, and
  // `npm run lint:regex` refuses any regex in src/ that can backtrack super-linearly (the old e-mail regex).
  for (const name of PROTOCOLS) {
    const transport = () => rpcTransport(app.url, name);
    for (const method of ["signUp", "signIn"] as const) {
      it(`${method} over ${name}: a 1 MiB pathological e-mail is refused by its length, and the server keeps answering`, async () => {
        const client = createClient(ConsoleService, transport());
        const call = client[method]({ email: pathologicalEmail, password: "long enough password" }).then(
          () => undefined,
          (e: unknown) => e,
        );
        const healthz = await fetch(`${app.url}/healthz`);
        const outcome = await call;
        expect(healthz.status).toBe(200);
        expect(outcome).toBeInstanceOf(ConnectError);
        expect((outcome as ConnectError).code).toBe(Code.InvalidArgument);
        expect((outcome as ConnectError).rawMessage).toMatch(/at most 254 characters/);
      });
    }
  }

  it("refuses an over-long password by its length, before hashing it or creating an account", async () => {
    const client = createClient(ConsoleService, rpcTransport(app.url, "connect"));
    const email = "long-password@example.test";
    const outcome = await client.signUp({ email, password: "p".repeat(1_000_000) }).catch((e: unknown) => e);
    expect((outcome as ConnectError).code).toBe(Code.InvalidArgument);
    expect((outcome as ConnectError).rawMessage).toMatch(/password must be at most \d+ characters/);
    // Nothing was written: the same address signs up afterwards with a normal password.
    const { account } = await client.signUp({ email, password: "long enough password" });
    expect(account?.email).toBe(email);
  });

  it("an 8 KB e-mail is a 400 invalid_request, not a 500", async () => {
    const email = `${"x".repeat(8 * 1024)}@example.test`;
    for (const method of ["SignUp", "SignIn"]) {
      const response = await fetch(`${app.url}/zero.v1.ConsoleService/${method}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, password: "long enough password" }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: "invalid_argument" });
    }
  });

  it("still accepts an ordinary address and tells a malformed one apart", async () => {
    const client = createClient(ConsoleService, rpcTransport(app.url, "connect"));
    const { account } = await client.signUp({ email: "  Ordinary.Person+tag@Example.test ", password: "long enough password" });
    expect(account?.email).toBe("ordinary.person+tag@example.test");
    for (const email of ["no-at-sign.example.test", "two@@example.test", "a@b", "a b@example.test", "@example.test", "a@.test", "a@example."]) {
      const outcome = await client.signUp({ email, password: "long enough password" }).catch((e: unknown) => e);
      expect((outcome as ConnectError).code, email).toBe(Code.InvalidArgument);
    }
  });

  it("takes an address typed in composed or decomposed Unicode as one address, in either form", async () => {
    const client = createClient(ConsoleService, rpcTransport(app.url, "connect"));
    const composed = "jos\u00e9@example.test";
    const decomposed = "jose\u0301@example.test";
    const { account } = await client.signUp({ email: decomposed, password: "long enough password" });
    expect(account?.email).toBe(composed);
    const second = await client.signUp({ email: composed, password: "another long password" }).catch((e: unknown) => e);
    expect((second as ConnectError).code).toBe(Code.AlreadyExists);
    for (const email of [composed, decomposed, "JOSE\u0301@Example.test"]) {
      const { account: signedIn } = await client.signIn({ email, password: "long enough password" });
      expect(signedIn?.id, email).toBe(account?.id);
    }
  });

  it("refuses invisible and format characters and white space inside an address, as any malformed one", async () => {
    const client = createClient(ConsoleService, rpcTransport(app.url, "connect"));
    await client.signUp({ email: "alice@example.test", password: "long enough password" });
    const lookalikes = [
      "alice@example.test\u200b",
      "al\u200dice@example.test",
      "alice\u2060@example.test",
      "\u202ealice@example.test",
      "ali\u00adce@example.test",
      "alice@exa\ufeffmple.test",
      "alice@example\u3000.test",
      "ali\tce@example.test",
    ];
    for (const email of lookalikes) {
      for (const method of ["signUp", "signIn"] as const) {
        const outcome = await client[method]({ email, password: "long enough password" }).catch((e: unknown) => e);
        expect((outcome as ConnectError).code, `${method} ${JSON.stringify(email)}`).toBe(Code.InvalidArgument);
        expect((outcome as ConnectError).rawMessage).toBe("enter a valid email address (at most 254 characters)");
      }
    }
  });
});

describe("accounts stored before e-mails were composed (NFC)", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("are composed by the migration and sign in again under either form; where the composed form was taken, each owner reaches their own account by typing their spelling", async () => {
    const client = createClient(ConsoleService, rpcTransport(app.url, "connect"));
    const lone = await client.signUp({ email: "lone@example.test", password: "long enough password" });
    const twin = await client.signUp({ email: "twin@example.test", password: "long enough password" });
    // As an older version stored them: one account under a decomposed address, and a pair under both forms.
    await app.store.db.updateTable("accounts").set({ email: "re\u0301ne\u0301@example.test" }).where("id", "=", lone.account!.id).execute();
    const composedTwin = await client.signUp({ email: "composed-twin@example.test", password: "the twin's own password" });
    await app.store.db.updateTable("accounts").set({ email: "zoe\u0308@example.test" }).where("id", "=", twin.account!.id).execute();
    await app.store.db.updateTable("accounts").set({ email: "zo\u00eb@example.test" }).where("id", "=", composedTwin.account!.id).execute();
    // Two spellings of one address, both decomposed (the marks in either order): the older is composed.
    const older = await client.signUp({ email: "older@example.test", password: "the older one's password" });
    const younger = await client.signUp({ email: "younger@example.test", password: "long enough password" });
    await app.store.db.updateTable("accounts").set({ email: "tra\u0323\u0302n@example.test" }).where("id", "=", older.account!.id).execute();
    await app.store.db.updateTable("accounts").set({ email: "tra\u0302\u0323n@example.test" }).where("id", "=", younger.account!.id).execute();

    await composeEmails(app.store.db as Kysely<unknown>);

    for (const email of ["r\u00e9n\u00e9@example.test", "re\u0301ne\u0301@example.test"]) {
      const { account } = await client.signIn({ email, password: "long enough password" });
      expect(account?.id, email).toBe(lone.account!.id);
    }
    // The decomposed twin keeps its spelling, and each twin reaches their own account by typing theirs.
    const { account } = await client.signIn({ email: "zo\u00eb@example.test", password: "the twin's own password" });
    expect(account?.id).toBe(composedTwin.account!.id);
    const { account: decomposedTwin } = await client.signIn({ email: "zoe\u0308@example.test", password: "long enough password" });
    expect(decomposedTwin?.id).toBe(twin.account!.id);
    const { account: tran } = await client.signIn({ email: "tr\u1eadn@example.test", password: "the older one's password" });
    expect(tran?.id).toBe(older.account!.id);
    const { account: tranYounger } = await client.signIn({ email: "tra\u0302\u0323n@example.test", password: "long enough password" });
    expect(tranYounger?.id).toBe(younger.account!.id);
  });
});
