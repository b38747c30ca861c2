import type { Plan } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { planLines, styleFor } from "../plan-view.js";

/** `cancel <id>`: cancels the plan and prints it as it now is (status `cancelled`). */
export async function cancelCommand(ctx: CliContext, args: { id: string }): Promise<ExitCode> {
  let plan: Plan;
  try {
    plan = await ctx.client().executions.cancel(args.id);
  } catch (error) {
    return ctx.fail(error);
  }
  if (ctx.json) ctx.emit({ plan: ctx.planJson(plan) });
  else for (const text of planLines(plan, styleFor(ctx.out, ctx.baseUrl))) ctx.say(text);
  return ExitCode.ok;
}

/** `delete <id>`: cancels and removes the plan, its history and its files. */
export async function deleteCommand(ctx: CliContext, args: { id: string }): Promise<ExitCode> {
  try {
    await ctx.client().executions.delete(args.id);
  } catch (error) {
    return ctx.fail(error);
  }
  if (ctx.json) ctx.emit({ deleted: args.id });
  else ctx.say(`Deleted ${args.id}.`);
  return ExitCode.ok;
}
