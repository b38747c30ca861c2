import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { instantWork } from "../support/stage-work.js";
import { answer, fail, FakeUpstream, stream, textChunks } from "../chat/support/fake-upstream.js";
import { postChat, readSse, upstreamsEnv } from "../chat/support/gateway.js";
import { waitForPlan } from "../support/executions.js";
import { unusedPort } from "../support/ports.js";
import { writerModel } from "../outcomes/support/model-answers.js";

interface ExportedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  /** OTLP's status code: 2 is an error. */
  status?: { code?: number };
}

/** A real OTLP/HTTP collector stand-in: it records what the service exports. */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; resources: string[]; close(): Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const resources: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans: { resource: unknown; scopeSpans: { spans: ExportedSpan[] }[] }[];
        };
        for (const rs of body.resourceSpans) {
          resources.push(JSON.stringify(rs.resource));
          for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    resources,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const attribute = (span: ExportedSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};

describe("OpenTelemetry tracing when an OTLP endpoint is configured", () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let app: TestApp;
  beforeAll(async () => {
    collector = await startCollector();
    app = await startTestApp({ stageWork: instantWork(), env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } });
  });
  afterAll(() => collector.close());

  it("exports a server span per request and a span per stage run, flushed at shutdown", async () => {
    const { apiKey } = await createAccountWithKey(app, ["build", "read"]);
    const res = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ goal: "A website for a bicycle repair cafe" }),
    });
    expect(res.status).toBe(202);
    const { plan } = (await res.json()) as { plan: { id: string } };
    // Built and at the gate: every stage before it has run, and ended its span.
    await vi.waitFor(
      async () => {
        const read = await fetch(`${app.url}/api/execution?id=${plan.id}`, { headers: { authorization: `Bearer ${apiKey}` } });
        expect(((await read.json()) as { plan: { status: string } }).plan.status).toBe("awaiting_approval");
      },
      { timeout: 10_000, interval: 50 },
    );
    await new Promise((r) => setTimeout(r, 300));
    await app.close();

    const request = collector.spans.find((s) => s.name === "POST /api/execution");
    expect(request, collector.spans.map((s) => s.name).join(", ")).toBeDefined();
    expect(attribute(request!, "http.response.status_code")).toBe(202);
    const stages = collector.spans.filter((s) => s.name.startsWith("stage ")).map((s) => s.name);
    expect(stages).toContain("stage understand");
    expect(collector.resources.some((r) => r.includes("project-zero"))).toBe(true);
    // Nothing secret travels in spans.
    expect(JSON.stringify(collector.spans)).not.toContain(apiKey);
  });
});

describe("trace context", () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let failing: FakeUpstream;
  let serving: FakeUpstream;
  let app: TestApp;
  beforeAll(async () => {
    [collector, failing, serving] = await Promise.all([startCollector(), FakeUpstream.start(), FakeUpstream.start()]);
    failing.otherwise(fail(500));
    serving.otherwise(writerModel);
    app = await startTestApp({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        ZERO_UPSTREAMS: upstreamsEnv([failing.url, serving.url]),
        ZERO_OFFLINE_WRITER: "off",
      },
    });
  });
  afterAll(async () => {
    await app.close();
    await Promise.all([collector.close(), failing.close(), serving.close()]);
  });

  it("puts a request's upstream attempts under its span, in the caller's trace; and each stage's writer calls under the stage", async () => {
    const { apiKey } = await createAccountWithKey(app, ["build", "read", "chat"]);
    serving.next(answer("hello"));
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const chat = await postChat(app, apiKey, { model: "project-zero", messages: [{ role: "user", content: "hi" }] }, { traceparent });
    expect(chat.status).toBe(200);
    const created = await fetch(`${app.url}/api/execution`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ goal: "Sea kayaking trips for beginners in Cornwall" }),
    });
    const planId = ((await created.json()) as { plan: { id: string } }).plan.id;
    await waitForPlan(app.url, { apiKey }, planId, (p) => p.status === "awaiting_approval", 30_000);
    await app.close();

    const request = collector.spans.find((s) => s.name === "POST /v1/chat/completions")!;
    expect(request.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(request.parentSpanId).toBe("b7ad6b7169203331");
    const attempts = collector.spans.filter((s) => s.name === "upstream chat completion" && s.parentSpanId === request.spanId);
    // The failing upstream, then the one that served: both the request's, in its trace.
    expect(attempts.map((s) => attribute(s, "zero.result"))).toEqual(["500", "200"]);
    expect(attempts.every((s) => s.traceId === request.traceId)).toBe(true);

    const stages = collector.spans.filter((s) => s.name.startsWith("stage ") && attribute(s, "zero.plan_id") === planId);
    expect(stages.map((s) => s.name)).toEqual(expect.arrayContaining(["stage understand", "stage outline", "stage write"]));
    for (const stage of stages) expect(stage.parentSpanId || undefined, stage.name).toBeUndefined();
    const understand = stages.find((s) => s.name === "stage understand")!;
    const writerCalls = collector.spans.filter((s) => s.name === "upstream chat completion" && s.parentSpanId === understand.spanId);
    expect(writerCalls.length).toBeGreaterThan(0);
    expect(writerCalls.every((s) => s.traceId === understand.traceId)).toBe(true);
  }, 60_000);
});

