import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ErrorDetailSchema } from "../../gen/zero/v1/error_pb.js";
import { ERROR_TYPES } from "../../src/api/errors.js";
import { parseCommand, UsageError } from "../../src/cli/args.js";
import { describeError, ExitCode, exitCodeFor } from "../../src/cli/exit-codes.js";
import { ZeroError } from "../../src/client/zero-client.js";

describe("command line", () => {
  it("reads each command with its options", () => {
    expect(parseCommand(["run", "A website for my bakery", "--outcome", "website", "--approve", "--json"])).toEqual({
      name: "run",
      goal: "A website for my bakery",
      outcome: "website",
      approve: true,
      url: undefined,
      json: true,
    });
    expect(parseCommand(["run", "A", "site", "for", "my", "bakery"])).toMatchObject({ goal: "A site for my bakery", approve: false });
    expect(parseCommand(["plans", "--url", "http://x:1"])).toEqual({ name: "plans", before: undefined, all: false, url: "http://x:1", json: false });
    expect(parseCommand(["plans", "--before", "pln_1"])).toMatchObject({ name: "plans", before: "pln_1", all: false });
    expect(parseCommand(["plans", "--all"])).toMatchObject({ name: "plans", all: true });
    expect(parseCommand(["show", "pln_1", "--follow"])).toMatchObject({ name: "show", id: "pln_1", follow: true });
    expect(parseCommand(["resume", "pln_1", "--approve", "review"])).toMatchObject({ name: "resume", id: "pln_1", approve: ["review"] });
    expect(parseCommand(["resume", "pln_1"])).toMatchObject({ approve: [] });
    expect(parseCommand(["revise", "pln_1", "Make it", "calmer"])).toMatchObject({ name: "revise", id: "pln_1", feedback: "Make it calmer" });
    expect(parseCommand(["chat", "Hello", "--system", "Be brief"])).toMatchObject({ name: "chat", prompt: "Hello", system: "Be brief" });
    expect(parseCommand(["delete", "pln_1"])).toMatchObject({ name: "delete", id: "pln_1", yes: false });
    expect(parseCommand(["delete", "-y", "pln_1"])).toMatchObject({ name: "delete", id: "pln_1", yes: true });
    expect(parseCommand(["serve", "--port", "9000"])).toMatchObject({ name: "serve", port: "9000" });
    expect(parseCommand([])).toMatchObject({ name: "help", requested: false });
    expect(parseCommand(["--help"])).toMatchObject({ name: "help", requested: true });
    expect(parseCommand(["run", "--help"])).toMatchObject({ name: "help" });
  });

  it("refuses what it cannot run, with the reason", () => {
    const refused = (argv: string[]) => {
      try {
        parseCommand(argv);
      } catch (error) {
        expect(error).toBeInstanceOf(UsageError);
        return (error as Error).message;
      }
      throw new Error(`accepted ${argv.join(" ")}`);
    };
    expect(refused(["deploy"])).toBe('unknown command "deploy"');
    expect(refused(["run"])).toMatch(/run needs a goal/);
    expect(refused(["run", "goal here", "--outcome", "pdf"])).toBe('--outcome must be website or ebook, not "pdf"');
    expect(refused(["run", "goal here", "--colour"])).toMatch(/--colour/);
    expect(refused(["show"])).toMatch(/show needs one plan id/);
    expect(refused(["show", "a", "b"])).toMatch(/show needs one plan id/);
    expect(refused(["resume", "pln_1", "--approve"])).toMatch(/--approve/);
    expect(refused(["plans", "extra"])).toMatch(/takes no arguments/);
    expect(refused(["--outcome", "ebook", "run", "goal here"])).toBe('"--outcome" goes after the command: project-zero <command> --outcome …');
    expect(refused(["--url"])).toMatch(/--url/);
  });

  it("takes the options every command has (--url, --json, --help) before the command as well", () => {
    expect(parseCommand(["--url", "http://x:1", "plans"])).toEqual({ name: "plans", before: undefined, all: false, url: "http://x:1", json: false });
    expect(parseCommand(["--url=http://x:1", "--json", "show", "pln_1"])).toMatchObject({ name: "show", id: "pln_1", url: "http://x:1", json: true });
    expect(parseCommand(["--json", "run", "A website", "--approve"])).toMatchObject({ name: "run", goal: "A website", approve: true, json: true });
    expect(parseCommand(["--url", "http://x:1"])).toMatchObject({ name: "help", requested: false });
    expect(parseCommand(["-h", "plans"])).toMatchObject({ name: "help", requested: true });
  });
});

function zeroError(code: Code, type?: string, extra: { unavailable?: string[]; headers?: Record<string, string> } = {}): ZeroError {
  const details = type
    ? [{ desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { type, message: `the ${type} message.`, unavailable: extra.unavailable ?? [] }) }]
    : [];
  return ZeroError.from(new ConnectError("raw", code, new Headers(extra.headers), details));
}

