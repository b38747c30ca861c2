import type { Plan } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { progressBar, toneOf } from "../plan-view.js";
import { line } from "../terminal.js";

/** `plans`: the caller's ten most recent plans, newest first; `--before <id>` pages back, `--all` pages to the end. */
export async function plansCommand(ctx: CliContext, page: { before?: string; all?: boolean } = {}): Promise<ExitCode> {
  const plans: Plan[] = [];
  try {
    let before = page.before;
    for (;;) {
      const batch = await ctx.client().executions.list({ before });
      plans.push(...batch);
      if (!page.all || batch.length === 0) break;
      before = batch.at(-1)!.id;
    }
  } catch (error) {
    return ctx.fail(error);
  }
  if (ctx.json) {
    ctx.emit({ plans: plans.map((plan) => ctx.planJson(plan)) });
    return ExitCode.ok;
  }
  if (plans.length === 0 && page.before !== undefined) {
    ctx.say(`No plans older than ${page.before}.`);
    return ExitCode.ok;
  }
  if (plans.length === 0) {
    ctx.say('No plans yet. Start one with: project-zero run "<goal>"');
    return ExitCode.ok;
  }
  for (const plan of plans) {
    ctx.say(
      line(
        [
          [plan.id.padEnd(26), "bold"],
          [plan.status.padEnd(18), toneOf(plan.status)],
          [`${progressBar(plan.progress, 10, !ctx.out.ansi)}  `],
          [plan.outcome.padEnd(9), "dim"],
          [plan.project?.name ?? plan.goal],
        ],
        ctx.out.columns,
        ctx.out.color,
      ),
    );
  }
  return ExitCode.ok;
}
