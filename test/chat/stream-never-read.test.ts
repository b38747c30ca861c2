import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountDailyCap } from "../../src/chat/account-daily-cap.js";
import { ChatRouter } from "../../src/chat/chat-router.js";
import { FreePool } from "../../src/chat/free-pool.js";
import { UpstreamClient } from "../../src/chat/upstream-client.js";
import { ServiceError } from "../../src/server/errors.js";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { FakeUpstream, stream, textChunks } from "./support/fake-upstream.js";
import { startGateway } from "./support/gateway.js";

/**
 * A stream the upstream accepted, whose consumer stops before it reads a
 * chunk (a Responses client that left before the first event was written):
 * what the router took for it, the account's count and the upstream
 * exchange, is given back all the same.
 */
describe("a streamed answer its consumer never reads", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let router: ChatRouter;
  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream], { ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "60000" });
    const { config, store, logger } = app;
    router = new ChatRouter({
      upstreams: new UpstreamClient(config.upstreams, config.upstreamTimeouts, logger),
      pool: new FreePool({ db: store.db, capacity: 100, logger }),
      accountCap: new AccountDailyCap(store.db, 1),
    });
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  it("ends the upstream exchange and settles the account's count when it is given up before its first read", async () => {
    const { accountId } = await createAccountWithKey(app, ["chat"]);
    // The head at once, the first chunk, then nothing: an answer that would hold the exchange open for good.
    upstream.next(stream(textChunks(["one", "two"]), { hangAfter: 1 }));
    const chunks = await router.stream({ model: "project-zero", messages: [{ role: "user", content: "hi" }], stream: true }, { accountId, fromClient: true });
    await chunks.return(undefined);
    await upstream.requests[0]!.aborted;

    // The one request of the day was served (its consumer left): the next is refused as the day's, not as still in flight.
    const next = await router
      .complete({ model: "project-zero", messages: [{ role: "user", content: "again" }] }, { accountId, fromClient: true })
      .catch((e: unknown) => e);
    expect(next).toBeInstanceOf(ServiceError);
    expect((next as ServiceError).detail.message).not.toContain("still being answered");
    expect((next as ServiceError).type).toBe("rate_limited");
  }, 15_000);
});
