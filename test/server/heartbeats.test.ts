import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { heartbeatMs, withHeartbeats } from "../../src/server/heartbeats.js";

const BEAT = "(beat)";

async function* spaced(...steps: [waitMs: number, value: string][]): AsyncGenerator<string> {
  for (const [waitMs, value] of steps) {
    await sleep(waitMs);
    yield value;
  }
}

describe("withHeartbeats", () => {
  it("yields a beat after each quiet spell, the wait for the opening included, and the source's values as they come", async () => {
    const seen: string[] = [];
    const opened = sleep(250).then(() => spaced([0, "a"], [450, "b"]));
    for await (const value of withHeartbeats(opened, 100, () => BEAT)) seen.push(value);
    const a = seen.indexOf("a");
    expect(seen.at(-1)).toBe("b");
    // Timers run late under load: at least two beats in each quiet spell, never more than its length allows.
    for (const quiet of [seen.slice(0, a), seen.slice(a + 1, -1)]) {
      expect(quiet.every((v) => v === BEAT)).toBe(true);
      expect(quiet.length).toBeGreaterThanOrEqual(2);
      expect(quiet.length).toBeLessThanOrEqual(4);
    }
  });

  it("passes the source through untouched with no interval", async () => {
    const seen: string[] = [];
    for await (const value of withHeartbeats(Promise.resolve(spaced([150, "a"], [0, "b"])), 0, () => BEAT)) seen.push(value);
    expect(seen).toEqual(["a", "b"]);
  });

  it("closes a source opened after its reader left, and reads nothing of it", async () => {
    let reads = 0;
    let closed = false;
    const source: AsyncIterable<string> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => ({ value: `read ${++reads}`, done: false }),
        return: async () => {
          closed = true;
          return { value: undefined, done: true };
        },
      }),
    };
    for await (const value of withHeartbeats(
      sleep(100).then(() => source),
      20,
      () => BEAT,
    )) {
      expect(value).toBe(BEAT);
      break;
    }
    await sleep(250);
    expect({ reads, closed }).toEqual({ reads: 0, closed: true });
  });

  it("bounds heartbeat_seconds at 300", () => {
    expect(heartbeatMs(0)).toBe(0);
    expect(heartbeatMs(300)).toBe(300_000);
    expect(() => heartbeatMs(301)).toThrow("heartbeat_seconds must be at most 300");
  });
});
