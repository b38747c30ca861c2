import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { StatementObserver } from "../db/statement-batcher.js";
import { LabelledCounter, LabelledHistogram } from "./labelled-metrics.js";

/**
 * Every Prometheus metric the service exports at `/metrics`, created once per
 * app and passed to the parts that update them. Upstream names appear only
 * here (an operator's view), never in client-visible responses.
 */
export interface Metrics {
  registry: Registry;
  httpRequests: LabelledCounter<"route" | "method" | "code">;
  httpDuration: LabelledHistogram<"route" | "method">;
  stageDuration: LabelledHistogram<"outcome" | "stage" | "result">;
  stageRuns: LabelledCounter<"outcome" | "stage" | "result">;
  /** Runnable stages waiting for a worker. */
  queueDepth: Gauge;
  /** Stages this instance holds a lease on. */
  runningLeases: Gauge;
  poolUnitsUsed: Gauge;
  poolUnitsLeft: Gauge;
  upstreamDuration: LabelledHistogram<"upstream" | "result">;
  upstreamErrors: LabelledCounter<"upstream" | "kind">;
  /** Group-committed writes (see StatementBatcher), by writer: how long each statement took, and the rows they carried. */
  groupCommitDuration: LabelledHistogram<"writer">;
  groupCommitRows: LabelledCounter<"writer">;
  /**
   * Gauges read from the database when `/metrics` is scraped (queue depth,
   * pool units), so they cost nothing between scrapes.
   */
  onScrape(refresh: () => Promise<void>): void;
  /** Runs the `onScrape` refreshers, then renders the registry. */
  render(): Promise<string>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  const refreshers: (() => Promise<void>)[] = [];
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    httpRequests: new LabelledCounter({
      name: "zero_http_requests_total",
      help: 'Requests served, by route (REST path or RPC procedure), method and status code ("aborted" when the response closed before its head was sent).',
      labelNames: ["route", "method", "code"],
      registry,
    }),
    httpDuration: new LabelledHistogram({
      name: "zero_http_request_duration_seconds",
      help: "Time from request to the end of the response.",
      labelNames: ["route", "method"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registry,
    }),
    stageDuration: new LabelledHistogram({
      name: "zero_stage_duration_seconds",
      help: "Time a stage ran, by outcome, stage and result.",
      labelNames: ["outcome", "stage", "result"],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300],
      registry,
    }),
    stageRuns: new LabelledCounter({
      name: "zero_stage_runs_total",
      help: "Stage runs finished, by outcome, stage and result (succeeded, retrying: failed and tried again, failed, interrupted, lost, handed_back).",
      labelNames: ["outcome", "stage", "result"],
      registry,
    }),
    queueDepth: new Gauge({ name: "zero_stage_queue_depth", help: "Runnable stages waiting for a worker.", registers }),
    runningLeases: new Gauge({ name: "zero_stage_leases_running", help: "Stages this instance holds a lease on.", registers }),
    poolUnitsUsed: new Gauge({
      name: "zero_free_pool_units_used",
      help: "Free pool units granted today (UTC) to instances, spent or held in their blocks.",
      registers,
    }),
    poolUnitsLeft: new Gauge({ name: "zero_free_pool_units_left", help: "Free pool units not yet granted today (UTC).", registers }),
    upstreamDuration: new LabelledHistogram({
      name: "zero_upstream_request_duration_seconds",
      help: "Time to an upstream's response head, by upstream name and result.",
      labelNames: ["upstream", "result"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registry,
    }),
    upstreamErrors: new LabelledCounter({
      name: "zero_upstream_errors_total",
      help: "Upstream failures by upstream name and kind (connect: no answer, the connection refused or broken before a status; timeout; status_429; status_5xx; status_<code> for any other refusal, such as status_401; stream: an answer that broke off or made no sense after it began).",
      labelNames: ["upstream", "kind"],
      registry,
    }),
    groupCommitDuration: new LabelledHistogram({
      name: "zero_db_group_commit_duration_seconds",
      help: "Time from sending a group-committed statement to its answer, by writer (responses, plans, stage_results).",
      labelNames: ["writer"],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registry,
    }),
    groupCommitRows: new LabelledCounter({
      name: "zero_db_group_commit_rows_total",
      help: "Writes carried by group-committed statements, by writer; over the duration's count, the writes per statement.",
      labelNames: ["writer"],
      registry,
    }),
    onScrape: (refresh) => void refreshers.push(refresh),
    async render() {
      // A gauge that cannot be read now keeps its last value; the scrape still answers.
      await Promise.all(refreshers.map((refresh) => refresh().catch(() => {})));
      return registry.metrics();
    },
  };
}

/** A StatementBatcher's `observe` that records its statements as `writer`. */
export function groupCommitObserver(
  metrics: Pick<Metrics, "groupCommitDuration" | "groupCommitRows">,
  writer: "responses" | "plans" | "stage_results",
): StatementObserver {
  const labels = { writer };
  return (items, seconds) => {
    metrics.groupCommitDuration.observe(labels, seconds);
    metrics.groupCommitRows.inc(labels, items);
  };
}
