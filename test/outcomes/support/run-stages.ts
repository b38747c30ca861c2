import type { JsonValue } from "@bufbuild/protobuf";
import { StageFailure, type StageOutcome, type StageRevision, type StageWorkResolver } from "../../../src/engine/stage-work.js";
import { APPROVAL_STAGE, OUTCOME_STAGES, type OutcomeId } from "../../../src/api/outcomes.js";

export interface StageRun {
  outcomes: Record<string, StageOutcome>;
  previous: Record<string, JsonValue>;
  progress: Record<string, number[]>;
}

/**
 * Runs every stage of an outcome in order, as the engine does (outputs of
 * succeeded stages handed on in `previous`), passing the review gate.
 * `from` continues an earlier run, e.g. after a failed stage.
 */
export async function runStages(
  work: StageWorkResolver,
  plan: { planId: string; outcome: OutcomeId; goal: string; accountId?: string },
  options: { until?: string; from?: StageRun; attempt?: number } = {},
): Promise<StageRun> {
  const run: StageRun = options.from ?? { outcomes: {}, previous: {}, progress: {} };
  for (const stage of OUTCOME_STAGES[plan.outcome]) {
    if (stage.id === APPROVAL_STAGE || stage.id in run.outcomes) continue;
    const progress: number[] = [];
    run.progress[stage.id] = progress;
    const outcome = await work(
      plan.outcome,
      stage.id,
    )({
      planId: plan.planId,
      accountId: plan.accountId ?? "acc_test",
      outcome: plan.outcome,
      goal: plan.goal,
      stageId: stage.id,
      attempt: options.attempt ?? 1,
      previous: { ...run.previous },
      signal: new AbortController().signal,
      progress: async (fraction) => void progress.push(fraction),
    });
    run.outcomes[stage.id] = outcome;
    if (outcome.output !== undefined) run.previous[stage.id] = outcome.output;
    if (stage.id === options.until) break;
  }
  return run;
}

/**
 * Runs the draft stages again as the engine does for a revision, from
 * `first`'s stored `understand`: the earlier draft's outline is in
 * `revision.draft`.
 */
export async function revise(
  work: StageWorkResolver,
  first: Pick<StageRun, "previous">,
  plan: { planId: string; goal: string; outcome?: "website" | "ebook" },
  revision: StageRevision,
): Promise<Record<string, StageOutcome>> {
  const outcome = plan.outcome ?? "website";
  const previous: Record<string, JsonValue> = { understand: first.previous.understand! };
  const outcomes: Record<string, StageOutcome> = {};
  for (const stageId of outcome === "website" ? ["outline", "write", "build", "publish"] : ["outline", "write", "assemble", "publish"]) {
    const stageOutcome = await work(
      outcome,
      stageId,
    )({
      planId: plan.planId,
      accountId: "acc_test",
      outcome,
      goal: plan.goal,
      stageId,
      attempt: 2,
      previous: { ...previous },
      revision,
      signal: new AbortController().signal,
      progress: async () => {},
    });
    outcomes[stageId] = stageOutcome;
    if (stageOutcome.output !== undefined) previous[stageId] = stageOutcome.output;
  }
  return outcomes;
}

/** Runs one stage and returns the StageFailure it threw (fails the test if it succeeded). */
export async function failureOf(promise: Promise<unknown>): Promise<StageFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof StageFailure) return error;
    throw error;
  }
  throw new Error("expected the stage to fail");
}
