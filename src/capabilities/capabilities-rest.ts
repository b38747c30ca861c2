import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { CapabilitiesService, GetCapabilitiesRequestSchema } from "../../gen/zero/v1/capabilities_pb.js";
import type { Authenticator } from "../server/access.js";
import { restJson } from "../server/json.js";
import { callUnary, sendJson, type RestRouter } from "../server/rest.js";

/** `GET /api/capabilities`: the REST view of CapabilitiesService.GetCapabilities. */
export function capabilitiesRoutes(
  router: RestRouter,
  impl: ServiceImpl<typeof CapabilitiesService>,
  authenticator: Authenticator,
): void {
  const method = CapabilitiesService.method.getCapabilities;
  router.add("GET", "/api/capabilities", async (exchange) => {
    const { response } = await callUnary(exchange, authenticator, method, impl.getCapabilities, create(GetCapabilitiesRequestSchema));
    sendJson(exchange.res, 200, restJson(method.output, response));
  });
}
