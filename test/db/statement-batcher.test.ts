import { describe, expect, it } from "vitest";
import { StatementBatcher } from "../../src/db/statement-batcher.js";

/** A write that answers each item doubled, after the test lets it finish. */
function recordingWrite() {
  const statements: number[][] = [];
  const finish: (() => void)[] = [];
  const write = (items: number[]) => {
    statements.push(items);
    return new Promise<number[]>((resolve, reject) => {
      finish.push(() => (items.includes(13) ? reject(new Error("unlucky statement")) : resolve(items.map((n) => n * 2))));
    });
  };
  return { statements, finish, write };
}

describe("group commit", () => {
  it("sends a lone item at once, and what arrives meanwhile as one statement, answering each in order", async () => {
    const { statements, finish, write } = recordingWrite();
    const batcher = new StatementBatcher(write, { maxInFlight: 1 });
    const results = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    expect(statements).toEqual([[1]]);
    finish.shift()!();
    expect(await results[0]).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(statements).toEqual([[1], [2, 3, 4, 5]]);
    finish.shift()!();
    expect(await Promise.all(results)).toEqual([2, 4, 6, 8, 10]);
    expect(batcher.statements).toBe(2);
  });

  it("fails only the items of a failed statement", async () => {
    const { statements, finish, write } = recordingWrite();
    const batcher = new StatementBatcher(write, { maxInFlight: 1, maxBatch: 2 });
    const results = [10, 13, 14, 20, 21].map((n) => batcher.submit(n).then(String, (error: Error) => error.message));
    while (finish.length > 0 || statements.length < 3) {
      finish.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(statements).toEqual([[10], [13, 14], [20, 21]]);
    expect(await Promise.all(results)).toEqual(["20", "unlucky statement", "unlucky statement", "40", "42"]);
  });

  it("runs up to maxInFlight statements at once before it starts to wait", () => {
    const { statements, write } = recordingWrite();
    const batcher = new StatementBatcher(write, { maxInFlight: 3 });
    for (const n of [1, 2, 3, 4, 5]) void batcher.submit(n);
    expect(statements).toEqual([[1], [2], [3]]);
  });

  it("tells `observe` of each statement once it is answered or failed: the items it carried and the time it took", async () => {
    const { finish, write } = recordingWrite();
    const observed: { items: number; seconds: number }[] = [];
    const batcher = new StatementBatcher(write, { maxInFlight: 1, observe: (items, seconds) => observed.push({ items, seconds }) });
    const results = [1, 13, 14].map((n) => batcher.submit(n).catch(() => "failed"));
    expect(observed).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    finish.shift()!();
    await results[0];
    await new Promise((resolve) => setImmediate(resolve));
    expect(observed.map((o) => o.items)).toEqual([1]);
    expect(observed[0]!.seconds).toBeGreaterThanOrEqual(0.004);
    finish.shift()!();
    expect(await Promise.all(results)).toEqual([2, "failed", "failed"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(observed.map((o) => o.items)).toEqual([1, 2]);
  });
});
