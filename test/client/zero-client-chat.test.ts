import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkText, completionText } from "../../src/client/zero-client.js";
import { chunk, completion, FakeUpstream, reply, stream } from "../chat/support/fake-upstream.js";
import { startGateway } from "../chat/support/gateway.js";
import { createAccountWithKey } from "../support/accounts.js";
import type { TestApp } from "../support/app.js";
import { http2Sessions, TRANSPORTS } from "./support.js";

/** The typed client's chat, over each transport, to the service's real router and a fake model provider. */
describe("createZeroClient chat", () => {
  let upstream: FakeUpstream;
  let app: TestApp;
  let apiKey: string;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    app = await startGateway([upstream]);
    apiKey = (await createAccountWithKey(app, ["chat"])).apiKey;
  });
  afterAll(async () => {
    for (const session of http2Sessions) session.abort();
    await app.close();
    await upstream.close();
  });

  describe.each(TRANSPORTS)("%s", (_name, connect) => {
    it("completes, and reads the answer's text with completionText", async () => {
      upstream.next(reply(completion("Hello from the model")));
      const answer = await connect(app.url, apiKey).chat.complete({ messages: [{ role: "user", content: "Hello" }] });
      expect(completionText(answer)).toBe("Hello from the model");
      expect(answer.model).toBe("project-zero");
      expect(upstream.requests.at(-1)?.body).toMatchObject({ messages: [{ role: "user", content: "Hello" }] });
    });

    it("streams, and reads each chunk's text with chunkText", async () => {
      upstream.next(stream([chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ content: "lo" }), chunk({}, "stop")]));
      let text = "";
      for await (const piece of connect(app.url, apiKey).chat.stream({ messages: [{ role: "user", content: "Hello" }] })) text += chunkText(piece);
      expect(text).toBe("Hello");
    });
  });
});
