import fc from "fast-check";
import type { QueryResult, UnknownRow } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResponseStore } from "../../src/chat/responses/response-store.js";
import { type InputItem, type InputItemList, type InputItemsQuery, inputItemsOf } from "../../src/chat/responses/responses-input-items.js";
import { startTestApp, type TestApp } from "../support/app.js";

/**
 * OpenAI's paging of a response's input items, as the service did it in
 * JavaScript over the whole list: the model the store's SQL paging must
 * match. In asked order; after `after` and before `before`; at most `limit`,
 * the ones nearest `before` when it is given alone.
 */
function modelPage(items: readonly InputItem[], query: InputItemsQuery): InputItemList | { unknown: "after" | "before" } {
  const ordered = query.order === "asc" ? items : [...items].reverse();
  const at = (id: string | undefined) => (id === undefined ? undefined : ordered.findIndex((item) => item.id === id));
  const [after, before] = [at(query.after), at(query.before)];
  if (after === -1) return { unknown: "after" };
  if (before === -1) return { unknown: "before" };
  const from = after === undefined ? 0 : after + 1;
  const window = ordered.slice(from, Math.max(from, before ?? ordered.length));
  const fromEnd = query.before !== undefined && query.after === undefined;
  const data = fromEnd ? window.slice(Math.max(0, window.length - query.limit)) : window.slice(0, query.limit);
  return { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: window.length > data.length };
}

describe("stored responses", () => {
  let app: TestApp;
  let responses: ResponseStore;
  const accountId = `acc_resp_${Date.now()}`;
  /** Bytes of every row the store's statements answered, counted where the rows come out of the database. */
  let bytesRead = 0;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0" } });
    await app.store.db
      .insertInto("accounts")
      .values({ id: accountId, email: `${accountId}@example.test`, password_hash: "x" })
      .execute();
    const counted = app.store.db.withPlugin({
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }): Promise<QueryResult<UnknownRow>> => {
        bytesRead += JSON.stringify(result.rows).length;
        return result;
      },
    });
    responses = new ResponseStore(counted);
  });
  afterAll(() => app.close());

  it("keeps every one of many concurrent saves, each readable and continuable once its save resolved", async () => {
    const ids = Array.from({ length: 48 }, (_, i) => `resp_batch_${i}_${Date.now()}`);
    await Promise.all(
      ids.map((id, i) =>
        responses.save(accountId, id, JSON.stringify({ id, n: i }), { previousId: undefined, messages: [{ role: "user", content: `question ${i}` }] }),
      ),
    );
    for (const [i, id] of ids.entries()) {
      expect(JSON.parse((await responses.response(accountId, id))!)).toEqual({ id, n: i });
      expect(await responses.messages(accountId, id, 1 << 20)).toEqual([{ role: "user", content: `question ${i}` }]);
    }
    expect(await responses.response("acc_someone_else", ids[0]!)).toBeUndefined();
  });

  async function stored(input: unknown): Promise<{ id: string; items: InputItem[] }> {
    const id = `resp_pages${Math.random().toString(16).slice(2)}`;
    const items = inputItemsOf(input, id);
    await responses.save(accountId, id, "{}", { previousId: undefined, messages: [] }, items);
    return { id, items };
  }

  it("pages as OpenAI does, for any order, limit, after and before", async () => {
    const lists = await Promise.all(
      [0, 1, 2, 5, 9].map((n) =>
        stored(Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `turn ${i}`, ...(i === 3 ? { id: "msg_sent" } : {}) }))),
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...lists),
        fc.constantFrom<"asc" | "desc">("asc", "desc"),
        fc.integer({ min: 1, max: 6 }),
        fc.nat(12),
        fc.nat(12),
        fc.constantFrom("none", "after", "before", "both", "unknown after", "unknown before"),
        async ({ id, items }, order, limit, a, b, bounds) => {
          const idAt = (n: number) => items[n % Math.max(1, items.length)]?.id;
          const after = bounds === "after" || bounds === "both" ? idAt(a) : bounds === "unknown after" ? "msg_nowhere" : undefined;
          const before = bounds === "before" || bounds === "both" ? idAt(b) : bounds === "unknown before" ? "msg_nowhere" : undefined;
          const query = { order, limit, after, before };
          expect(await responses.inputItemsPage(accountId, id, query)).toEqual(modelPage(items, query));
        },
      ),
      { numRuns: 150 },
    );
    expect(await responses.inputItemsPage("acc_someone_else", lists[1]!.id, { order: "desc", limit: 20, after: undefined, before: undefined })).toBeUndefined();
  });

  // Found by a review: a page read, parsed and sliced the whole stored input in Node, ~85 ms of the event loop for a 14 MB one.
  it("reads only the page of a large input from the database", async () => {
    const big = await stored(Array.from({ length: 2000 }, (_, i) => ({ role: "user", content: `${i} ${"x".repeat(2000)}` })));
    bytesRead = 0;
    const page = await responses.inputItemsPage(accountId, big.id, { order: "asc", limit: 3, after: big.items[10]!.id, before: undefined });
    expect(page).toEqual(modelPage(big.items, { order: "asc", limit: 3, after: big.items[10]!.id, before: undefined }));
    // Three items of about 2 KB, against 4 MB stored.
    expect(bytesRead).toBeLessThan(20_000);
  });
});
