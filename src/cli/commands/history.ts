import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { PlanEvent } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { printable } from "../terminal.js";

/** `history <id>`: what happened to a plan, oldest first, one event a line. */
export async function historyCommand(ctx: CliContext, args: { id: string }): Promise<ExitCode> {
  let events: PlanEvent[];
  try {
    events = await ctx.client().executions.history(args.id);
  } catch (error) {
    return ctx.fail(error);
  }
  const rows = events.map((event) => ({
    at: event.at ? timestampDate(event.at).toISOString() : null,
    type: event.type,
    stage: event.stage ?? null,
    attempt: event.attempt ?? null,
    detail: event.detail ?? null,
  }));
  if (ctx.json) ctx.emit({ events: rows });
  else for (const row of rows) ctx.say(eventLine(row));
  return ExitCode.ok;
}

function eventLine(row: { at: string | null; type: string; stage: string | null; attempt: number | null; detail: unknown }): string {
  const where = row.stage === null ? "" : `  ${row.stage}${row.attempt === null ? "" : ` (attempt ${row.attempt})`}`;
  const error = (row.detail as { error?: { message?: string } } | null)?.error?.message;
  return printable(`${row.at ?? ""}  ${row.type}${where}${error ? `  ${error}` : ""}`);
}
