import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { PlanSchema } from "../../gen/zero/v1/execution_pb.js";
import { stageProgress, type PlanState } from "./plan-transitions.js";

/** A plan as the API shows it (REST renders it with nulls for unset fields). */
export function toPlanMessage(plan: PlanState): MessageInitShape<typeof PlanSchema> {
  return {
    id: plan.id,
    goal: plan.goal,
    project: plan.project ?? undefined,
    status: plan.status,
    progress: plan.progress,
    resumable: plan.resumable,
    warning: plan.warning ?? undefined,
    previewUrl: plan.previewUrl ?? undefined,
    publishedUrl: plan.publishedUrl ?? undefined,
    stages: plan.stages.map((stage) => ({
      id: stage.id,
      title: stage.title,
      state: stage.state,
      attempts: stage.attempts,
      error: stage.error ?? undefined,
      progress: stageProgress(stage),
    })),
    outcome: plan.outcome,
    createdAt: timestampFromDate(plan.createdAt),
    updatedAt: timestampFromDate(plan.updatedAt),
    revisions: plan.revisions.map((revision) => ({
      number: revision.number,
      feedback: revision.feedback,
      createdAt: timestampFromDate(new Date(revision.createdAt)),
      previewUrl: revision.previewUrl ?? undefined,
    })),
  };
}
