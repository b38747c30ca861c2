import { randomBytes } from "node:crypto";
import { SERVICE_VERSION } from "./api/limits.js";
import { authPart } from "./auth/auth-part.js";
import { capabilitiesPart } from "./capabilities/capabilities-part.js";
import { chatPart } from "./chat/chat-part.js";
import { type Config, reachableUrl } from "./config.js";
import { consolePart } from "./console/console-part.js";
import { openStore, type Store } from "./db/database.js";
import { registerInstance, tendInstances } from "./db/service-instances.js";
import type { StageWorkResolver } from "./engine/stage-work.js";
import { executionsPart } from "./executions/executions-part.js";
import { shownArtifacts } from "./executions/plan-repository.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { createTracing } from "./observability/tracing.js";
import { outcomesPart, type ArtifactStore } from "./outcomes/outcomes-part.js";
import type { AppPart } from "./server/app-part.js";
import { answerWhileStarting, createHttpHandler, type HttpHandler } from "./server/http-handler.js";
import { hourlySweep } from "./server/hourly-sweep.js";
import { createListener } from "./server/listener.js";
import { SHUTTING_DOWN } from "./server/request-info.js";
import { withoutTrailingSlashes } from "./strings.js";

/** A running service: one port, one database, its background workers. */
export interface App {
  config: Config;
  store: Store;
  logger: Logger;
  metrics: Metrics;
  /** Where built sites and books live (`ZERO_ARTIFACTS`). */
  artifacts: ArtifactStore;
  /** This instance's id in `service_instances`. */
  instanceId: string;
  /** `http://host:port` as bound (port 0 resolved). */
  url: string;
  port: number;
  /**
   * Resolves, with why, once the service cannot work until it is restarted:
   * its embedded Postgres exited unasked (see Store.lost). Never otherwise.
   * The process entry exits on it, so that a supervisor restarts the service.
   */
  databaseLost: Promise<Error>;
  /** Graceful: stop accepting, finish in-flight requests (bounded), stop workers, close the database. */
  close(): Promise<void>;
}

export interface AppOptions {
  logger?: Logger;
  /** See StoreOptions.pgliteTemplate. */
  pgliteTemplate?: Blob;
  /** The work of each plan stage. Tests pass instant, slow or failing work; by default the outcomes' own. */
  stageWork?: StageWorkResolver;
  /** The source of the retry backoff's jitter, 0 ≤ x < 1; by default Math.random. Tests pin it to make waits predictable. */
  retryJitter?: () => number;
  /** Aborted to give the start up (a signal while it starts): what it started is stopped, and it rejects with the reason. */
  signal?: AbortSignal;
}

