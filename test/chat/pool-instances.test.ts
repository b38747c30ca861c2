import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { FakeUpstream } from "./support/fake-upstream.js";
import { postChat, readSse, startGateway } from "./support/gateway.js";

const CAPACITY = 25;

// Several instances share only a real server.
describe.runIf(onRealPostgres)("the free pool across two instances", () => {
  let upstream: FakeUpstream;
  let databaseUrl: string;
  let a: TestApp;
  let b: TestApp;
  let apiKey: string;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    databaseUrl = (await createTestDatabase())!;
    const env = { ZERO_FREE_POOL_DAILY_REQUESTS: String(CAPACITY) };
    a = await startGateway([upstream], env, databaseUrl);
    b = await startGateway([upstream], env, databaseUrl);
    ({ apiKey } = await createAccountWithKey(a, ["chat"]));
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await upstream?.close();
  });

  it("concurrent requests to both never serve more than the capacity; the rest are refused as exhausted", async () => {
    const body = { model: "project-zero", messages: [{ role: "user", content: "hi" }] };
    const responses = await Promise.all(
      Array.from({ length: 90 }, async (_, i) => {
        const app = i % 2 === 0 ? a : b;
        // A third of them streaming: the pool is the same for both kinds.
        if (i % 3 === 0) {
          const events = await readSse(await postChat(app, apiKey, { ...body, stream: true }));
          if (events.some((e) => e.includes("zero_capacity_unavailable"))) return 429;
          return events.some((e) => e.includes('"error"')) ? 500 : 200;
        }
        const response = await postChat(app, apiKey, body);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    const served = responses.filter((s) => s === 200).length;
    expect(responses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(served).toBeLessThanOrEqual(CAPACITY);
    expect(upstream.requests.length).toBe(served);
    // Both instances drew on the pool, and the spare units found their way to whoever needed them.
    expect(served).toBeGreaterThanOrEqual(CAPACITY - 2);

    // Once both have stopped (giving back what they held), the shared count is exactly what was served.
    await a.close();
    await b.close();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ granted: number }>("select granted from chat_free_pool");
      expect(rows).toHaveLength(1);
      expect(rows[0]!.granted).toBe(served);
    } finally {
      await client.end();
    }
  });
});
