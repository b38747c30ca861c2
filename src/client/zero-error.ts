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
  /** The Connect/gRPC status code the call ended with; `unavailable` for every call that never got through (`unreachable`), whatever the transport said. */
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
    // A transport failure surfaces as one of these codes; a cancelled call or a deadline keeps its own type.
    const failure = detail ? undefined : transportFailureOfCall(cause);
    super(detail?.message || (failure && TRANSPORT_FAILURE_MESSAGES[failure]) || (failure ? failureWords(cause) : cause.rawMessage) || codeName(cause.code));
    this.cause = cause;
    // fetch's transport says Unknown where connect-node and gRPC say Unavailable; one failure, one code.
    this.code = failure ? Code.Unavailable : cause.code;
    this.fromServer = detail !== undefined;
    this.type = detail?.type || (failure ? "unreachable" : typeWithoutDetail(cause));
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

/**
 * Why a call never got through to the service, when that is what happened:
 * `no_answer`, nothing answered at that address (refused, no such host, the
 * connection dropped); `not_tls`, `https://` to a server that speaks plain
 * HTTP; `tls`, any other failed TLS handshake (a certificate not trusted);
 * `not_http2`, gRPC (HTTP/2 without TLS) to a server that does not speak it.
 * Each is a ZeroError of type `unreachable`.
 */
export type TransportFailure = "no_answer" | "not_tls" | "tls" | "not_http2";

// Node's, undici's and browsers' words for each, tried in this order: the
// more telling words are often a cause or two deeper than "fetch failed".
const TRANSPORT_FAILURES: readonly (readonly [TransportFailure, RegExp])[] = [
  ["not_tls", /wrong version number|WRONG_VERSION_NUMBER/i],
  ["tls", /ERR_SSL_|ERR_TLS_|CERT_|_CERT|SELF_SIGNED|UNABLE_TO_VERIFY|EPROTO/],
  ["not_http2", /ERR_HTTP2_ERROR|ERR_HTTP2_SESSION_ERROR|ERR_HTTP2_INVALID_SESSION/],
  [
    "no_answer",
    /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ECONNRESET|ETIMEDOUT|EPIPE|EAI_AGAIN|UND_ERR_SOCKET|fetch failed|Failed to fetch|NetworkError|Load failed/i,
  ],
];

const TRANSPORT_CODES: ReadonlySet<Code> = new Set([Code.Unavailable, Code.Unknown, Code.Internal, Code.Aborted]);

/**
 * How a call failed to get through, from its error's code and words.
 * Connect reports a connection reset mid-call as `aborted` (the reset's
 * words are in its cause), which a caller never makes. A cancel is the
 * caller's own unless it is gRPC's stream closed from the connection's end:
 * a caller's abort carries its reason as the cause, whose words are the
 * caller's, so only the call's own message is read for it.
 */
function transportFailureOfCall(error: ConnectError): TransportFailure | undefined {
  if (TRANSPORT_CODES.has(error.code)) return transportFailureOf(error);
  if (error.code === Code.Canceled && STREAM_CLOSED_BY_PEER.test(error.rawMessage)) return "no_answer";
  return undefined;
}

const STREAM_CLOSED_BY_PEER = /stream closed with error code CANCEL/;

/** fetch's words for any failure to get through, where the failure itself is in its cause. */
const FETCH_FAILED = /^(?:fetch failed|Failed to fetch)$/i;

/**
 * What failed, as connect-node says it ("connect ECONNREFUSED 127.0.0.1:9"):
 * under fetch the call's own words are only "fetch failed", and undici puts
 * the failure in the cause (in browsers there is none, and the words stay).
 */
function failureWords(error: ConnectError): string {
  let words = error.rawMessage;
  if (!FETCH_FAILED.test(words)) return words;
  for (let current = error.cause, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    // An AggregateError (every address of a name refused) has no message of its own, only the code.
    if (current.message !== "" && !FETCH_FAILED.test(current.message)) words = current.message;
    else if (current.message === "" && typeof code === "string") words = code;
  }
  return words;
}

/** What to say instead of the transport's own words, where those are an OpenSSL or nghttp2 internal. */
const TRANSPORT_FAILURE_MESSAGES: Partial<Record<TransportFailure, string>> = {
  not_tls: "the server does not speak TLS (try http://)",
  not_http2: "the server does not speak HTTP/2 without TLS (h2c), which gRPC over http:// needs",
};

/** How `error` (a call's failure, or anything it wraps) failed to get through, or undefined when it did. */
export function transportFailureOf(error: unknown): TransportFailure | undefined {
  const words: string[] = [];
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") words.push(code);
    words.push(current.message);
  }
  return TRANSPORT_FAILURES.find(([, pattern]) => words.some((text) => pattern.test(text)))?.[0];
}

/**
 * Errors without an ErrorDetail come from proxies, from the transport, or
 * from a server too old to send one: named after the code, the way the
 * service's own error table pairs them, so `type` is always meaningful.
 */
function typeWithoutDetail(error: ConnectError): ZeroErrorType {
  if (error.code === Code.Canceled) return "canceled";
  if (error.code === Code.DeadlineExceeded) return "deadline_exceeded";
  return typeForCode(error.code);
}

function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}
