import { ERROR_TYPES, typeForCode, type ErrorType } from "../api/errors.js";
import type { ZeroError } from "../client/zero-client.js";
import { transportFailureOf } from "../client/zero-error.js";
import { trimEndOf } from "../strings.js";

/** What `project-zero` exits with, so scripts can branch without reading text. */
export const ExitCode = {
  /** Done: the plan succeeded, the command did what it was asked. */
  ok: 0,
  /** The plan ended without its result: failed or interrupted (resumable), or cancelled. */
  failed: 1,
  /** Bad command line or --url, or a request the service refused as invalid (goal too short; 409, not in the plan's state). */
  usage: 2,
  /** No key, a key the service does not accept (401), or one without the scope (403). */
  auth: 3,
  /** No such plan for this key (404). */
  notFound: 4,
  /** Rate limited (429), the service failed (5xx) or the outcome is unavailable (503), or no project-zero service answered. */
  unavailable: 5,
  /** Stopped at the approval gate without approval; resume with `--approve review`. */
  atGate: 6,
  /** Ctrl-C: stopped following (the plan keeps running on the service). */
  interrupted: 130,
  /** Whoever read the output has gone (`… | head -1`): 128 + SIGPIPE, as a shell reports `cat` or `git log` ended the same way. */
  outputClosed: 141,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * The exit code for each error type the service sends (and the client's own),
 * written out for every one so that a new type has to be placed. None is 1:
 * that says the plan failed, not that a call did.
 */
const EXIT_CODES = {
  invalid_request: ExitCode.usage,
  program_mismatch: ExitCode.usage,
  method_not_allowed: ExitCode.usage,
  payload_too_large: ExitCode.usage,
  unsupported_media_type: ExitCode.usage,
  idempotency_key_reused: ExitCode.usage,
  // 409: the request does not fit the plan's state (cancel a succeeded plan, revise one not at the gate).
  conflict: ExitCode.usage,
  unauthenticated: ExitCode.auth,
  invalid_api_key: ExitCode.auth,
  permission_denied: ExitCode.auth,
  insufficient_scope: ExitCode.auth,
  not_found: ExitCode.notFound,
  model_not_found: ExitCode.notFound,
  rate_limited: ExitCode.unavailable,
  zero_capacity_unavailable: ExitCode.unavailable,
  unavailable: ExitCode.unavailable,
  outcome_unavailable: ExitCode.unavailable,
  upstream_error: ExitCode.unavailable,
  upstream_timeout: ExitCode.unavailable,
  deadline_exceeded: ExitCode.unavailable,
  idempotency_key_in_progress: ExitCode.unavailable,
  // The service's own fault (500): like a 503, something to try again later, not the caller's doing.
  internal: ExitCode.unavailable,
  unreachable: ExitCode.unavailable,
  canceled: ExitCode.interrupted,
} as const satisfies Record<ErrorType | "unreachable" | "canceled", ExitCode>;

/** The exit code for a failed call, by the service's error type; a type this CLI does not know (a newer service's) by its code. */
export function exitCodeFor(error: ZeroError): ExitCode {
  return Object.hasOwn(EXIT_CODES, error.type) ? EXIT_CODES[error.type as keyof typeof EXIT_CODES] : EXIT_CODES[typeForCode(error.code)];
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
  if (error.type === "unreachable") {
    // Advice only where nothing answered: a TLS mismatch or a refused certificate says what is wrong itself.
    return `cannot reach ${context.baseUrl}: ${message}${transportFailureOf(error.cause) === "no_answer" ? "; is the service running? (start one with: project-zero serve)" : ""}`;
  }
  // Narrowed to the error table's types, so each line's HTTP status is the table's, unless another status was
  // answered: a proxy's 502 before the service is not the service's 503.
  const type = Object.hasOwn(ERROR_TYPES, error.type) ? (error.type as ErrorType) : undefined;
  const status = answeredStatus(error) ?? (type === undefined ? undefined : ERROR_TYPES[type].status);
  switch (type) {
    case "unauthenticated":
    case "invalid_api_key":
      return `the API key was not accepted (${status} ${type}): ${message}; ${keyHelp}`;
    case "permission_denied":
    case "insufficient_scope": {
      // The service's message names the scope (`build`); another's may not, and then the line does.
      const named = message.includes(`\`${context.scope}\``);
      return `the API key may not do this (${status} ${type}): ${message}; ${named ? "" : `it needs the "${context.scope}" scope: `}make a key that has it in the Console (${context.baseUrl}/console) and set ZERO_API_KEY`;
    }
    case "not_found":
      return `not found (${status}): ${message}`;
    case "conflict":
      return `conflict (${status}): ${message}`;
    case "rate_limited":
      return `rate limited (${status}): ${message}${error.retryAfterSeconds !== undefined ? `; retry in ${error.retryAfterSeconds} s` : ""}`;
    case "zero_capacity_unavailable":
      return `the free pool is used up (${status}): ${message}${error.resetAt ? `; it refills at ${error.resetAt}` : ""}`;
    case "outcome_unavailable":
      return `outcome unavailable (${status}): ${message}${error.unavailable.length > 0 ? `; cannot run here: ${error.unavailable.join(", ")}` : ""}`;
    case "unavailable":
      // The service's message says whether waiting helps: starting up does, no upstream configured does not.
      return `the service is unavailable (${status}): ${message}`;
    default:
      return `${error.type}: ${message}`;
  }
}

/**
 * The HTTP status of an answer that was not the service's own (no ErrorDetail came with it), where the transport
 * named the error after it (Connect's and the download's `HTTP 502`).
 */
function answeredStatus(error: ZeroError): number | undefined {
  if (error.fromServer) return undefined;
  const status = /^HTTP (\d{3})$/.exec(error.cause.rawMessage)?.[1];
  return status === undefined ? undefined : Number(status);
}
