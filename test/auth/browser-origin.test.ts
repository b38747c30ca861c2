import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";

interface Answer {
  status: number;
  body: { code?: string; message?: string; secret?: string };
  cookie: string | undefined;
  /** The whole `Set-Cookie`, attributes and all. */
  setCookie: string | undefined;
}

/**
 * A Console call with the exact headers given, `Host` included (fetch
 * replaces it with the address dialled): what a browser sends after a DNS
 * rebinding, where a name the attacker controls resolves to this service.
 */
function consoleCall(app: TestApp, method: string, headers: Record<string, string>, body: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port: app.port,
        method: "POST",
        path: `/zero.v1.ConsoleService/${method}`,
        headers: { "content-type": "application/json", ...headers },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (text += chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode!,
            body: JSON.parse(text) as Answer["body"],
            cookie: response.headers["set-cookie"]?.[0]?.split(";")[0],
            setCookie: response.headers["set-cookie"]?.[0],
          }),
        );
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}

const credentials = (email: string) => ({ email, password: "a long enough password" });

describe("a page on another host name that resolves to this service (DNS rebinding)", () => {
  let app: TestApp;
  let rebound: Record<string, string>;
  beforeAll(async () => {
    app = await startTestApp();
    // The browser's Host and Origin agree with each other, and name the attacker's host.
    rebound = { host: `attacker.example:${app.port}`, origin: `http://attacker.example:${app.port}` };
  });
  afterAll(() => app.close());

  it("can neither sign up nor sign in", async () => {
    for (const method of ["SignUp", "SignIn"]) {
      const answer = await consoleCall(app, method, rebound, credentials("rebound@example.test"));
      expect(answer.status, method).toBe(403);
      expect(answer.body.code).toBe("permission_denied");
      expect(answer.cookie).toBeUndefined();
    }
    // Nothing was created: the address is still free.
    const owner = await consoleCall(app, "SignUp", { origin: app.url }, credentials("rebound@example.test"));
    expect(owner.status).toBe(200);
  });

  it("is refused with a message that tells an operator serving the service under a host name to set ZERO_PUBLIC_URL", async () => {
    const { cookie } = await consoleCall(app, "SignUp", {}, credentials("operator@example.test"));
    const signIn = await consoleCall(app, "SignIn", rebound, credentials("operator@example.test"));
    const write = await consoleCall(app, "CreateApiKey", { ...rebound, cookie: cookie! }, { name: "mine", scopes: ["read"] });
    for (const answer of [signIn, write]) {
      expect(answer.status).toBe(403);
      expect(answer.body.code).toBe("permission_denied");
      expect(answer.body.message).toBe(
        "cross-site request refused: the Origin is not this service (an operator serving it under a host name sets ZERO_PUBLIC_URL to that address)",
      );
    }
  });

  it("cannot write with a session cookie it holds", async () => {
    const { cookie } = await consoleCall(app, "SignUp", {}, credentials("holder@example.test"));
    const minted = await consoleCall(app, "CreateApiKey", { ...rebound, cookie: cookie! }, { name: "stolen", scopes: ["chat"] });
    expect(minted.status).toBe(403);
    expect(minted.body.secret).toBeUndefined();
  });

  it("leaves the pages this service serves itself working, under its address, localhost or another IP literal", async () => {
    for (const [i, host] of [`127.0.0.1:${app.port}`, `localhost:${app.port}`, `[::1]:${app.port}`].entries()) {
      const own = { host, origin: `http://${host}` };
      const signedUp = await consoleCall(app, "SignUp", own, credentials(`own-${i}@example.test`));
      expect(signedUp.status, host).toBe(200);
      const signedIn = await consoleCall(app, "SignIn", own, credentials(`own-${i}@example.test`));
      expect(signedIn.status, host).toBe(200);
      const minted = await consoleCall(app, "CreateApiKey", { ...own, cookie: signedIn.cookie! }, { name: "mine", scopes: ["read"] });
      expect(minted.status, host).toBe(200);
    }
  });

  it("refuses a browser whose Origin is another site's, while clients that send no Origin (curl, the CLI) still sign up and in", async () => {
    const foreign = await consoleCall(app, "SignIn", { origin: "https://evil.example" }, credentials("holder@example.test"));
    expect(foreign.status).toBe(403);
    const opaque = await consoleCall(app, "SignUp", { origin: "null" }, credentials("opaque@example.test"));
    expect(opaque.status).toBe(403);
    expect((await consoleCall(app, "SignUp", {}, credentials("cli@example.test"))).status).toBe(200);
    expect((await consoleCall(app, "SignIn", {}, credentials("cli@example.test"))).status).toBe(200);
  });
});

