import { parseArgs, type ParseArgsConfig } from "node:util";

export const USAGE = `Usage: project-zero <command> [options]

Commands:
  run "<goal>" [--outcome website|ebook] [--approve] [--json]
                        start an execution and follow it live to the end
  plans [--before <id> | --all] [--json]
                        your ten most recent plans; --before <id> the ten
                        older than plan <id>; --all every plan, ten at a time
  show <id> [--follow] [--json]
                        one plan; --follow follows it live like run
  history <id> [--json]  what happened to a plan, oldest first
  download <id> [-o <file>|-o -] [--json]
                        save the plan's site (a zip) or book (an EPUB)
  cancel <id> [--json]   cancel a plan; a running stage stops
  delete <id> [--yes]   cancel a plan, then remove it, its history and its files;
                        on a terminal it asks first (--yes does not)
  resume <id> [--approve review] [--json]
                        resume a plan (past the gate with --approve review) and follow it
  revise <id> "<feedback>" [--json]
                        at the gate: a new draft with your feedback, followed live
  chat "<prompt>" [--system "<text>"] [--json]
                        stream an answer from the project-zero chat model
  serve [--port <n>] [--host <addr>]
                        start the service (same environment as npm start)

Options:
  --url <url>           the service, http(s)://host:port (default: $ZERO_URL,
                        else http://127.0.0.1:8080)
  --json                machine-readable JSON on stdout (one object per line when following)
  -h, --help            this help

Environment: ZERO_API_KEY (a key made in the Console), ZERO_URL, ZERO_CALL_TIMEOUT_MS
(how long one call may wait for its answer; default 30000).
Exit codes: 0 ok, 1 plan failed, interrupted or cancelled (or a delete declined),
2 usage or invalid request (400/409), 3 auth (401/403), 4 not found, 5 rate limited
or unavailable (429/5xx, unreachable), 6 stopped at the approval gate, 130
interrupted, 141 output closed (the reader of a pipe has gone).
`;

