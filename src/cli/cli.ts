import { asksForJson, parseCommand, USAGE, UsageError, type Command } from "./args.js";
import { chatCommand } from "./commands/chat.js";
import { plansCommand } from "./commands/plans.js";
import { resumeCommand, reviseCommand } from "./commands/resume.js";
import { runCommand } from "./commands/run.js";
import { serveCommand } from "./commands/serve.js";
import { showCommand } from "./commands/show.js";
import { historyCommand } from "./commands/history.js";
import { downloadCommand } from "./commands/download.js";
import { cancelCommand, deleteCommand } from "./commands/cancel.js";
import { CliContext, CommandStop, type CliIo } from "./context.js";
import { ExitCode } from "./exit-codes.js";

/** The API key scope each command's calls need, named when a key lacks it. */
const SCOPES: Record<Command["name"], string> = {
  run: "build",
  resume: "build",
  revise: "build",
  plans: "read",
  show: "read",
  history: "read",
  download: "read",
  cancel: "build",
  delete: "build",
  chat: "chat",
  serve: "",
  help: "",
};

/**
 * Runs one command line. Resolves to the exit code, or to `undefined` when
 * the process must stay up (`serve`).
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode | undefined> {
  let command: Command;
  try {
    command = parseCommand(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const json = asksForJson(argv);
    new CliContext(io, { url: undefined, json, scope: "" }).report("invalid_request", error.message);
    if (!json) io.stderr.write('Run "project-zero --help" for the commands.\n');
    return ExitCode.usage;
  }
  const ctx = new CliContext(io, { url: command.url, json: command.json, scope: SCOPES[command.name] });
  try {
    switch (command.name) {
      case "help":
        if (command.requested) {
          io.stdout.write(USAGE);
          return ExitCode.ok;
        }
        // No command at all: a mistake, as an unknown one is, so a script that lost its arguments does not carry on.
        io.stderr.write(USAGE);
        return ExitCode.usage;
      case "run":
        return await runCommand(ctx, command);
      case "plans":
        return await plansCommand(ctx, command);
      case "show":
        return await showCommand(ctx, command);
      case "history":
        return await historyCommand(ctx, command);
      case "download":
        return await downloadCommand(ctx, command);
      case "cancel":
        return await cancelCommand(ctx, command);
      case "delete":
        return await deleteCommand(ctx, command);
      case "resume":
        return await resumeCommand(ctx, command);
      case "revise":
        return await reviseCommand(ctx, command);
      case "chat":
        return await chatCommand(ctx, command);
      case "serve":
        await serveCommand(ctx, command);
        return undefined;
    }
  } catch (error) {
    if (error instanceof CommandStop) return error.exitCode;
    return ctx.fail(error);
  }
}
