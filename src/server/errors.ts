import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema, type ErrorDetail } from "../../gen/zero/v1/error_pb.js";

/**
 * Every error a client can see, with its HTTP status and Connect/gRPC code.
 * This table is the one place that decides them, for REST and RPC alike.
 */
const ERROR_TYPES = {
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
  // Chat (OpenAI-shaped bodies; see openAiErrorBody).
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

export interface ServiceErrorOptions {
  /** Overrides the table's status where one type has two (e.g. `model_not_found` 400 vs 404). */
  status?: number;
  /** Response headers that go with the error (`Retry-After`, `RateLimit-*`). */
  headers?: Record<string, string>;
  /** Extra fields of the error object. */
  unavailable?: string[];
  capacityState?: string;
  resetAt?: string;
  /** OpenAI's `param`, for chat errors. */
  param?: string;
  cause?: unknown;
}

/**
 * An error meant for the client. It is a ConnectError, so thrown from an RPC
 * it reaches Connect, gRPC and gRPC-Web clients with its code, headers and an
 * ErrorDetail; the REST adapter renders the same object as a JSON body.
 */
export class ServiceError extends ConnectError {
  readonly type: ErrorType;
  readonly status: number;
  readonly detail: ErrorDetail;
  readonly param: string | undefined;

  // ConnectError's own check answers by name, which would make every ConnectError a ServiceError.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && Object.prototype.isPrototypeOf.call(ServiceError.prototype, value);
  }

  constructor(type: ErrorType, message: string, options: ServiceErrorOptions = {}) {
    const detail = create(ErrorDetailSchema, {
      type,
      message,
      unavailable: options.unavailable ?? [],
      capacityState: options.capacityState,
      resetAt: options.resetAt,
    });
    super(
      message,
      ERROR_TYPES[type].code,
      new Headers(options.headers),
      [{ desc: ErrorDetailSchema, value: detail }],
      options.cause,
    );
    // `name` stays "ConnectError": Connect recognises its errors by name across module copies.
    this.type = type;
    this.status = options.status ?? ERROR_TYPES[type].status;
    this.detail = detail;
    this.param = options.param;
  }
}

/** Shorthands for the common cases. */
export const invalidRequest = (message: string, param?: string) =>
  new ServiceError("invalid_request", message, { param });
export const notFound = (message = "not found") => new ServiceError("not_found", message);

/**
 * Turns anything thrown into a ServiceError. Errors we did not raise on purpose
 * become a bare `internal` with no detail of the cause: stack traces and
 * internal messages never reach a client. `onUnexpected` gets the original.
 */
export function toServiceError(error: unknown, onUnexpected?: (error: unknown) => void): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof ConnectError) {
    // Connect-ES calls an undecodable protobuf body "internal"; it is the client's mistake.
    if (error.code === Code.Internal && /^parse binary: /.test(error.rawMessage)) {
      return new ServiceError("invalid_request", `the request is not valid protobuf: ${error.rawMessage.slice(14)}`);
    }
    const type = typeForCode(error.code);
    if (type === "internal") onUnexpected?.(error);
    return new ServiceError(type, type === "internal" ? "internal error" : error.rawMessage, {
      headers: Object.fromEntries(error.metadata.entries()),
    });
  }
  const sqlState = (error as { code?: unknown } | null)?.code;
  if (sqlState === "22021" || sqlState === "22P05") {
    // Text Postgres cannot store (a NUL character, an invalid byte sequence), wherever it came in.
    return new ServiceError("invalid_request", "text fields must not contain NUL characters or invalid Unicode");
  }
  if (isDatabaseDown(error)) {
    onUnexpected?.(error);
    return new ServiceError("unavailable", "the service is temporarily unavailable; try again shortly", {
      headers: { "Retry-After": "1" },
    });
  }
  onUnexpected?.(error);
  return new ServiceError("internal", "internal error");
}

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
    default:
      return "internal";
  }
}

const CONNECTION_ERROR_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "57P01", "57P03", "08006", "08001", "08003"]);

/** True when the database is away (refused, reset, shutting down), as opposed to a query bug. */
export function isDatabaseDown(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && CONNECTION_ERROR_CODES.has(code)) return true;
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === "string" &&
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message)
  );
}

/** The `/api` body: `{"error": {"type", "message", …extra}}`. */
export function apiErrorBody(error: ServiceError): { error: Record<string, unknown> } {
  const body: Record<string, unknown> = { type: error.type, message: error.detail.message };
  if (error.detail.unavailable.length > 0 || error.type === "outcome_unavailable") {
    body.unavailable = error.detail.unavailable;
  }
  if (error.detail.capacityState !== undefined) body.capacity_state = error.detail.capacityState;
  if (error.detail.resetAt !== undefined) body.reset_at = error.detail.resetAt;
  return { error: body };
}

/** The `/v1` body, in OpenAI's shape: `{"error": {"message", "type", "code", "param"}}`. */
export function openAiErrorBody(error: ServiceError): { error: Record<string, unknown> } {
  const body: Record<string, unknown> = {
    message: error.detail.message,
    type: error.type,
    code: error.type,
    param: error.param ?? null,
  };
  if (error.detail.capacityState !== undefined) body.capacity_state = error.detail.capacityState;
  if (error.detail.resetAt !== undefined) body.reset_at = error.detail.resetAt;
  return { error: body };
}
