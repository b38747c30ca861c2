import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { TRANSIENT_ERROR_TYPES } from "../api/errors.js";
import type { AppPart } from "../server/app-part.js";
import { bindService } from "../server/rpc-pipeline.js";
import type { Config } from "../config.js";
import type { Store } from "../db/database.js";
import { Notifier } from "./notifier.js";
import { PlanChangeListener } from "./plan-change-listener.js";
import { StageEngine } from "../engine/stage-engine.js";
import { groupCommitObserver, type Metrics } from "../observability/metrics.js";
import type { Tracing } from "../observability/tracing.js";
import type { StageWorkResolver } from "../engine/stage-work.js";
import type { Logger } from "../observability/logger.js";
import { executionRoutes, type PlanDownloader } from "./execution-rest.js";
import { DeletedPlanSweeper, type RemovePlanFiles } from "./deleted-plans.js";
import { executionService } from "./execution-service.js";
import { PlanStageStore } from "./plan-stage-store.js";
import { countRunnableStages, endLeasesOfTheDead } from "./stage-queue.js";
import { stageTelemetry } from "./stage-telemetry.js";

export interface ExecutionsPartDeps {
  config: Config;
  store: Store;
  logger: Logger;
  instanceId: string;
  /** Aborted when the instance begins to shut down: open watches end with `unavailable`, so clients watch elsewhere. */
  draining?: AbortSignal;
  /** The work of each stage; the engine runs whatever it is given. */
  stageWork: StageWorkResolver;
  /** See StageRetryPolicy.random. */
  retryJitter?: () => number;
  metrics: Metrics;
  tracing?: Tracing;
  /** A plan's newest build as one file; the outcomes own where it is stored. */
  download?: PlanDownloader;
  /** Removes a deleted plan's artifact files; the outcomes own where they are. */
  deleteArtifacts?: RemovePlanFiles;
}

/**
 * Executions: ExecutionService over RPC, `POST` / `GET /api/execution` over
 * REST, and this instance's stage workers, started once the port listens and
 * stopped (handing their stages back) before the database closes, beside the
 * sweeper of deleted plans' files.
 */
export function executionsPart(deps: ExecutionsPartDeps): AppPart {
  const { config, store, logger } = deps;
  const planChanges = new PlanChangeListener(store, logger);
  const notifier = new Notifier(store.db, logger, { sender: deps.instanceId });
  const telemetry = stageTelemetry(deps.metrics, deps.tracing);
  const engine = new StageEngine({
    store: new PlanStageStore(store, notifier, groupCommitObserver(deps.metrics, "stage_results")),
    logger,
    instanceId: deps.instanceId,
    resolveWork: telemetry.traced(deps.stageWork),
    concurrency: config.workerConcurrency,
    leaseMs: config.stageLeaseMs,
    stopGraceMs: Math.min(config.shutdownGraceMs, 10_000),
    retry: {
      maxAttempts: config.stageMaxAttempts,
      baseMs: config.stageRetryBaseMs,
      capMs: config.stageRetryCapMs,
      isTransient: (type) => TRANSIENT_ERROR_TYPES.has(type),
      ...(deps.retryJitter ? { random: deps.retryJitter } : {}),
    },
  });
  telemetry.observe(engine);
  deps.metrics.onScrape(async () => {
    deps.metrics.queueDepth.set(await countRunnableStages(store.db));
  });
  const impl = executionService({
    store,
    config,
    planChanges,
    notifier,
    draining: deps.draining,
    deleteArtifacts: deps.deleteArtifacts,
    logger,
    observeCreates: groupCommitObserver(deps.metrics, "plans"),
  });
  const sweeper = deps.deleteArtifacts
    ? new DeletedPlanSweeper({ db: store.db, removeFiles: deps.deleteArtifacts, leaseMs: config.stageLeaseMs, logger })
    : undefined;
  return {
    services: [bindService(ExecutionService, impl)],
    routes: (router, rpc) => executionRoutes(router, rpc, deps.download),
    start: async () => {
      // After a crash (kill -9, the machine's reboot), its stages resume at once rather than a lease later.
      if (store.exclusive) {
        const ended = await endLeasesOfTheDead(store.db);
        if (ended > 0) logger.info({ stages: ended }, "stages leased by the process before this one are interrupted at start");
      }
      await engine.start();
      sweeper?.start();
    },
    stop: async () => {
      await engine.stop();
      await sweeper?.stop();
      await notifier.flush();
      await planChanges.stop();
    },
  };
}
