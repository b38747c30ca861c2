import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LabelledCounter, LabelledHistogram } from "../../src/observability/labelled-metrics.js";

/** Our request-path metrics must scrape exactly as prom-client's own would, for the same updates. */
describe("labelled metrics", () => {
  it("render the same exposition text as prom-client's Counter and Histogram", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const buckets = [0.0005, 0.001, 0.005, 0.01, 1];
    const theirHistogram = new Histogram({ name: "h_seconds", help: "a histogram", labelNames: ["route", "method"], buckets, registers: [theirs] });
    const theirCounter = new Counter({ name: "c_total", help: "a counter", labelNames: ["route", "method", "code"], registers: [theirs] });
    const ourHistogram = new LabelledHistogram({ name: "h_seconds", help: "a histogram", labelNames: ["route", "method"], buckets, registry: ours });
    const ourCounter = new LabelledCounter({ name: "c_total", help: "a counter", labelNames: ["route", "method", "code"], registry: ours });
    for (const value of [0, 0.0001, 0.0005, 0.0007, 0.003, 0.5, 1, 2]) {
      for (const route of ["/v1/chat/completions", 'odd "route"\\']) {
        theirHistogram.observe({ method: "POST", route }, value);
        ourHistogram.observe({ method: "POST", route }, value);
        theirCounter.inc({ route, method: "GET", code: value > 1 ? "500" : "200" });
        ourCounter.inc({ route, method: "GET", code: value > 1 ? "500" : "200" });
      }
    }
    ourCounter.inc({ route: "/x", method: "GET", code: "200" }, 3);
    theirCounter.inc({ route: "/x", method: "GET", code: "200" }, 3);
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('h_seconds_bucket{le="0.001",method="POST",route="/v1/chat/completions"} 4');
    expect(text).toContain('h_seconds_bucket{le="+Inf",method="POST",route="/v1/chat/completions"} 8');
  });

  it("sorts its bucket bounds, so the cumulative counts only grow", async () => {
    const registry = new Registry();
    const histogram = new LabelledHistogram({ name: "h", help: "h", labelNames: ["a"], buckets: [1, 0.1, 0.5], registry });
    for (const value of [0.05, 0.3, 0.7, 5]) histogram.observe({ a: "x" }, value);
    const counts = [...(await registry.metrics()).matchAll(/^h_bucket\{le="([^"]+)",a="x"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    expect(counts).toEqual([
      ["0.1", 1],
      ["0.5", 2],
      ["1", 3],
      ["+Inf", 4],
    ]);
  });

  it("refuses a value that is not a finite number, as prom-client does", () => {
    const histogram = new LabelledHistogram({ name: "h", help: "h", labelNames: ["a"], buckets: [1], registry: new Registry() });
    expect(() => histogram.observe({ a: "x" }, Number.NaN)).toThrow(TypeError);
  });
});
