import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { runCli, startCli } from "../support/cli.js";

/**
 * An OpenAI-compatible upstream that streams its answer in SSE and holds the
 * rest of it until the test says so, so the test can see the first tokens
 * reach the terminal before the answer is complete.
 */
async function startFakeUpstream() {
  const requests: Record<string, unknown>[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "fake-model",
      choices: [{ index: 0, delta, finish_reason: finish }],
    })}\n\n`;
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (text: string) => (body += text));
    req.on("end", async () => {
      const request = JSON.parse(body) as { messages: { content: string }[] };
      requests.push(request as unknown as Record<string, unknown>);
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      if (request.messages.at(-1)?.content === "Clear my screen") {
        // A model's answer with terminal control in it.
        res.write(chunk({ content: "\u001b[2J\u001b]0;owned\u0007cleared\nline two\tend" }));
        res.write(chunk({}, "stop"));
        res.end("data: [DONE]\n\n");
        return;
      }
      res.write(chunk({ role: "assistant", content: "" }));
      res.write(chunk({ content: "Hello" }));
      res.write(chunk({ content: " from" }));
      await released;
      res.write(chunk({ content: " the fake upstream." }));
      res.write(chunk({}, "stop"));
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    release: () => release(),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("project-zero chat", () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let app: TestApp;
  let env: Record<string, string>;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    app = await startTestApp({
      env: { ZERO_UPSTREAMS: JSON.stringify([{ name: "fake", baseUrl: upstream.url, apiKey: "sk-fake-upstream", model: "fake-model" }]) },
    });
    env = { ZERO_URL: app.url, ZERO_API_KEY: (await createAccountWithKey(app, ["chat"])).apiKey };
  });
  afterAll(async () => {
    upstream.release();
    await app.close();
    await upstream.close();
  });

  it("prints tokens as they arrive, before the answer is complete", async () => {
    const run = startCli(["chat", "Say hello", "--system", "Be brief"], env);
    run.child.stdin.end();
    // The upstream is holding the rest: what is on stdout now came through live.
    await run.waitFor("Hello from");
    expect(run.stdout).toBe("Hello from");
    upstream.release();
    expect(await run.exit).toBe(0);
    expect(run.stdout).toBe("Hello from the fake upstream.\n");
    expect(run.stderr).toBe("");

    const sent = upstream.requests.at(-1)!;
    expect(sent).toMatchObject({
      model: "fake-model",
      stream: true,
      messages: [
        { role: "system", content: "Be brief" },
        { role: "user", content: "Say hello" },
      ],
    });
  });

  it("shows a model's words and never obeys them as terminal control, keeping its line breaks", async () => {
    const { code, stdout } = await runCli(["chat", "Clear my screen"], env);
    expect(code).toBe(0);
    expect(stdout).toBe("\uFFFD[2J\uFFFD]0;owned\uFFFDcleared\nline two\tend\n");
  });

  it("with --json prints each chunk as OpenAI's JSON, naming project-zero as the model", async () => {
    const { code, stdout } = await runCli(["chat", "Say hello", "--json"], env);
    expect(code).toBe(0);
    const chunks = stdout
      .trim()
      .split("\n")
      .map((text) => JSON.parse(text) as { model: string; object: string; choices: { delta: { content?: string } }[] });
    expect(chunks.every((c) => c.model === "project-zero" && c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Hello from the fake upstream.");
  });

  it("refuses a key without the chat scope with exit 3", async () => {
    const buildOnly = await createAccountWithKey(app, ["build"]);
    const { code, stdout, stderr } = await runCli(["chat", "Say hello"], { ...env, ZERO_API_KEY: buildOnly.apiKey });
    expect(code).toBe(3);
    expect(stdout).toBe("");
    expect(stderr).toMatch(
      /^project-zero: the API key may not do this \(403 \w+\): this API key lacks the `chat` scope; make a key that has it in the Console \(http:\/\/127\.0\.0\.1:\d+\/console\) and set ZERO_API_KEY\n$/,
    );
  });
});

describe("project-zero chat on a service with no upstream", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("says no upstream is configured, with exit 5, and does not suggest that waiting helps", async () => {
    const env = { ZERO_URL: app.url, ZERO_API_KEY: (await createAccountWithKey(app, ["chat"])).apiKey };
    const { code, stdout, stderr } = await runCli(["chat", "Say hello"], env);
    expect(code).toBe(5);
    expect(stdout).toBe("");
    expect(stderr).toBe("project-zero: the service is unavailable (503): chat is not available here: no upstream is configured\n");
  });
});
