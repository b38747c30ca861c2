import { EventEmitter, getEventListeners } from "node:events";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CapabilitiesService, GetCapabilitiesRequestSchema } from "../../gen/zero/v1/capabilities_pb.js";
import { bindService, createRestRpc } from "../../src/server/rpc-pipeline.js";
import type { RestExchange } from "../../src/server/rest.js";

/** Just enough of a Node request for the pipeline: headers, a method, and a `close` event. */
function exchange(): RestExchange {
  const req = Object.assign(new EventEmitter(), { method: "GET", headers: { "x-test": "1" } });
  return { req, res: {}, url: new URL("http://localhost/api/capabilities") } as unknown as RestExchange;
}

describe("REST's way into the services", () => {
  it("runs the same interceptors around the service function, and leaves nothing on the shutdown signal", async () => {
    const shutdown = new AbortController();
    const seen: string[] = [];
    const rpc = createRestRpc({
      bindings: [bindService(CapabilitiesService, { getCapabilities: (_, context) => ({ service: `signal aborted: ${context.signal.aborted}` }) })],
      authenticator: { authenticate: async () => ({ accountId: "acc_1", via: "api_key", scopes: [], credentialId: "key_1" }) },
      interceptors: [
        (next) => async (request) => {
          seen.push(`${request.method.name} ${request.header.get("x-test")}`);
          return next(request);
        },
      ],
      shutdownSignal: shutdown.signal,
    });
    for (let i = 0; i < 50; i++) {
      const { message } = await rpc.call(exchange(), CapabilitiesService.method.getCapabilities, () => create(GetCapabilitiesRequestSchema));
      expect(message.service).toBe("signal aborted: false");
    }
    expect(seen).toHaveLength(50);
    expect(seen[0]).toBe("GetCapabilities 1");
    // Each call's context let go of the process-wide signal when it ended: no listener piles up per request.
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  });
});
