import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { afterAll, describe, expect, it } from "vitest";
import { chunkText, completionText } from "../../src/client/zero-client.js";
import { chunk, completion, held, reply, stream } from "../chat/support/fake-upstream.js";
import { useSdkGateway } from "../chat/support/gateway.js";
import { CuttableProxy } from "../support/cuttable-proxy.js";
import { caught, http2Sessions, TRANSPORTS } from "./support.js";

/** The typed client's chat, over each transport, to the service's real router and a fake model provider. */
describe("createZeroClient chat", () => {
  // Upstream timeouts past the heartbeats' test: a model slow to its first chunk for seconds.
  const gateway = useSdkGateway({}, { ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "10000", ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "10000" });
  afterAll(() => {
    for (const session of http2Sessions) session.abort();
  });

  describe.each(TRANSPORTS)("%s", (_name, connect) => {
    it("completes, and reads the answer's text with completionText", async () => {
      gateway.upstream.next(reply(completion("Hello from the model")));
      const answer = await connect(gateway.app.url, gateway.apiKey).chat.complete({ messages: [{ role: "user", content: "Hello" }] });
      expect(completionText(answer)).toBe("Hello from the model");
      expect(answer.model).toBe("project-zero");
      expect(gateway.upstream.requests.at(-1)?.body).toMatchObject({ messages: [{ role: "user", content: "Hello" }] });
    });

    it("streams, and reads each chunk's text with chunkText", async () => {
      gateway.upstream.next(stream([chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ content: "lo" }), chunk({}, "stop")]));
      let text = "";
      for await (const piece of connect(gateway.app.url, gateway.apiKey).chat.stream({ messages: [{ role: "user", content: "Hello" }] }))
        text += chunkText(piece);
      expect(text).toBe("Hello");
    });

    it("a stream kept open by heartbeats while the model is slow fails as unreachable once its connection goes silent", async () => {
      const proxy = await CuttableProxy.start({ host: "127.0.0.1", port: Number(new URL(gateway.app.url).port) });
      const slow = held(stream([chunk({ role: "assistant", content: "" }), chunk({ content: "late" }), chunk({}, "stop")]));
      gateway.upstream.next(slow.behavior);
      try {
        const client = connect(proxy.through(gateway.app.url), gateway.apiKey);
        let text = "";
        let ended = false;
        const streamed = (async () => {
          for await (const piece of client.chat.stream({ messages: [{ role: "user", content: "Hello" }] }, { heartbeatSeconds: 1 })) text += chunkText(piece);
        })().finally(() => (ended = true));
        // Longer than three heartbeats before the first chunk: the heartbeats keep it open.
        await sleep(4000);
        expect(ended).toBe(false);
        proxy.silence();
        slow.release();
        const error = await caught(streamed);
        expect(error).toMatchObject({ type: "unreachable", code: Code.Unavailable, fromServer: false });
        expect(error.message).toMatch(/no word from the service in 3 s/);
        expect(text).toBe("");
      } finally {
        slow.release();
        await proxy.close();
      }
    });
  });
});
