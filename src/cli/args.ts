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
  download <id> [-o <file>|-o <dir>/|-o -] [--json]
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

Options (before or after the command):
  --url <url>           the service, http(s)://host:port (default: $ZERO_URL,
                        else http://127.0.0.1:8080)
  --json                machine-readable JSON on stdout (one object per line when following);
                        errors and notes as JSON on stderr
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
  /** `requested`: asked for (`--help`, `help`), rather than shown because no command was given. */
  | ({ name: "help"; requested: boolean } & Common);

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
  const { name, rest, help: askedForHelp } = splitAtCommand(argv);
  if (name === undefined || name === "help") {
    return { name: "help", requested: askedForHelp || name === "help", url: undefined, json: false };
  }
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}"`);
  const help = (values: { url?: string; json?: boolean }): Command => ({ name: "help", requested: true, url: values.url, json: values.json ?? false });

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

/**
 * The command's name, and its arguments with the options every command has
 * (`--url`, `--json`, `--help`) moved there from before the name, where help
 * lists them too: `project-zero --url http://… plans`.
 */
function splitAtCommand(argv: readonly string[]): { name: string | undefined; rest: string[]; help: boolean } {
  const leading: string[] = [];
  let index = 0;
  for (; index < argv.length && argv[index]!.startsWith("-") && argv[index] !== "-" && argv[index] !== "--"; index++) {
    const arg = argv[index]!;
    const option = arg.split("=", 1)[0]!;
    if (!Object.hasOwn(LEADING_OPTIONS, option)) throw new UsageError(`"${option}" goes after the command: project-zero <command> ${option} …`);
    leading.push(arg);
    if (LEADING_OPTIONS[option] && option === arg) {
      const value = argv[++index];
      if (value === undefined) throw new UsageError(`${option} needs a value, e.g. ${option} http://127.0.0.1:8080`);
      leading.push(value);
    }
  }
  const help = leading.some((arg) => arg === "--help" || arg === "-h");
  return { name: argv[index], rest: [...leading, ...argv.slice(index + 1)], help };
}

/** The options of every command (COMMON) as they may come before it, by how they are written: true for one that takes a value. */
const LEADING_OPTIONS: Record<string, boolean> = Object.fromEntries(
  Object.entries(COMMON).flatMap(([name, option]) => {
    const takesValue = option.type === "string";
    return [[`--${name}`, takesValue], ...("short" in option ? [[`-${option.short}`, takesValue]] : [])];
  }),
);

/** Whether `argv` asks for JSON output, read without parsing it: how to report that it cannot be parsed. */
export function asksForJson(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).includes("--json");
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
