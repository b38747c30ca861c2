import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { AccountDailyCap } from "./account-daily-cap.js";
import type { AppPart } from "../server/app-part.js";
import { bindService } from "../server/rpc-pipeline.js";
import type { Config } from "../config.js";
import type { Store } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import type { Authenticator } from "../server/access.js";
import { chatRoutes } from "./chat-rest.js";
import { embeddingsRoutes } from "./embeddings-rest.js";
import { ChatRouter } from "./chat-router.js";
import type { ChatCompleter } from "./chat-types.js";
import { chatService } from "./chat-service.js";
import { groupCommitObserver, type Metrics } from "../observability/metrics.js";
import type { Tracing } from "../observability/tracing.js";
import { FreePool } from "./free-pool.js";
import { ToolTurnMemory } from "./tool-turn-memory.js";
import { IdempotencyStore } from "../server/idempotency.js";
import { hourlySweep } from "../server/hourly-sweep.js";
import { ResponseStore } from "./responses/response-store.js";
import { ResponsesGateway } from "./responses/responses-gateway.js";
import { responsesRoutes } from "./responses/responses-rest.js";
import { UpstreamClient } from "./upstream-client.js";

export interface ChatPartDeps {
  config: Config;
  store: Store;
  logger: Logger;
  authenticator: Authenticator;
  metrics: Metrics;
  tracing?: Tracing;
}

/** The chat capability as the app mounts it, plus the completer other capabilities draw on. */
export interface ChatPart extends AppPart {
  /** The same router and pool as the public route, for the stage writers. */
  chat: ChatCompleter;
}

/**
 * The OpenAI-compatible gateway: ChatService over RPC; chat completions, the
 * Responses API, embeddings and `/v1/models` over REST; and the background
 * work (the free pool's give-back, the sweeps of idempotency keys and tool turns).
 */
export function chatPart(deps: ChatPartDeps): ChatPart {
  const { config, store, logger } = deps;
  const log = logger.child({ component: "chat" });
  const upstreams = new UpstreamClient(config.upstreams, config.upstreamTimeouts, log, deps.metrics, deps.tracing);
  deps.metrics.onScrape(async () => {
    const day = new Date().toISOString().slice(0, 10);
    const row = await store.db.selectFrom("chat_free_pool").select("granted").where("day", "=", day).executeTakeFirst();
    const granted = Number(row?.granted ?? 0);
    deps.metrics.poolUnitsUsed.set(granted);
    deps.metrics.poolUnitsLeft.set(Math.max(0, config.freePoolDailyRequests - granted));
  });
  const pool = new FreePool({
    db: store.db,
    capacity: config.freePoolDailyRequests,
    logger: log,
    // Several instances only share a real server; an embedded database has one.
    listen: store.kind === "postgres" ? (channel, onPayload) => store.listen(channel, onPayload) : undefined,
  });
  const idempotency = new IdempotencyStore(store.db);
  const responses = new ResponseStore(store.db, groupCommitObserver(deps.metrics, "responses"));
  const accountCap = config.chatDailyRequestsPerAccount === undefined ? undefined : new AccountDailyCap(store.db, config.chatDailyRequestsPerAccount);
  const toolTurns = new ToolTurnMemory(store.db, log);
  const router = new ChatRouter({ upstreams, pool, accountCap, toolTurns });
  const responsesGateway = new ResponsesGateway({ router, idempotency, responses });
  const sweeper = hourlySweep(log, "idempotency keys, stored responses, kept tool turns and past days' counts", [
    () => idempotency.sweep(),
    () => responses.sweep(),
    () => toolTurns.sweep(),
    () => pool.sweep(),
    ...(accountCap ? [() => accountCap.sweep()] : []),
  ]);
  return {
    chat: router,
    // Answers uncompressed: for JSON clients each answer's JSON is put in place of the message's own after
    // Connect serializes it (jsonAnswersKey), which a compressed envelope would not allow. Chat answers are
    // small. Compressed requests are still read.
    services: [bindService(ChatService, chatService({ router, idempotency, responses: responsesGateway }), { compressMinBytes: Number.MAX_SAFE_INTEGER })],
    routes: (rest) => {
      chatRoutes(rest, { router, idempotency, authenticator: deps.authenticator });
      responsesRoutes(rest, { gateway: responsesGateway, authenticator: deps.authenticator });
      embeddingsRoutes(rest, { router, idempotency, authenticator: deps.authenticator });
    },
    async start() {
      await pool.start();
      sweeper.start();
    },
    async stop() {
      sweeper.stop();
      await pool.stop();
      await upstreams.close();
    },
  };
}