/** A command line that cannot be run; exits 2 with the message and a hint. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export const OUTCOMES = ["website", "ebook"] as const;

interface Common {
  url: string | undefined;
  json: boolean;
}

export type Command =
  | ({ name: "run"; goal: string; outcome: string | undefined; approve: boolean } & Common)
  | ({ name: "plans"; before: string | undefined; all: boolean } & Common)
  | ({ name: "show"; id: string; follow: boolean } & Common)
  | ({ name: "history"; id: string } & Common)
  | ({ name: "download"; id: string; output: string | undefined } & Common)
  | ({ name: "cancel"; id: string } & Common)
  | ({ name: "delete"; id: string; yes: boolean } & Common)
  | ({ name: "resume"; id: string; approve: string[] } & Common)
  | ({ name: "revise"; id: string; feedback: string } & Common)
  | ({ name: "chat"; prompt: string; system: string | undefined } & Common)
  | ({ name: "serve"; port: string | undefined; host: string | undefined } & Common)
  | ({ name: "help" } & Common);

const COMMON = {
  url: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const satisfies ParseArgsConfig["options"];

const OPTIONS = {
  run: { ...COMMON, outcome: { type: "string" }, approve: { type: "boolean", default: false } },
  plans: { ...COMMON, before: { type: "string" }, all: { type: "boolean", default: false } },
  show: { ...COMMON, follow: { type: "boolean", short: "f", default: false } },
  history: COMMON,
  download: { ...COMMON, output: { type: "string", short: "o" } },
  cancel: COMMON,
  delete: { ...COMMON, yes: { type: "boolean", short: "y", default: false } },
  resume: { ...COMMON, approve: { type: "string", multiple: true } },
  revise: COMMON,
  chat: { ...COMMON, system: { type: "string" } },
  serve: { ...COMMON, port: { type: "string" }, host: { type: "string" } },
} as const satisfies Record<string, ParseArgsConfig["options"]>;

type CommandName = keyof typeof OPTIONS;

function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(OPTIONS, name);
}

/** Reads `argv` (without node and the script) into one command. Throws UsageError. */
export function parseCommand(argv: readonly string[]): Command {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    return { name: "help", url: undefined, json: false };
  }
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}"`);
  const help = (values: { url?: string; json?: boolean }): Command => ({ name: "help", url: values.url, json: values.json ?? false });

  switch (name) {
    case "run": {
      const { values, positionals } = parse(rest, OPTIONS.run);
      if (values.help) return help(values);
      // Quoting the goal is optional: `run A site for my bakery` reads as one goal.
      const goal = positionals.join(" ").trim();
      if (goal === "") throw new UsageError('run needs a goal, e.g. project-zero run "A website for my bakery"');
      if (values.outcome !== undefined && !(OUTCOMES as readonly string[]).includes(values.outcome)) {
        throw new UsageError(`--outcome must be ${OUTCOMES.join(" or ")}, not "${values.outcome}"`);
      }
      return { name, goal, outcome: values.outcome, approve: values.approve, url: values.url, json: values.json };
    }
    case "plans": {
      const { values, positionals } = parse(rest, OPTIONS.plans);
      if (values.help) return help(values);
      noPositionals(name, positionals);
      return { name, before: values.before, all: values.all, url: values.url, json: values.json };
    }
    case "show": {
      const { values, positionals } = parse(rest, OPTIONS.show);
      if (values.help) return help(values);
      return { name, id: onePlanId(name, positionals), follow: values.follow, url: values.url, json: values.json };
    }
    case "history":
    case "cancel": {
      const { values, positionals } = parse(rest, OPTIONS[name]);
      if (values.help) return help(values);
      return { name, id: onePlanId(name, positionals), url: values.url, json: values.json };
    }
    case "delete": {
      const { values, positionals } = parse(rest, OPTIONS.delete);
      if (values.help) return help(values);
      return { name, id: onePlanId(name, positionals), yes: values.yes, url: values.url, json: values.json };
    }
    case "download": {
      const { values, positionals } = parse(rest, OPTIONS.download);
      if (values.help) return help(values);
      return { name, id: onePlanId(name, positionals), output: values.output, url: values.url, json: values.json };
    }
    case "resume": {
      const { values, positionals } = parse(rest, OPTIONS.resume);
      if (values.help) return help(values);
      return { name, id: onePlanId(name, positionals), approve: values.approve ?? [], url: values.url, json: values.json };
    }
    case "revise": {
      const { values, positionals } = parse(rest, OPTIONS.revise);
      if (values.help) return help(values);
      const [id, ...words] = positionals;
      // Quoting the feedback is optional, as for a goal.
      const feedback = words.join(" ").trim();
      if (id === undefined || feedback === "")
        throw new UsageError("revise needs a plan id and feedback, e.g. project-zero revise pln_… \"Call it 'Rosa' and drop the about page\"");
      return { name, id, feedback, url: values.url, json: values.json };
    }
    case "chat": {
      const { values, positionals } = parse(rest, OPTIONS.chat);
      if (values.help) return help(values);
      const prompt = positionals.join(" ").trim();
      if (prompt === "") throw new UsageError('chat needs a prompt, e.g. project-zero chat "Write a haiku about bicycles"');
      return { name, prompt, system: values.system, url: values.url, json: values.json };
    }
    case "serve": {
      const { values, positionals } = parse(rest, OPTIONS.serve);
      if (values.help) return help(values);
      noPositionals(name, positionals);
      return { name, port: values.port, host: values.host, url: values.url, json: values.json };
    }
  }
}

function parse<O extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    // node:util's messages name the option and what is wrong with it; keep them, drop the error code.
    throw new UsageError((error as Error).message);
  }
}

function onePlanId(command: string, positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError(`${command} needs one plan id, e.g. project-zero ${command} pln_…`);
  return positionals[0]!;
}

function noPositionals(command: string, positionals: string[]): void {
  if (positionals.length > 0) throw new UsageError(`${command} takes no arguments, got "${positionals.join(" ")}"`);
}
