import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { build } from "esbuild";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createAccountWithKey, type TestAccount } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { CHROMIUM, CHROMIUM_ARGS, haveChromium } from "../outcomes/support/outcome-kit.js";
import { FakeUpstream } from "./support/fake-upstream.js";
import { startGateway } from "./support/gateway.js";

/** A page on its own origin, standing in for a customer's web app. */
async function pageOrigin(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((_, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>another origin</title>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The openai SDK and connect-web as a browser app would bundle them. */
async function browserBundle(): Promise<string> {
  const result = await build({
    stdin: {
      contents: `
        import OpenAI from "openai";
        import { createClient } from "@connectrpc/connect";
        import { createConnectTransport } from "@connectrpc/connect-web";
        import { CapabilitiesService } from "./gen/zero/v1/capabilities_pb.js";
        window.zeroTest = { OpenAI, createClient, createConnectTransport, CapabilitiesService };
      `,
      resolveDir: path.resolve(import.meta.dirname, "../.."),
      loader: "ts",
    },
    bundle: true,
    platform: "browser",
    format: "iife",
    write: false,
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

interface BrowserAnswers {
  fetchStatus: number;
  requestId: string | null;
  sdkText: string;
  capabilitiesService: string;
}

describe.runIf(haveChromium)("CORS for browser apps on other origins (ZERO_CORS_ORIGINS)", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let account: TestAccount;
  let allowed: Awaited<ReturnType<typeof pageOrigin>>;
  let denied: Awaited<ReturnType<typeof pageOrigin>>;
  let browser: Browser;
  let bundle: string;

  beforeAll(async () => {
    [upstream, allowed, denied, bundle] = await Promise.all([FakeUpstream.start(), pageOrigin(), pageOrigin(), browserBundle()]);
    app = await startGateway([upstream], { ZERO_CORS_ORIGINS: allowed.origin });
    account = await createAccountWithKey(app, ["chat"]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await Promise.all([upstream?.close(), allowed?.close(), denied?.close()]);
  });

  async function callFrom(origin: string): Promise<BrowserAnswers> {
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      await page.addScriptTag({ content: bundle });
      return await page.evaluate(
        async ({ url, key }) => {
          const { OpenAI, createClient, createConnectTransport, CapabilitiesService } = (window as unknown as { zeroTest: Record<string, never> })
            .zeroTest as unknown as {
            OpenAI: typeof import("openai").default;
            createClient: typeof import("@connectrpc/connect").createClient;
            createConnectTransport: typeof import("@connectrpc/connect-web").createConnectTransport;
            CapabilitiesService: typeof import("../../gen/zero/v1/capabilities_pb.js").CapabilitiesService;
          };
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": "cors-1" },
            body: JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "hi" }] }),
          });
          const sdk = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });
          const completion = await sdk.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "hi" }] });
          const capabilities = await createClient(CapabilitiesService, createConnectTransport({ baseUrl: url })).getCapabilities({});
          return {
            fetchStatus: response.status,
            requestId: response.headers.get("x-request-id"),
            sdkText: completion.choices[0]?.message.content ?? "",
            capabilitiesService: capabilities.service,
          };
        },
        { url: app.url, key: account.apiKey },
      );
    } finally {
      await page.close();
    }
  }

  it("lets a listed origin call /v1 with fetch and the openai SDK, and the RPCs with connect-web", async () => {
    const answers = await callFrom(allowed.origin);
    expect(answers).toEqual({ fetchStatus: 200, requestId: expect.stringMatching(/\S/), sdkText: "hello", capabilitiesService: "project-zero" });
  });

  it("leaves an origin that is not listed to the browser's refusal", async () => {
    await expect(callFrom(denied.origin)).rejects.toThrow(/Failed to fetch/);
  });

  it("answers a preflight with 204, the methods and headers, and never allows credentials", async () => {
    const preflight = await fetch(`${app.url}/v1/responses`, {
      method: "OPTIONS",
      headers: {
        origin: allowed.origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-stainless-os",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(allowed.origin);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("x-stainless-os");
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    const refused = await fetch(`${app.url}/v1/responses`, {
      method: "OPTIONS",
      headers: { origin: denied.origin, "access-control-request-method": "POST" },
    });
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("says nothing to a listed origin outside /v1, /api and the RPCs: the Console, /metrics, health and published pages are not shared", async () => {
    for (const route of ["/console/", "/metrics", "/healthz", "/readyz", "/sites/none/", "/preview/pln_none/"]) {
      const answer = await fetch(`${app.url}${route}`, { headers: { origin: allowed.origin } });
      await answer.arrayBuffer();
      expect(answer.headers.get("access-control-allow-origin"), route).toBeNull();
    }
  });

  it("lets a page read a 429's retry advice: x-should-retry and Retry-After", async () => {
    const capped = await startGateway([upstream], { ZERO_CORS_ORIGINS: allowed.origin, ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT: "0" });
    const page = await browser.newPage();
    try {
      const key = (await createAccountWithKey(capped, ["chat"])).apiKey;
      await page.goto(allowed.origin);
      const answer = await page.evaluate(
        async ({ url, key }) => {
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "hi" }] }),
          });
          return { status: response.status, shouldRetry: response.headers.get("x-should-retry"), retryAfter: response.headers.get("retry-after") };
        },
        { url: capped.url, key },
      );
      expect(answer).toEqual({ status: 429, shouldRetry: "false", retryAfter: expect.stringMatching(/^\d+$/) });
    } finally {
      await page.close();
      await capped.close();
    }
  });

  it("lets a page read what the answers carry for it: a download's file name, limits, the request id", async () => {
    const download = await fetch(`${app.url}/api/execution/download?id=pln_x`, { headers: { origin: allowed.origin } });
    const exposed = (download.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(["content-disposition", "retry-after", "ratelimit-remaining", "x-request-id"]));
  });
});

describe("ZERO_CORS_ORIGINS", () => {
  it("takes origins and *, and stops start-up on anything else, naming the variable", () => {
    expect(loadConfig({ ZERO_CORS_ORIGINS: "https://app.example.com, http://localhost:3000" }).corsOrigins).toEqual([
      "https://app.example.com",
      "http://localhost:3000",
    ]);
    expect(loadConfig({ ZERO_CORS_ORIGINS: "*" }).corsOrigins).toEqual(["*"]);
    expect(loadConfig({}).corsOrigins).toEqual([]);
    for (const bad of ["app.example.com", "https://app.example.com/path", "ftp://x.example"]) {
      expect(() => loadConfig({ ZERO_CORS_ORIGINS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ ZERO_CORS_ORIGINS: bad })).toThrow(/ZERO_CORS_ORIGINS/);
    }
  });
});