describe("a client that is not a browser (curl, a script) writing with a session cookie", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("is refused when it sends no Origin, with a message that says none was sent and what to do: send this service's Origin, or use a key", async () => {
    const { cookie } = await consoleCall(app, "SignUp", {}, credentials("curl@example.test"));
    const advice = `a write with a session cookie must carry this service's Origin, and this request sent none: send the header "Origin: ${app.url}", or use an API key instead of the cookie`;
    const rpc = await consoleCall(app, "CreateApiKey", { cookie: cookie! }, { name: "mine", scopes: ["read"] });
    expect(rpc.status).toBe(403);
    expect(rpc.body).toMatchObject({ code: "permission_denied", message: advice });
    const rest = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { cookie: cookie!, "content-type": "application/json" },
      body: JSON.stringify({ goal: "A website for a neighbourhood bicycle repair cafe" }),
    });
    expect(rest.status).toBe(403);
    expect(await rest.json()).toEqual({ error: { type: "permission_denied", message: advice } });
    // Following the advice works.
    const minted = await consoleCall(app, "CreateApiKey", { cookie: cookie!, origin: app.url }, { name: "mine", scopes: ["read"] });
    expect(minted.status).toBe(200);
    expect(minted.body.secret).toMatch(/^zk_/);
  });

  it("gets its session cookie without Secure on a service at an http address, where a browser would drop a Secure one", async () => {
    const signedUp = await consoleCall(app, "SignUp", {}, credentials("plain@example.test"));
    expect(signedUp.status).toBe(200);
    expect(signedUp.setCookie).toMatch(/^zero_session=[^;]+;/);
    expect(signedUp.setCookie).not.toMatch(/Secure/);
  });
});

describe("a deployment under a host name (ZERO_PUBLIC_URL)", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_PUBLIC_URL: "https://zero.example" } });
  });
  afterAll(() => app.close());

  it("takes its own public origin, whatever Host the balancer forwards, and no other name", async () => {
    const own = await consoleCall(app, "SignUp", { host: "10.0.0.7:8080", origin: "https://zero.example" }, credentials("public@example.test"));
    expect(own.status).toBe(200);
    const written = await consoleCall(app, "CreateApiKey", { origin: "https://zero.example", cookie: own.cookie! }, { name: "mine", scopes: ["read"] });
    expect(written.status).toBe(200);
    const rebound = await consoleCall(app, "SignIn", { host: "other.example", origin: "http://other.example" }, credentials("public@example.test"));
    expect(rebound.status).toBe(403);
  });

  it("marks its session cookie Secure, on the way in and on the way out, so a browser never sends it over plain http", async () => {
    const signedUp = await consoleCall(app, "SignUp", { origin: "https://zero.example" }, credentials("secure@example.test"));
    expect(signedUp.status).toBe(200);
    expect(signedUp.setCookie).toMatch(/^zero_session=[^;]+;/);
    expect(signedUp.setCookie).toMatch(/; Secure(;|$)/);
    const signedOut = await consoleCall(app, "SignOut", { origin: "https://zero.example", cookie: signedUp.cookie! }, {});
    expect(signedOut.status).toBe(200);
    expect(signedOut.setCookie).toMatch(/^zero_session=;.*; Max-Age=0(;|$)/);
    expect(signedOut.setCookie).toMatch(/; Secure(;|$)/);
  });
});
