import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { CapabilitiesService, type GetCapabilitiesResponseSchema } from "../../gen/zero/v1/capabilities_pb.js";
import type { Config } from "../config.js";
import { APPROVAL_STAGE, OUTCOME_IDS, OUTCOME_STAGES, unavailableOutcomes } from "../outcomes/catalog.js";

export const CHAT_ALIAS = "project-zero";
export const GOAL_MIN_LENGTH = 8;
export const GOAL_MAX_LENGTH = 2000;
export const LIST_LIMIT = 10;
export const SCOPES = ["read", "build", "chat"] as const;
export const SERVICE_VERSION = "0.1.0";

/** Everything a client may know about this deployment; nothing secret. */
export function describeCapabilities(config: Config): MessageInitShape<typeof GetCapabilitiesResponseSchema> {
  const unavailable = unavailableOutcomes(config);
  return {
    service: "project-zero",
    version: SERVICE_VERSION,
    outcomes: OUTCOME_IDS.map((id) => ({
      id,
      available: !unavailable.includes(id),
      stages: OUTCOME_STAGES[id].map(({ id, title }) => ({ id, title })),
      approvalStage: APPROVAL_STAGE,
    })),
    unavailable,
    chat: { model: CHAT_ALIAS, available: config.upstreams.length > 0, streaming: true, scope: "chat" },
    limits: {
      goalMinLength: GOAL_MIN_LENGTH,
      goalMaxLength: GOAL_MAX_LENGTH,
      listLimit: LIST_LIMIT,
      generationLimit: config.generationLimit,
      generationWindowSeconds: config.generationWindowSeconds,
      freePoolDailyRequests: config.freePoolDailyRequests,
    },
    scopes: [...SCOPES],
  };
}

export function capabilitiesService(config: Config): ServiceImpl<typeof CapabilitiesService> {
  const answer = describeCapabilities(config);
  return {
    getCapabilities: () => answer,
  };
}
