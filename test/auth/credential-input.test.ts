import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
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
});
