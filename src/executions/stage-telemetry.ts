import type { StageEngine } from "../engine/stage-engine.js";
import type { Metrics } from "../observability/metrics.js";
import { endSpan, type Tracing } from "../observability/tracing.js";

/**
 * Turns the engine's events into metrics and a span per stage run, so the
 * engine itself knows nothing of Prometheus or OpenTelemetry.
 */
export function observeStageEngine(
  engine: StageEngine,
  metrics: Pick<Metrics, "stageDuration" | "stageRuns" | "runningLeases">,
  tracing: Tracing | undefined,
): void {
  const spans = new Map<number, ReturnType<Tracing["start"]>>();
  engine.events.on("runs:changed", (running) => metrics.runningLeases.set(running));
  engine.events.on("stage:start", (claim) => {
    if (!tracing) return;
    spans.set(
      claim.leaseToken,
      tracing.start(`stage ${claim.stageId}`, "internal", {
        "zero.plan_id": claim.planId,
        "zero.outcome": claim.outcome,
        "zero.stage": claim.stageId,
        "zero.attempt": claim.attempts,
      }),
    );
  });
  engine.events.on("stage:end", (claim, result, durationMs) => {
    const span = spans.get(claim.leaseToken);
    spans.delete(claim.leaseToken);
    endSpan(span, { "zero.result": result }, result === "failed" || result === "lost");
    const labels = { outcome: claim.outcome, stage: claim.stageId, result };
    metrics.stageRuns.inc(labels);
    metrics.stageDuration.observe(labels, durationMs / 1000);
  });
  engine.events.on("stage:interrupted", (stage) => metrics.stageRuns.inc({ outcome: stage.outcome, stage: stage.stageId, result: "interrupted" }));
}
