import type { Span } from "@opentelemetry/api";
import type { StageEngine } from "../engine/stage-engine.js";
import type { StageWorkResolver } from "../engine/stage-work.js";
import type { Metrics } from "../observability/metrics.js";
import { endSpan, type Tracing } from "../observability/tracing.js";

/**
 * Turns the engine's events into metrics and a span per stage run, so the
 * engine itself knows nothing of Prometheus or OpenTelemetry. With tracing,
 * pass the stage work through `traced` too: each run's work then runs inside
 * its span, so the writers' upstream attempts are the stage's children.
 */
export function stageTelemetry(
  metrics: Pick<Metrics, "stageDuration" | "stageRuns" | "runningLeases">,
  tracing: Tracing | undefined,
): { traced(resolve: StageWorkResolver): StageWorkResolver; observe(engine: StageEngine): void } {
  const spans = new Map<string, Span>();
  const runKey = (planId: string, stageId: string, attempt: number) => `${planId}/${stageId}/${attempt}`;
  return {
    traced: (resolve) => {
      if (!tracing) return resolve;
      return (outcome, stageId) => {
        const work = resolve(outcome, stageId);
        return (input) => {
          // A trace of its own: not a child of whichever request happened to wake the engine.
          const span = tracing.start(
            `stage ${stageId}`,
            "internal",
            { "zero.plan_id": input.planId, "zero.outcome": outcome, "zero.stage": stageId, "zero.attempt": input.attempt },
            { root: true },
          );
          spans.set(runKey(input.planId, stageId, input.attempt), span);
          return tracing.within(span, () => work(input));
        };
      };
    },
    observe: (engine) => {
      engine.events.on("runs:changed", (running) => metrics.runningLeases.set(running));
      engine.events.on("stage:end", (claim, result, durationMs) => {
        const key = runKey(claim.planId, claim.stageId, claim.attempts);
        endSpan(spans.get(key), { "zero.result": result }, result === "failed" || result === "retrying" || result === "lost");
        spans.delete(key);
        const labels = { outcome: claim.outcome, stage: claim.stageId, result };
        metrics.stageRuns.inc(labels);
        metrics.stageDuration.observe(labels, durationMs / 1000);
      });
      engine.events.on("stage:interrupted", (stage) => metrics.stageRuns.inc({ outcome: stage.outcome, stage: stage.stageId, result: "interrupted" }));
    },
  };
}
