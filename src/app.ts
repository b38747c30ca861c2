import os from "node:os";
import { randomBytes } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { CapabilitiesService } from "../gen/zero/v1/capabilities_pb.js";
import { capabilitiesRoutes } from "./capabilities/capabilities-rest.js";
import { SERVICE_VERSION } from "./api/limits.js";
import { capabilitiesService } from "./capabilities/capabilities-service.js";
import type { Config } from "./config.js";
import { openStore, type Store } from "./db/database.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createApiKeyCache } from "./auth/api-key-cache.js";
import { createAuthenticator } from "./auth/authenticator.js";
import { chatPart } from "./chat/chat-part.js";
import type { StageWorkResolver } from "./engine/stage-work.js";
import { executionsPart } from "./executions/executions-part.js";
import { createArtifactStore, createStageWork, outcomesPart } from "./outcomes/index.js";
import { ConsoleService } from "../gen/zero/v1/console_pb.js";
import { consoleService } from "./console/console-service.js";
import { consoleRoutes } from "./console/console-routes.js";
import type { Authenticator } from "./server/access.js";
import { createHttpHandler } from "./server/http-handler.js";
import { ServiceError } from "./server/errors.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { createTracing } from "./observability/tracing.js";
import { createListener, type RequestListener } from "./server/listener.js";
import { RestRouter, sendError } from "./server/rest.js";
import { withoutTrailingSlashes } from "./strings.js";

/** A running service: one port, one database, its background workers. */
export interface App {
  config: Config;
  store: Store;
  logger: Logger;
  metrics: Metrics;
  /** This instance's id in `service_instances`. */
  instanceId: string;
  /** `http://host:port` as bound (port 0 resolved). */
  url: string;
  port: number;
  /** Graceful: stop accepting, finish in-flight requests (bounded), stop workers, close the database. */
  close(): Promise<void>;
}

export interface AppOptions {
  logger?: Logger;
  /** See StoreOptions.pgliteTemplate. */
  pgliteTemplate?: Blob;
  /** The work of each plan stage. Tests pass instant, slow or failing work; by default the outcomes' own. */
  stageWork?: StageWorkResolver;
}

/**
 * What one capability adds to the server. Each capability folder exports a
 * function that builds its part from explicit dependencies.
 */
export interface AppPart {
  services?: readonly DescService[];
  registerServices?: (router: ConnectRouter) => void;
  registerRoutes?: (router: RestRouter) => void;
  /** Background work started after the port is listening. */
  start?: () => Promise<void> | void;
  /** Stopped after the port stops accepting, before the database closes. */
  stop?: () => Promise<void> | void;
}

/** Builds and starts the whole service. Tests call this to get the real thing on port 0. */
export async function startApp(config: Config, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    logger,
    pgliteTemplate: options.pgliteTemplate,
  });
  const instanceId = `ins_${randomBytes(8).toString("hex")}`;
  await store.db
    .insertInto("service_instances")
    .values({ id: instanceId, hostname: os.hostname(), pid: process.pid, version: SERVICE_VERSION })
    .execute();

  const shutdown = new AbortController();
  const metrics = createMetrics();
  const tracing = config.otlpEndpoint
    ? await createTracing({ endpoint: config.otlpEndpoint, serviceName: config.otelServiceName, instanceId, version: SERVICE_VERSION })
    : undefined;
  // Bind first, so that with PORT=0 the public URL can name the real port.
  let handler: RequestListener | undefined;
  const listener = createListener(
    (req, res) => (handler ? handler(req, res) : sendError(res, new ServiceError("unavailable", "starting up"))),
    {
      tls: config.tlsCertFile && config.tlsKeyFile ? { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile } : undefined,
      headersTimeoutMs: config.headersTimeoutMs,
      requestTimeoutMs: config.requestTimeoutMs,
      http2IdleTimeoutMs: config.http2IdleTimeoutMs,
    },
  );
  let bound: { port: number; host: string };
  try {
    bound = await listener.listen(config.port, config.host);
  } catch (error) {
    await store.close();
    throw error;
  }
  config = withBoundPort(config, bound.port);

  const apiKeys = createApiKeyCache(store, logger);
  const authenticator: Authenticator = createAuthenticator({ db: store.db, config, apiKeys });
  const capabilities = capabilitiesService(config);
  // The chat router is also what the stage writers reach the model through.
  const chat = chatPart({ config, store, logger, authenticator, metrics, tracing });
  const artifacts = createArtifactStore(config);
  const parts: AppPart[] = [
    { start: () => apiKeys.start(), stop: () => apiKeys.stop() },
    {
      services: [CapabilitiesService],
      registerServices: (router) => router.service(CapabilitiesService, capabilities),
      registerRoutes: (router) => capabilitiesRoutes(router, capabilities, authenticator),
    },
    {
      services: [ConsoleService],
      registerServices: (router) => router.service(ConsoleService, consoleService({ db: store.db, config, apiKeys })),
      registerRoutes: (router) => consoleRoutes(router, { publicUrl: config.publicUrl, logger }),
    },
    chat,
    executionsPart({
      config,
      store,
      logger,
      instanceId,
      authenticator,
      metrics,
      tracing,
      stageWork: options.stageWork ?? createStageWork({ config, chat: chat.chat, artifacts, logger: logger.child({ component: "outcomes" }) }),
    }),
    outcomesPart(artifacts),
  ];

  const rest = new RestRouter();
  for (const part of parts) part.registerRoutes?.(rest);
  handler = createHttpHandler({
    logger,
    authenticator,
    services: parts.flatMap((p) => p.services ?? []),
    registerServices: (router) => parts.forEach((p) => p.registerServices?.(router)),
    rest,
    ping: () => store.ping(),
    shutdownSignal: shutdown.signal,
    metrics,
    tracing,
    trustedProxies: config.trustedProxies,
    metricsToken: config.metricsToken,
  });
  for (const part of parts) await part.start?.();
  const scheme = config.tlsCertFile ? "https" : "http";
  const hostForUrl = bound.host.includes(":") ? `[${bound.host}]` : bound.host;
  const url = `${scheme}://${hostForUrl}:${bound.port}`;
  logger.info({ url, database: store.kind, instanceId }, "listening");

  let closing: Promise<void> | undefined;
  return {
    config,
    store,
    logger,
    metrics,
    instanceId,
    url,
    port: bound.port,
    close() {
      closing ??= (async () => {
        logger.info("shutting down");
        shutdown.abort();
        await listener.close(config.shutdownGraceMs);
        for (const part of [...parts].reverse()) await part.stop?.();
        await tracing?.shutdown().catch((error: unknown) => logger.warn({ err: error }, "could not flush traces"));
        await store.close();
        logger.info("stopped");
      })();
      return closing;
    },
  };
}

/** With PORT=0 and no explicit ZERO_PUBLIC_URL, the public URL names the port actually bound. */
function withBoundPort(config: Config, port: number): Config {
  const url = new URL(config.publicUrl);
  if (url.port !== "0") return config;
  url.port = String(port);
  return { ...config, port, publicUrl: withoutTrailingSlashes(url.href) };
}