/** Builds and starts the whole service. Tests call this to get the real thing on port 0. */
export async function startApp(config: Config, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // Bound first: a HOST or PORT that cannot be had fails at once, before a database is started only to be stopped,
  // and with PORT=0 the public URL can name the real port. Until the service has started, requests are told it is starting.
  let handler: HttpHandler | undefined;
  const listener = createListener((req, res) => (handler ? handler.handle(req, res) : answerWhileStarting(req, res)), {
    tls: config.tlsCertFile && config.tlsKeyFile ? { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile } : undefined,
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    http2IdleTimeoutMs: config.http2IdleTimeoutMs,
  });
  const bound = await listener.listen(config.port, config.host);
  config = withBoundPort(config, bound.port);

  // Shutdown begins (readiness fails, watches end so clients watch elsewhere), then, once the grace period is over, stops.
  const draining = new AbortController();
  const shutdown = new AbortController();
  // What has started, to be stopped in reverse order if the start fails or is given up.
  const started: [string, () => Promise<void> | void][] = [["the listener", () => listener.close(0)]];
  try {
    options.signal?.throwIfAborted();
    const store = await openStore({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      embedded: config.embeddedDatabase,
      logger,
      pgliteTemplate: options.pgliteTemplate,
    });
    started.push(["the database", () => store.close()]);
    options.signal?.throwIfAborted();
    const instanceId = `ins_${randomBytes(8).toString("hex")}`;
    await registerInstance(store.db, instanceId, SERVICE_VERSION);
    const instances = hourlySweep(logger, "the list of service instances", [() => tendInstances(store.db, instanceId)]);
    instances.start();
    started.push(["the list of service instances", () => instances.stop()]);

    const metrics = createMetrics();
    const tracing = config.otlpEndpoint
      ? await createTracing({ endpoint: config.otlpEndpoint, serviceName: config.otelServiceName, instanceId, version: SERVICE_VERSION, logger })
      : undefined;
    if (tracing) started.push(["tracing", () => tracing.shutdown()]);

    const auth = authPart({ config, store, logger });
    // The chat router is also what the stage writers reach the model through.
    const chat = chatPart({ config, store, logger, authenticator: auth.authenticator, metrics, tracing });
    const outcomes = outcomesPart({ config, store, chat: chat.chat, logger, shown: (planId) => shownArtifacts(store.db, planId) });
    const parts: AppPart[] = [
      auth,
      capabilitiesPart(config),
      consolePart({ publicUrl: config.publicUrl, logger }),
      chat,
      executionsPart({
        config,
        store,
        logger,
        instanceId,
        metrics,
        tracing,
        draining: draining.signal,
        stageWork: options.stageWork ?? outcomes.stageWork,
        retryJitter: options.retryJitter,
        download: outcomes.download,
        deleteArtifacts: outcomes.deleteArtifacts,
      }),
      outcomes,
    ];

    const serving = createHttpHandler({
      logger,
      authenticator: auth.authenticator,
      parts,
      ping: () => store.ping(),
      drainingSignal: draining.signal,
      shutdownSignal: shutdown.signal,
      metrics,
      tracing,
      trustedProxies: config.trustedProxies,
      metricsToken: config.metricsToken,
      corsOrigins: config.corsOrigins,
    });
    for (const part of parts) {
      options.signal?.throwIfAborted();
      // Before its start: a part whose start failed half-way is stopped with the others.
      started.push(["a part", () => part.stop?.()]);
      await part.start?.();
    }
    options.signal?.throwIfAborted();
    // Only now: until every part has started, /readyz says not ready and other requests are asked to come back.
    handler = serving;
    const url = reachableUrl(config.tlsCertFile ? "https" : "http", bound.host, bound.port);
    logger.info({ url, database: store.kind, instanceId }, "listening");

    let closing: Promise<void> | undefined;
    return {
      config,
      store,
      logger,
      metrics,
      artifacts: outcomes.artifacts,
      instanceId,
      url,
      port: bound.port,
      databaseLost: store.lost ?? new Promise<never>(() => {}),
      close() {
        closing ??= (async () => {
          logger.info("shutting down");
          draining.abort();
          await listener.close(config.shutdownGraceMs, () => {
            shutdown.abort(SHUTTING_DOWN);
            handler?.shutDownRequests();
          });
          // The listener is closed; the rest stops as a failed start stops it.
          await stopInReverse(started.slice(1), logger, "while shutting down");
          logger.info("stopped");
        })();
        return closing;
      },
    };
  } catch (error) {
    // Nothing outlives a start that failed or was given up: the embedded Postgres, in a process group of its own,
    // would otherwise run on with no one to stop it. A failure to stop one thing does not keep the rest up.
    // Requests meanwhile are told it is starting, not handed to parts being stopped.
    handler = undefined;
    draining.abort();
    shutdown.abort(SHUTTING_DOWN);
    await stopInReverse(started, logger, "after the start failed");
    throw error;
  }
}

/** Stops what was started, last first; a failure to stop one thing is logged and does not keep the rest up. */
async function stopInReverse(started: readonly [string, () => Promise<void> | void][], logger: Logger, when: string): Promise<void> {
  for (const [what, stop] of [...started].reverse()) {
    try {
      await stop();
    } catch (error) {
      logger.warn({ err: error }, `could not stop ${what} ${when}`);
    }
  }
}

/** With PORT=0 and no explicit ZERO_PUBLIC_URL, the public URL names the port actually bound. */
function withBoundPort(config: Config, port: number): Config {
  const url = new URL(config.publicUrl);
  if (url.port !== "0") return config;
  url.port = String(port);
  return { ...config, port, publicUrl: withoutTrailingSlashes(url.href) };
}
