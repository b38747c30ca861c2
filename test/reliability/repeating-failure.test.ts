import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { RepeatingFailure } from "../../src/observability/repeating-failure.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, log: createLogger("info", sink) };
}

/** A step that fails on every poll while the database is away: an outage is a few lines, not a stack trace per poll. */
describe("RepeatingFailure", () => {
  it("logs the first failure with its error, then a count at most once per interval, then the recovery", async () => {
    const { lines, log } = capture();
    let now = 0;
    const step = new RepeatingFailure(log, "claiming stages", { everyMs: 30_000, now: () => now });
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    // Two polls a second for a minute and a half.
    for (let i = 0; i < 180; i++, now += 500) step.failed(refused);
    step.succeeded();
    step.succeeded();
    await new Promise((resolve) => setImmediate(resolve));
    // At 0 s the error itself; at 30 s and 60 s a count; at the end the recovery.
    expect(lines.map((l) => l.msg)).toEqual([
      "claiming stages failed",
      "claiming stages still failing",
      "claiming stages still failing",
      "claiming stages works again",
    ]);
    expect(lines[0]!.err).toMatchObject({ message: "connect ECONNREFUSED 127.0.0.1:5432" });
    expect(lines[1]).toMatchObject({ failures: 60, error: "connect ECONNREFUSED 127.0.0.1:5432" });
    expect(lines[1]).not.toHaveProperty("err");
    expect(lines[2]).toMatchObject({ failures: 60 });
    expect(lines[3]).toMatchObject({ level: 30, failures: 180 });
  });

  it("starts over after a recovery: the next outage's first failure is logged whole", async () => {
    const { lines, log } = capture();
    const step = new RepeatingFailure(log, "renewing stage leases", { now: () => 0 });
    step.failed(new Error("first outage"));
    step.succeeded();
    step.failed(new Error("second outage"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => [l.msg, (l.err as { message?: string } | undefined)?.message])).toEqual([
      ["renewing stage leases failed", "first outage"],
      ["renewing stage leases works again", undefined],
      ["renewing stage leases failed", "second outage"],
    ]);
  });
});
