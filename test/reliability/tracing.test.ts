import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { instantWork } from "../support/stage-work.js";

interface ExportedSpan {
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
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
    for (let i = 0; i < 50 && !app.logs.some((l) => l.includes('"stage":"build"')); i++) await new Promise((r) => setTimeout(r, 50));
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
