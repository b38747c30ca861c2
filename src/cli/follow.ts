import { setTimeout as sleep } from "node:timers/promises";
import { isResting, newestDraft, ZeroError, type Plan, type ZeroClient } from "../client/zero-client.js";
import { askYesNo } from "./approval-prompt.js";
import type { CliContext } from "./context.js";
import { ExitCode } from "./exit-codes.js";
import { LivePlanView } from "./live-plan-view.js";
import { absoluteUrl, blockingStage, liveStyleFor } from "./plan-view.js";
import { printable } from "./terminal.js";

export interface FollowOptions {
  /** Pass the approval gate without asking (`run --approve`). */
  approve: boolean;
}

/** Times the watch may drop (service restarting) in a row before the CLI gives up. */
const MAX_REOPENS = 8;

/**
 * Follows a plan through WatchExecution until it ends: at the gate it asks
 * (on a terminal), approves (`--approve`) or stops with exit 6; a failure
 * exits 1 with how to retry. Ctrl-C only hangs up: the plan runs on.
 */
export async function followToEnd(ctx: CliContext, plan: Plan, options: FollowOptions): Promise<ExitCode> {
  const client = ctx.client();
  const view = new LivePlanView(ctx.out, liveStyleFor(ctx.out, ctx.baseUrl));
  const show = (next: Plan) => (ctx.json ? ctx.emit({ plan: ctx.planJson(next) }) : view.update(next));
  const stop = new AbortController();
  const stopListening = ctx.io.onInterrupt(() => stop.abort());
  try {
    for (;;) {
      plan = await watchUntilResting(client, plan, stop.signal, show);
      view.settle();
      if (plan.status !== "awaiting_approval") return finished(ctx, plan);

      const gate = blockingStage(plan)?.id ?? "review";
      const answer = options.approve ? "yes" : await ask(ctx, plan, gate);
      if (answer === "interrupted") return interrupted(ctx, plan);
      if (answer === "no") {
        ctx.note(`Waiting for approval at "${gate}".${plan.previewUrl ? ` Preview: ${absoluteUrl(plan.previewUrl, ctx.baseUrl)}` : ""}`);
        ctx.note(`Approve and publish with: project-zero resume ${plan.id} --approve ${gate}`);
        return ExitCode.atGate;
      }
      // Approves the draft that was shown: if a revision made elsewhere replaced it meanwhile, the service refuses (409).
      plan = (await client.executions.resume({ planId: plan.id, approve: [gate], revision: newestDraft(plan) }, { signal: stop.signal })).plan;
      // Said once the service has taken it, so a refused approval is never announced as done.
      ctx.note(`Approved "${gate}"; going on.`);
    }
  } catch (error) {
    view.settle();
    if (stop.signal.aborted) return interrupted(ctx, plan);
    return ctx.fail(error);
  } finally {
    stopListening();
  }
}

/**
 * Watches until the plan rests. The service ends a watch only when the plan
 * rests; a watch that ends or drops earlier (a restart, a deploy) is opened
 * again, a few times, with a growing pause.
 */
export async function watchUntilResting(client: ZeroClient, plan: Plan, signal: AbortSignal, onPlan: (plan: Plan) => void): Promise<Plan> {
  let last = plan;
  for (let reopens = 0; ; reopens++) {
    try {
      for await (const next of client.executions.watch(plan.id, { signal })) {
        last = next;
        reopens = 0;
        onPlan(next);
      }
      if (isResting(last)) return last;
    } catch (error) {
      const dropped = error instanceof ZeroError && (error.type === "unreachable" || error.type === "unavailable");
      if (signal.aborted || !dropped || reopens >= MAX_REOPENS) throw error;
    }
    if (reopens >= MAX_REOPENS) throw new Error(`the service keeps closing the watch of ${plan.id}`);
    await sleep(Math.min(4000, 250 * 2 ** reopens), undefined, { signal });
  }
}

async function ask(ctx: CliContext, plan: Plan, gate: string): Promise<"yes" | "no" | "interrupted"> {
  // Nobody to ask: a pipe, a script, or JSON output meant for one.
  if (ctx.json || ctx.io.stdin.isTTY !== true) return "no";
  return askYesNo(printable(`Approve "${gate}" and publish ${plan.id}? [y/N] `), { input: ctx.io.stdin, output: ctx.io.stderr });
}

function finished(ctx: CliContext, plan: Plan): ExitCode {
  if (plan.status === "succeeded") {
    const url = plan.publishedUrl ?? plan.previewUrl;
    ctx.say(printable(`Done: ${plan.id} succeeded.${url ? ` ${absoluteUrl(url, ctx.baseUrl)}` : ""}`));
    return ExitCode.ok;
  }
  const stage = blockingStage(plan);
  const where = stage ? ` at "${stage.id}"${stage.error ? `: ${stage.error.type}: ${stage.error.message}` : ""}` : "";
  ctx.note(`Plan ${plan.id} ${plan.status}${where}`);
  if (plan.resumable) ctx.note(`Try the stage again with: project-zero resume ${plan.id}`);
  return ExitCode.failed;
}

function interrupted(ctx: CliContext, plan: Plan): ExitCode {
  const state = plan.status === "awaiting_approval" ? "waits for approval" : plan.status === "running" ? "keeps running" : `is ${plan.status}`;
  ctx.note(`Stopped following ${plan.id}; it ${state} on the service.`);
  ctx.note(`Follow it again with: project-zero show ${plan.id} --follow`);
  if (plan.status === "awaiting_approval") ctx.note(`Or approve and publish with: project-zero resume ${plan.id} --approve review`);
  return ExitCode.interrupted;
}
