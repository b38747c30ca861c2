import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { insertPlansWithinLimit } from "../../src/executions/plan-repository.js";
import { initialStages } from "../../src/executions/plan-transitions.js";
import { FakeUpstream, answer } from "../chat/support/fake-upstream.js";
import { startGateway } from "../chat/support/gateway.js";
import { createAccountWithKey, sessionHeaders, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { decodedBody, rawRequest, varyTokens } from "../support/raw-request.js";
import { PROTOCOLS, rpcTransport } from "../support/transports.js";

// What the answers of /api, /v1 and the RPCs say about their encoding and caching.

let app: TestApp;
let upstream: FakeUpstream;
let account: TestAccount;
const CORS_ORIGIN = "https://app.example.test";

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  app = await startGateway([upstream], { ZERO_CORS_ORIGINS: CORS_ORIGIN });
  account = await createAccountWithKey(app, ["read", "chat"]);
  // Plans that stay as they are (cancelled before any worker sees them), so that two reads of the list match.
  await app.store.db.transaction().execute(async (trx) => {
    const plans = Array.from({ length: 6 }, (_, i) => ({
      id: `pln_listed${i}`,
      accountId: account.accountId,
      goal: `A website for bakery number ${i} in Lyon, with opening hours and a map`,
      outcome: "website",
      stages: initialStages("website"),
    }));
    await insertPlansWithinLimit(trx, plans, { limit: 1_000_000, windowSeconds: 3600 });
    await trx.updateTable("plan_stages").set({ state: "cancelled" }).where("plan_id", "like", "pln_listed%").execute();
    await trx.updateTable("plans").set({ status: "cancelled" }).where("id", "like", "pln_listed%").execute();
  });
});
afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

describe("a JSON answer under /api", () => {
  it("is compressed when the client accepts it and it is over a kilobyte, and decodes to the same JSON", async () => {
    const auth = { authorization: `Bearer ${account.apiKey}` };
    const plain = await rawRequest(app.url, "/api/execution", { headers: auth });
    expect(plain.status).toBe(200);
    expect(plain.body.length).toBeGreaterThan(1024);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers["cache-control"]).toBe("no-store");
    for (const [accept, coding] of [
      ["gzip, deflate, br", "br"],
      ["gzip", "gzip"],
      ["br;q=0, gzip;q=0", undefined],
    ] as const) {
      const answer = await rawRequest(app.url, "/api/execution", { headers: { ...auth, "accept-encoding": accept } });
      expect(answer.status, accept).toBe(200);
      expect(answer.headers["content-encoding"], accept).toBe(coding);
      expect(answer.headers["content-type"], accept).toBe("application/json; charset=utf-8");
      expect(answer.headers["cache-control"], accept).toBe("no-store");
      expect(varyTokens(answer), accept).toContain("accept-encoding");
      expect(Number(answer.headers["content-length"]), accept).toBe(answer.body.length);
      expect(decodedBody(answer).equals(plain.body), accept).toBe(true);
      if (coding) expect(answer.body.length, accept).toBeLessThan(plain.body.length / 2);
    }
    // A small answer is not worth it.
    const error = await rawRequest(app.url, "/api/execution?id=pln_nope", { headers: { ...auth, "accept-encoding": "br" } });
    expect(error.status).toBe(404);
    expect(error.headers["content-encoding"]).toBeUndefined();
  });

  it("keeps the Vary a CORS answer set beside its own", async () => {
    const answer = await rawRequest(app.url, "/api/execution", {
      headers: { authorization: `Bearer ${account.apiKey}`, origin: CORS_ORIGIN, "accept-encoding": "br" },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["access-control-allow-origin"]).toBe(CORS_ORIGIN);
    expect(answer.headers["content-encoding"]).toBe("br");
    expect(varyTokens(answer)).toEqual(expect.arrayContaining(["origin", "accept-encoding"]));
  });
});

describe("a /v1 answer", () => {
  it("is sent as it always was: never compressed, whatever the client accepts", async () => {
    upstream.otherwise(answer("A long answer about bread. ".repeat(200)));
    const reply = await fetch(`${app.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${account.apiKey}`, "accept-encoding": "gzip, deflate, br" },
      body: JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "bread?" }] }),
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-encoding")).toBeNull();
    expect(reply.headers.get("vary") ?? "").not.toMatch(/accept-encoding/i);
    const body = await reply.text();
    expect(body.length).toBeGreaterThan(4000);
    expect(Number(reply.headers.get("content-length"))).toBe(Buffer.byteLength(body));
  });
});

describe("an RPC's answer", () => {
  it("is never stored by a cache, whatever the protocol: sign-in, the session, a new key's secret, the list of keys", async () => {
    for (const protocol of PROTOCOLS) {
      const client = createClient(ConsoleService, rpcTransport(app.url, protocol));
      const seen: [string, string | null][] = [];
      const onHeader = (name: string) => (headers: Headers) => seen.push([`${protocol} ${name}`, headers.get("cache-control")]);
      const email = `cache-${protocol}@example.test`;
      let cookie = "";
      await client.signUp(
        { email, password: "a long enough password" },
        {
          onHeader: (headers) => {
            cookie = (headers.get("set-cookie") ?? "").split(";")[0]!;
            onHeader("SignUp")(headers);
          },
        },
      );
      await client.signIn({ email, password: "a long enough password" }, { onHeader: onHeader("SignIn") });
      const headers = sessionHeaders(app.url, cookie);
      await client.getSession({}, { headers, onHeader: onHeader("GetSession") });
      await client.createApiKey({ name: "k", scopes: ["read"] }, { headers, onHeader: onHeader("CreateApiKey") });
      await client.listApiKeys({}, { headers, onHeader: onHeader("ListApiKeys") });
      for (const [call, cacheControl] of seen) expect(cacheControl, call).toBe("no-store");
    }
  });

  it("over a Connect GET too", async () => {
    const answer = await fetch(`${app.url}/zero.v1.ConsoleService/ListApiKeys?connect=v1&encoding=json&message=%7B%7D`, {
      headers: { cookie: account.cookie },
    });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { apiKeys: unknown[] }).apiKeys).toHaveLength(1);
    expect(answer.headers.get("cache-control")).toBe("no-store");
  });
});
