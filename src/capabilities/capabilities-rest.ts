import { create } from "@bufbuild/protobuf";
import { CapabilitiesService, GetCapabilitiesRequestSchema } from "../../gen/zero/v1/capabilities_pb.js";
import { restJson } from "../server/json.js";
import { sendJson, type RestRouter } from "../server/rest.js";
import type { RestRpc } from "../server/rpc-pipeline.js";

/** `GET /api/capabilities`: the REST view of CapabilitiesService.GetCapabilities. */
export function capabilitiesRoutes(router: RestRouter, rpc: RestRpc): void {
  const method = CapabilitiesService.method.getCapabilities;
  router.add("GET", "/api/capabilities", async (exchange) => {
    const { message } = await rpc.call(exchange, method, () => create(GetCapabilitiesRequestSchema));
    sendJson(exchange.res, 200, restJson(method.output, message));
  });
}