describe("exit codes and error lines", () => {
  const context = { baseUrl: "http://127.0.0.1:8080", scope: "build" };

  it("give each documented failure its own code", () => {
    expect(exitCodeFor(zeroError(Code.Unauthenticated, "unauthenticated"))).toBe(ExitCode.auth);
    expect(exitCodeFor(zeroError(Code.PermissionDenied, "permission_denied"))).toBe(ExitCode.auth);
    expect(exitCodeFor(zeroError(Code.PermissionDenied, "insufficient_scope"))).toBe(ExitCode.auth);
    expect(exitCodeFor(zeroError(Code.NotFound, "not_found"))).toBe(ExitCode.notFound);
    expect(exitCodeFor(zeroError(Code.ResourceExhausted, "rate_limited"))).toBe(ExitCode.unavailable);
    expect(exitCodeFor(zeroError(Code.Unavailable, "outcome_unavailable"))).toBe(ExitCode.unavailable);
    expect(exitCodeFor(zeroError(Code.InvalidArgument, "invalid_request"))).toBe(ExitCode.usage);
    // 409: the request does not fit the plan's state (cancel a succeeded plan): an invalid request, not a failed plan.
    expect(exitCodeFor(zeroError(Code.AlreadyExists, "conflict"))).toBe(ExitCode.usage);
    // The service's own fault (500): something to try again later, like a 503.
    expect(exitCodeFor(zeroError(Code.Internal, "internal"))).toBe(ExitCode.unavailable);
    // No ErrorDetail (a proxy answered): the code still decides.
    expect(exitCodeFor(zeroError(Code.Unauthenticated))).toBe(ExitCode.auth);
    expect(exitCodeFor(zeroError(Code.Unavailable))).toBe(ExitCode.unavailable);
  });

  it("never answer a refused call with 1, which says the plan failed", () => {
    for (const [type, { code }] of Object.entries(ERROR_TYPES)) {
      expect({ type, exit: exitCodeFor(zeroError(code, type)) }).not.toEqual({ type, exit: ExitCode.failed });
    }
  });

  it("read a type they do not know (a newer service's) by its code", () => {
    expect(exitCodeFor(zeroError(Code.FailedPrecondition, "brand_new_refusal"))).toBe(ExitCode.usage);
    expect(exitCodeFor(zeroError(Code.NotFound, "brand_new_missing"))).toBe(ExitCode.notFound);
    expect(exitCodeFor(zeroError(Code.PermissionDenied, "brand_new_key_problem"))).toBe(ExitCode.auth);
    expect(exitCodeFor(zeroError(Code.Internal, "brand_new_fault"))).toBe(ExitCode.unavailable);
    expect(exitCodeFor(zeroError(Code.Unknown, "constructor"))).toBe(ExitCode.unavailable);
  });

  it("say what happened and what to do, in one line", () => {
    const lines = [
      describeError(zeroError(Code.Unauthenticated, "unauthenticated"), context),
      describeError(zeroError(Code.PermissionDenied, "permission_denied"), context),
      describeError(zeroError(Code.NotFound, "not_found"), context),
      describeError(zeroError(Code.ResourceExhausted, "rate_limited", { headers: { "retry-after": "120" } }), context),
      describeError(zeroError(Code.Unavailable, "outcome_unavailable", { unavailable: ["ebook"] }), context),
    ];
    expect(lines).toEqual([
      "the API key was not accepted (401 unauthenticated): the unauthenticated message; make a key in the Console (http://127.0.0.1:8080/console) and set ZERO_API_KEY",
      'the API key may not do this (403 permission_denied): the permission_denied message; it needs the "build" scope: make a key that has it in the Console (http://127.0.0.1:8080/console) and set ZERO_API_KEY',
      "not found (404): the not_found message",
      "rate limited (429): the rate_limited message; retry in 120 s",
      "outcome unavailable (503): the outcome_unavailable message; cannot run here: ebook",
    ]);
    for (const text of lines) expect(text).not.toContain("\n");
  });

  it("name a missing scope once: the service's own message names it already", () => {
    const lacking = ZeroError.from(
      new ConnectError("this API key lacks the `build` scope", Code.PermissionDenied, undefined, [
        { desc: ErrorDetailSchema, value: create(ErrorDetailSchema, { type: "permission_denied", message: "this API key lacks the `build` scope" }) },
      ]),
    );
    expect(describeError(lacking, context)).toBe(
      "the API key may not do this (403 permission_denied): this API key lacks the `build` scope; make a key that has it in the Console (http://127.0.0.1:8080/console) and set ZERO_API_KEY",
    );
  });

  it("name the status that was answered: a proxy's 502 is not the service's 503", () => {
    const proxy = ZeroError.from(new ConnectError("HTTP 502", Code.Unavailable));
    expect(describeError(proxy, context)).toMatch(/^the service is unavailable \(502\): HTTP 502/);
    expect(describeError(zeroError(Code.Unavailable, "unavailable"), context)).toMatch(/^the service is unavailable \(503\): the unavailable message/);
  });
});
