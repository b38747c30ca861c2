import type { Plan, PlanAccepted } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import type { ExitCode } from "../exit-codes.js";
import { followToEnd } from "../follow.js";

/**
 * `resume <id> [--approve review]`: passes the gate (with the approval) or
 * retries a failed or interrupted stage, then follows the plan like `run`.
 */
export async function resumeCommand(ctx: CliContext, args: { id: string; approve: string[] }): Promise<ExitCode> {
  let resumed: PlanAccepted;
  try {
    resumed = await ctx.client().executions.resume({ planId: args.id, approve: args.approve });
  } catch (error) {
    return ctx.fail(error);
  }
  if (!ctx.json) ctx.note(resumedNote(resumed.plan));
  return followToEnd(ctx, resumed.plan, { approve: false });
}

/** What a resume did: the service answers a plan that is over as it is, so that is said rather than "Resumed". */
function resumedNote(plan: Plan): string {
  if (plan.status === "succeeded") return `${plan.id} has already succeeded; there is nothing to resume.`;
  if (plan.status === "cancelled") return `${plan.id} is cancelled; there is nothing to resume.`;
  return `Resumed ${plan.id}. Ctrl-C stops following; the plan keeps running.`;
}

/** `revise <id> "<feedback>"`: a new draft at the gate, followed like `resume` until it is back at the gate. */
export async function reviseCommand(ctx: CliContext, args: { id: string; feedback: string }): Promise<ExitCode> {
  let revised: PlanAccepted;
  try {
    revised = await ctx.client().executions.revise(args.id, args.feedback);
  } catch (error) {
    return ctx.fail(error);
  }
  const number = revised.plan.revisions.at(-1)?.number;
  if (!ctx.json) ctx.note(`Revising ${revised.plan.id}${number ? ` (revision ${number})` : ""}. Ctrl-C stops following; the plan keeps running.`);
  return followToEnd(ctx, revised.plan, { approve: false });
}