describe("an upstream answer that fails after it began", () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let upstream: FakeUpstream;
  let app: TestApp;
  beforeAll(async () => {
    [collector, upstream] = await Promise.all([startCollector(), FakeUpstream.start()]);
    app = await startTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, ZERO_UPSTREAMS: upstreamsEnv([upstream.url]) } });
  });
  afterAll(async () => {
    await app.close();
    await Promise.all([collector.close(), upstream.close()]);
  });

  it("fails its attempt's span: a stream dropped or ended mid-answer, a malformed chunk; a whole stream's span is OK", async () => {
    const { apiKey } = await createAccountWithKey(app, ["chat"]);
    const messages = [{ role: "user", content: "hi" }];
    const streamed = async (traceId: string) => {
      const traceparent = `00-${traceId}-b7ad6b7169203331-01`;
      await readSse(await postChat(app, apiKey, { model: "project-zero", messages, stream: true }, { traceparent }));
    };
    const traces = { dropped: "1".repeat(32), cut: "2".repeat(32), malformed: "3".repeat(32), whole: "4".repeat(32) };
    upstream.next(stream(textChunks(["one", "two", "three"]), { dropAfter: 2 }));
    await streamed(traces.dropped);
    upstream.next(stream(textChunks(["cut"]).slice(0, -2), { done: false }));
    await streamed(traces.cut);
    upstream.next(async ({ res }) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end('data: {"choices": [\n\ndata: [DONE]\n\n');
    });
    await streamed(traces.malformed);
    upstream.next(stream(textChunks(["whole"])));
    await streamed(traces.whole);
    await app.close();

    const attemptOf = (traceId: string) => {
      const attempts = collector.spans.filter((s) => s.name === "upstream chat completion" && s.traceId === traceId);
      expect(attempts).toHaveLength(1);
      return attempts[0]!;
    };
    for (const failed of [traces.dropped, traces.cut, traces.malformed]) {
      const attempt = attemptOf(failed);
      expect(attribute(attempt, "zero.result"), failed).toBe("200");
      expect(attempt.status?.code, failed).toBe(2);
      expect(attribute(attempt, "error.type"), failed).toBe("upstream_error");
    }
    expect(attemptOf(traces.whole).status?.code ?? 0).not.toBe(2);
  }, 30_000);
});

// Found operating the service: with the collector down, spans were dropped without a line in the log.
describe("an OTLP endpoint that does not answer", () => {
  it("is said in the log at warn, once, not once per export", async () => {
    const app = await startTestApp({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await unusedPort()}` } });
    const said = () => app.logs.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((line) => line.msg.includes("exporting traces"));
    try {
      // A span a second for a while: an export a second, each refused (an export gives up after its retries, at most 3 s).
      const requests = setInterval(() => void fetch(`${app.url}/healthz`).catch(() => {}), 1000);
      try {
        await vi.waitFor(() => expect(said().length).toBeGreaterThan(0), { timeout: 20_000, interval: 100 });
        await new Promise((resolve) => setTimeout(resolve, 5000));
      } finally {
        clearInterval(requests);
      }
      expect(said(), app.logs.join("\n")).toEqual([expect.objectContaining({ level: 40, msg: "exporting traces failed" })]);
    } finally {
      await app.close();
    }
  }, 45_000);
});
