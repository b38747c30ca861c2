import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";

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
  const transports: Record<string, () => Transport> = {
    connect: () => createConnectTransport({ baseUrl: app.url, httpVersion: "1.1" }),
    grpc: () => createGrpcTransport({ baseUrl: app.url }),
    "grpc-web": () => createGrpcWebTransport({ baseUrl: app.url, httpVersion: "1.1" }),
  };

  /** Polls /healthz while `work` runs and returns the slowest answer, in ms. */
  async function slowestHealthz(work: Promise<unknown>): Promise<number> {
    let done = false;
    void work.finally(() => (done = true)).catch(() => {});
    let slowest = 0;
    while (!done) {
      const started = performance.now();
      await fetch(`${app.url}/healthz`);
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return slowest;
  }

  for (const [name, transport] of Object.entries(transports)) {
    for (const method of ["signUp", "signIn"] as const) {
      it(`${method} over ${name}: a 1 MiB pathological e-mail is refused at once, and /healthz stays quick`, async () => {
        const client = createClient(ConsoleService, transport());
        // The first 1 MiB through a fresh client warms the JIT on both sides. Then the best of three tries is
        // the measure, so that a collection or another test file on this machine does not decide it; the old
        // check took seconds on every try.
        await client[method]({ email: pathologicalEmail, password: "long enough password" }).catch(() => {});
        const tries: { elapsed: number; healthz: number }[] = [];
        for (let i = 0; i < 3; i++) {
          const started = performance.now();
          const call = client[method]({ email: pathologicalEmail, password: "long enough password" });
          const [outcome, healthz] = await Promise.all([
            call.then(
              () => undefined,
              (e: unknown) => e,
            ),
            slowestHealthz(call),
          ]);
          tries.push({ elapsed: performance.now() - started, healthz });
          expect(outcome).toBeInstanceOf(ConnectError);
          expect((outcome as ConnectError).code).toBe(Code.InvalidArgument);
        }
        expect(Math.min(...tries.map((t) => t.elapsed))).toBeLessThan(50);
        expect(Math.min(...tries.map((t) => t.healthz))).toBeLessThan(50);
      });
    }
  }

  it("refuses an over-long password before hashing it", async () => {
    const client = createClient(ConsoleService, transports.connect!());
    // As above: a first call warms the JIT, then the best of three is the measure, so a busy machine does not decide it.
    const attempt = () => client.signUp({ email: "long-password@example.test", password: "p".repeat(1_000_000) }).catch((e: unknown) => e);
    await attempt();
    const elapsed: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const outcome = await attempt();
      elapsed.push(performance.now() - started);
      expect((outcome as ConnectError).code).toBe(Code.InvalidArgument);
      expect((outcome as ConnectError).rawMessage).toMatch(/password/);
    }
    expect(Math.min(...elapsed)).toBeLessThan(50);
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
    const client = createClient(ConsoleService, transports.connect!());
    const { account } = await client.signUp({ email: "  Ordinary.Person+tag@Example.test ", password: "long enough password" });
    expect(account?.email).toBe("ordinary.person+tag@example.test");
    for (const email of ["no-at-sign.example.test", "two@@example.test", "a@b", "a b@example.test", "@example.test", "a@.test", "a@example."]) {
      const outcome = await client.signUp({ email, password: "long enough password" }).catch((e: unknown) => e);
      expect((outcome as ConnectError).code, email).toBe(Code.InvalidArgument);
    }
  });
});
