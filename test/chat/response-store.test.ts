import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResponseStore } from "../../src/chat/responses/response-store.js";
import { startTestApp, type TestApp } from "../support/app.js";

describe("stored responses written together", () => {
  let app: TestApp;
  let responses: ResponseStore;
  const accountId = `acc_resp_${Date.now()}`;
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0" } });
    await app.store.db
      .insertInto("accounts")
      .values({ id: accountId, email: `${accountId}@example.test`, password_hash: "x" })
      .execute();
    responses = new ResponseStore(app.store.db);
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
});
