import { Code } from "@connectrpc/connect";

/**
 * Every error a client can see, with its HTTP status and Connect/gRPC code.
 * This table is the one place that decides them, for REST and RPC alike, and
 * the client reads the same table to name a code that came without detail.
 */
export const ERROR_TYPES = {
  invalid_request: { status: 400, code: Code.InvalidArgument },
  unauthenticated: { status: 401, code: Code.Unauthenticated },
  permission_denied: { status: 403, code: Code.PermissionDenied },
  not_found: { status: 404, code: Code.NotFound },
  method_not_allowed: { status: 405, code: Code.Unimplemented },
  conflict: { status: 409, code: Code.AlreadyExists },
  payload_too_large: { status: 413, code: Code.ResourceExhausted },
  unsupported_media_type: { status: 415, code: Code.InvalidArgument },
  rate_limited: { status: 429, code: Code.ResourceExhausted },
  internal: { status: 500, code: Code.Internal },
  unavailable: { status: 503, code: Code.Unavailable },
  outcome_unavailable: { status: 503, code: Code.Unavailable },
  /** An RPC's own deadline (`connect-timeout-ms`, `grpc-timeout`) ran out; REST calls have none. */
  deadline_exceeded: { status: 504, code: Code.DeadlineExceeded },
  // Chat (OpenAI-shaped bodies under /v1).
  model_not_found: { status: 404, code: Code.NotFound },
  program_mismatch: { status: 422, code: Code.InvalidArgument },
  invalid_api_key: { status: 401, code: Code.Unauthenticated },
  insufficient_scope: { status: 403, code: Code.PermissionDenied },
  zero_capacity_unavailable: { status: 429, code: Code.ResourceExhausted },
  idempotency_key_reused: { status: 422, code: Code.InvalidArgument },
  idempotency_key_in_progress: { status: 409, code: Code.Aborted },
  upstream_error: { status: 502, code: Code.Unavailable },
  upstream_timeout: { status: 504, code: Code.DeadlineExceeded },
} as const satisfies Record<string, { status: number; code: Code }>;

export type ErrorType = keyof typeof ERROR_TYPES;

/**
 * Error types that say "try again shortly" (upstream 5xx, timeouts, 429 from
 * the model or the free pool's units in flight): a stage failing with one is
 * retried in place, with backoff, before it fails. Every other type fails at once.
 */
export const TRANSIENT_ERROR_TYPES: ReadonlySet<string> = new Set<ErrorType>([
  "upstream_error",
  "upstream_timeout",
  "zero_capacity_unavailable",
  "unavailable",
]);

/**
 * What a stage fails with when every upstream refused the service's own key,
 * account or model name (401, 402, 403, 404). Not transient: only the operator mends
 * ZERO_UPSTREAMS. A gateway client sees the same message as an `upstream_error`.
 */
export const UPSTREAM_MISCONFIGURED = "upstream_misconfigured";

/** The error type a bare Connect code stands for, when no ErrorDetail says more. */
export function typeForCode(code: Code): ErrorType {
  switch (code) {
    case Code.InvalidArgument:
    case Code.OutOfRange:
    case Code.FailedPrecondition:
      return "invalid_request";
    case Code.Unauthenticated:
      return "unauthenticated";
    case Code.PermissionDenied:
      return "permission_denied";
    case Code.NotFound:
      return "not_found";
    case Code.AlreadyExists:
    case Code.Aborted:
      return "conflict";
    case Code.ResourceExhausted:
      return "rate_limited";
    case Code.Unimplemented:
      return "method_not_allowed";
    case Code.Unavailable:
      return "unavailable";
    case Code.DeadlineExceeded:
      return "deadline_exceeded";
    default:
      return "internal";
  }
}

/**
 * Connect-ES words an undecodable protobuf body as `parse binary: …` and
 * calls it `internal`; the service answers it as the client's mistake.
 * Returns what follows the prefix, or undefined for any other message.
 */
export function protobufParseFailure(message: string): string | undefined {
  return message.startsWith(PARSE_FAILURE_PREFIX) ? message.slice(PARSE_FAILURE_PREFIX.length) : undefined;
}

const PARSE_FAILURE_PREFIX = "parse binary: ";
