import { afterAll, describe, expect, it } from "vitest";
import { chunkText, completionText } from "../../src/client/zero-client.js";
import { chunk, completion, reply, stream } from "../chat/support/fake-upstream.js";
import { useSdkGateway } from "../chat/support/gateway.js";
import { http2Sessions, TRANSPORTS } from "./support.js";

/** The typed client's chat, over each transport, to the service's real router and a fake model provider. */
describe("createZeroClient chat", () => {
  const gateway = useSdkGateway();
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
  });
});
