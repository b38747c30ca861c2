import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CapabilitiesService, GetCapabilitiesResponseSchema } from "../../gen/zero/v1/capabilities_pb.js";
import type { Config } from "../config.js";
import { GOAL_MAX_LENGTH, GOAL_MIN_LENGTH, LIST_LIMIT, SERVICE_VERSION } from "../api/limits.js";
import { CHAT_ALIAS } from "../api/model.js";
import { APPROVAL_STAGE, OUTCOME_IDS, OUTCOME_STAGES } from "../api/outcomes.js";
import { SCOPES } from "../api/scopes.js";
import { unavailableOutcomes } from "../outcomes/availability.js";

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
    chat: {
      model: CHAT_ALIAS,
      available: config.upstreams.length > 0,
      streaming: true,
      scope: "chat",
      endpoints:
        config.upstreams.length === 0
          ? []
          : ["/v1/chat/completions", "/v1/responses", ...(config.upstreams.some((u) => u.embeddingModel) ? ["/v1/embeddings"] : [])],
    },
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
