import type { Plan } from "../../client/zero-client.js";
import { askYesNo } from "../approval-prompt.js";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { planLines, printStyleFor } from "../plan-view.js";
import { printable } from "../terminal.js";

/** `cancel <id>`: cancels the plan and prints it as it now is (status `cancelled`). */
export async function cancelCommand(ctx: CliContext, args: { id: string }): Promise<ExitCode> {
  let plan: Plan;
  try {
    plan = await ctx.client().executions.cancel(args.id);
  } catch (error) {
    return ctx.fail(error);
  }
  if (ctx.json) ctx.emit({ plan: ctx.planJson(plan) });
  else for (const text of planLines(plan, printStyleFor(ctx.out, ctx.baseUrl))) ctx.say(text);
  return ExitCode.ok;
}

/**
 * `delete <id>`: cancels and removes the plan, its history and its files.
 * On a terminal it asks first, since nothing brings them back; a script (no
 * terminal, or --json) and `--yes` are not asked.
 */
export async function deleteCommand(ctx: CliContext, args: { id: string; yes: boolean }): Promise<ExitCode> {
  if (!args.yes && !ctx.json && ctx.io.stdin.isTTY === true) {
    const answer = await askYesNo(printable(`Delete ${args.id}, its history and its files? This cannot be undone. [y/N] `), {
      input: ctx.io.stdin,
      output: ctx.io.stderr,
    });
    if (answer === "interrupted") return ExitCode.interrupted;
    if (answer === "no") {
      ctx.note(printable(`Kept ${args.id}.`));
      return ExitCode.failed;
    }
  }
  try {
    await ctx.client().executions.delete(args.id);
  } catch (error) {
    return ctx.fail(error);
  }
  if (ctx.json) ctx.emit({ deleted: args.id });
  else ctx.say(printable(`Deleted ${args.id}.`));
  return ExitCode.ok;
}
