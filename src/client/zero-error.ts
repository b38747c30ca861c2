import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../../gen/zero/v1/error_pb.js";
// The service's own error table, so both ends name codes alike.
import { typeForCode, type ErrorType } from "../api/errors.js";

/**
 * The error types the service sends in its `zero.v1.ErrorDetail` (SPEC.md's
 * tables for `/api` and `/v1`), plus `unreachable` for a server the client
 * could not talk to at all. Open-ended: a newer server may send new types.
 */
export type ZeroErrorType = ErrorType | "canceled" | "deadline_exceeded" | "unreachable" | (string & {});

/**
 * Every failure of a ZeroClient call. `type` is the service's own word for
 * it (from the ErrorDetail the server attaches), so callers branch on the
 * same strings the REST API documents instead of on transport codes.
 */
export class ZeroError extends Error {
  override readonly name = "ZeroError";
  /** The service's error type, e.g. `not_found`, `outcome_unavailable`. */
  readonly type: ZeroErrorType;
  /** The Connect/gRPC status code the call ended with. */
  readonly code: Code;
  /** True when the server itself described the error (an ErrorDetail came with it). */
  readonly fromServer: boolean;
  /** For `outcome_unavailable`: the outcomes that cannot run on this service. */
  readonly unavailable: readonly string[];
  /** From a `Retry-After` header, when the server sent one (429, some 503). */
  readonly retryAfterSeconds: number | undefined;
  /** For `zero_capacity_unavailable`: "exhausted". */
  readonly capacityState: string | undefined;
  /** For `zero_capacity_unavailable`: when the free pool resets, ISO-8601 UTC. */
  readonly resetAt: string | undefined;
  override readonly cause: ConnectError;

  constructor(cause: ConnectError) {
    const [detail] = cause.findDetails(ErrorDetailSchema);
    super(detail?.message || cause.rawMessage || codeName(cause.code));
    this.cause = cause;
    this.code = cause.code;
    this.fromServer = detail !== undefined;
    this.type = detail?.type || typeWithoutDetail(cause);
    this.unavailable = detail?.unavailable ?? [];
    this.capacityState = detail?.capacityState;
    this.resetAt = detail?.resetAt;
    const retryAfter = Number.parseInt(cause.metadata.get("retry-after") ?? "", 10);
    this.retryAfterSeconds = Number.isFinite(retryAfter) ? retryAfter : undefined;
  }

  /** Wraps anything a call threw; a ZeroError passes through unchanged. */
  static from(error: unknown): ZeroError {
    if (error instanceof ZeroError) return error;
    return new ZeroError(ConnectError.from(error));
  }
}

// Node's and undici's words for "nothing answered at that address".
const NETWORK_FAILURE = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ECONNRESET|EAI_AGAIN|fetch failed|Failed to fetch|NetworkError|Load failed/i;

/**
 * Errors without an ErrorDetail come from proxies, from the transport, or
 * from a server too old to send one: named after the code, the way the
 * service's own error table pairs them, so `type` is always meaningful.
 */
function typeWithoutDetail(error: ConnectError): ZeroErrorType {
  if ((error.code === Code.Unavailable || error.code === Code.Unknown || error.code === Code.Internal) && isNetworkFailure(error)) {
    return "unreachable";
  }
  if (error.code === Code.Canceled) return "canceled";
  if (error.code === Code.DeadlineExceeded) return "deadline_exceeded";
  return typeForCode(error.code);
}

function isNetworkFailure(error: unknown): boolean {
  // The useful words are often one or two causes deep (ConnectError → TypeError("fetch failed") → Error("connect ECONNREFUSED")).
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_FAILURE.test(code)) return true;
    if (NETWORK_FAILURE.test(current.message)) return true;
  }
  return false;
}

function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}
