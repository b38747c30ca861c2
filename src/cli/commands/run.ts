import type { PlanAccepted } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import type { ExitCode } from "../exit-codes.js";
import { followToEnd } from "../follow.js";

/** `run "<goal>"`: creates an execution and follows it live to its end. */
export async function runCommand(ctx: CliContext, args: { goal: string; outcome: string | undefined; approve: boolean }): Promise<ExitCode> {
  let created: PlanAccepted;
  try {
    created = await ctx.client().executions.create({ goal: args.goal, outcome: args.outcome });
  } catch (error) {
    return ctx.fail(error);
  }
  const { plan } = created;
  if (!ctx.json) ctx.note(`Created ${plan.id} (${plan.outcome}). Ctrl-C stops following; the plan keeps running.`);
  return followToEnd(ctx, plan, { approve: args.approve });
}
