import { CapabilitiesService } from "../../gen/zero/v1/capabilities_pb.js";
import type { Config } from "../config.js";
import type { AppPart } from "../server/app-part.js";
import { bindService } from "../server/rpc-pipeline.js";
import { capabilitiesRoutes } from "./capabilities-rest.js";
import { capabilitiesService } from "./capabilities-service.js";

/** Capabilities: what this deployment offers, over RPC and `GET /api/capabilities`. */
export function capabilitiesPart(config: Config): AppPart {
  return {
    services: [bindService(CapabilitiesService, capabilitiesService(config))],
    routes: capabilitiesRoutes,
  };
}
