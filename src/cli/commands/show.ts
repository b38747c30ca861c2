import type { Plan } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { followToEnd } from "../follow.js";
import { planLines, printStyleFor } from "../plan-view.js";

/** `show <id>`: the plan as it is now; `--follow` follows it live like `run`. */
export async function showCommand(ctx: CliContext, args: { id: string; follow: boolean }): Promise<ExitCode> {
  let plan: Plan;
  try {
    plan = await ctx.client().executions.get(args.id);
  } catch (error) {
    return ctx.fail(error);
  }
  if (args.follow) return followToEnd(ctx, plan, { approve: false });
  if (ctx.json) ctx.emit({ plan: ctx.planJson(plan) });
  else for (const text of planLines(plan, printStyleFor(ctx.out, ctx.baseUrl))) ctx.say(text);
  return ExitCode.ok;
}
