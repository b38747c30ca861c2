import type { ZeroError } from "../client/zero-client.js";
import { trimEndOf } from "../strings.js";

/** What `project-zero` exits with, so scripts can branch without reading text. */
export const ExitCode = {
  /** Done: the plan succeeded, the command did what it was asked. */
  ok: 0,
  /** The plan failed or was interrupted (resumable), or an unexpected error. */
  failed: 1,
  /** Bad command line, or a request the service refused as invalid (e.g. goal too short). */
  usage: 2,
  /** No key, a key the service does not accept (401), or one without the scope (403). */
  auth: 3,
  /** No such plan for this key (404). */
  notFound: 4,
  /** Rate limited (429), or the service or the outcome is unavailable (503, unreachable). */
  unavailable: 5,
  /** Stopped at the approval gate without approval; resume with `--approve review`. */
  atGate: 6,
  /** Ctrl-C: stopped following (the plan keeps running on the service). */
  interrupted: 130,
  /** Whoever read the output has gone (`… | head -1`): 128 + SIGPIPE, as a shell reports `cat` or `git log` ended the same way. */
  outputClosed: 141,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit code for a failed call, by the service's error type. */
export function exitCodeFor(error: ZeroError): ExitCode {
  switch (error.type) {
    case "unauthenticated":
    case "invalid_api_key":
    case "permission_denied":
    case "insufficient_scope":
      return ExitCode.auth;
    case "not_found":
    case "model_not_found":
      return ExitCode.notFound;
    case "rate_limited":
    case "zero_capacity_unavailable":
    case "unavailable":
    case "outcome_unavailable":
    case "upstream_error":
    case "upstream_timeout":
    case "unreachable":
    case "deadline_exceeded":
      return ExitCode.unavailable;
    case "invalid_request":
    case "program_mismatch":
      return ExitCode.usage;
    case "canceled":
      return ExitCode.interrupted;
    default:
      return ExitCode.failed;
  }
}

export interface ErrorContext {
  baseUrl: string;
  /** The scope the command's calls need, named in a 403's advice. */
  scope: string;
}

/** One line a person can act on, for a failed call. */
export function describeError(error: ZeroError, context: ErrorContext): string {
  const message = trimEndOf(error.message, ". \t\r\n");
  const keyHelp = `make a key in the Console (${context.baseUrl}/console) and set ZERO_API_KEY`;
  switch (error.type) {
    case "unauthenticated":
    case "invalid_api_key":
      return `the API key was not accepted (401 ${error.type}): ${message}; ${keyHelp}`;
    case "permission_denied":
    case "insufficient_scope":
      return `the API key may not do this (403 ${error.type}): ${message}; it needs the "${context.scope}" scope`;
    case "not_found":
      return `not found (404): ${message}`;
    case "rate_limited":
      return `rate limited (429): ${message}${error.retryAfterSeconds !== undefined ? `; retry in ${error.retryAfterSeconds} s` : ""}`;
    case "zero_capacity_unavailable":
      return `the free pool is used up (429): ${message}${error.resetAt ? `; it refills at ${error.resetAt}` : ""}`;
    case "outcome_unavailable":
      return `outcome unavailable (503): ${message}${error.unavailable.length > 0 ? `; cannot run here: ${error.unavailable.join(", ")}` : ""}`;
    case "unavailable":
      return `the service is unavailable (503): ${message}; try again shortly`;
    case "unreachable":
      return `cannot reach ${context.baseUrl}: ${message}; is the service running? (start one with: project-zero serve)`;
    default:
      return `${error.type}: ${message}`;
  }
}
