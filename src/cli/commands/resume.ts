import type { PlanAccepted } from "../../client/zero-client.js";
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
  if (!ctx.json) ctx.note(`Resumed ${resumed.plan.id}. Ctrl-C stops following; the plan keeps running.`);
  return followToEnd(ctx, resumed.plan, { approve: false });
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
