import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema, type ErrorDetail } from "../../gen/zero/v1/error_pb.js";
import { ERROR_TYPES, protobufParseFailure, typeForCode, type ErrorType } from "../api/errors.js";
import { isDatabaseDown, isUnstorableText } from "../db/errors.js";

export type { ErrorType };

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
      param: options.param,
    });
    super(message, codeFor(type, options.status), new Headers(options.headers), [{ desc: ErrorDetailSchema, value: detail }], options.cause);
    // `name` stays "ConnectError": Connect recognises its errors by name across module copies.
    this.type = type;
    this.status = options.status ?? ERROR_TYPES[type].status;
    this.detail = detail;
  }
}

/**
 * The Connect code of a type, or, where the status is overridden, the code
 * of that status (a prefixed model is `model_not_found` with 400, so an RPC
 * sees an invalid argument, as REST sees a 400).
 */
function codeFor(type: ErrorType, status: number | undefined): Code {
  if (status === undefined || status === ERROR_TYPES[type].status) return ERROR_TYPES[type].code;
  return Object.values(ERROR_TYPES).find((entry) => entry.status === status)?.code ?? ERROR_TYPES[type].code;
}

/** Shorthands for the common cases. */
export const invalidRequest = (message: string, param?: string) => new ServiceError("invalid_request", message, { param });
export const notFound = (message = "not found") => new ServiceError("not_found", message);

/**
 * Turns anything thrown into a ServiceError. Errors we did not raise on purpose
 * become a bare `internal` with no detail of the cause: stack traces and
 * internal messages never reach a client. `onUnexpected` gets the original;
 * so does `onDatabaseDown` (by default `onUnexpected`) when the database is
 * away, which is the documented 503 and no bug.
 */
export function toServiceError(
  error: unknown,
  onUnexpected?: (error: unknown) => void,
  onDatabaseDown: ((error: unknown) => void) | undefined = onUnexpected,
): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof ConnectError) {
    // Connect-ES calls an undecodable protobuf body "internal"; it is the client's mistake.
    const parseFailure = error.code === Code.Internal ? protobufParseFailure(error.rawMessage) : undefined;
    if (parseFailure !== undefined) return new ServiceError("invalid_request", `the request is not valid protobuf: ${parseFailure}`);
    const type = typeForCode(error.code);
    if (type === "internal") onUnexpected?.(error);
    return new ServiceError(type, type === "internal" ? "internal error" : error.rawMessage, {
      headers: Object.fromEntries(error.metadata.entries()),
    });
  }
  if (isUnstorableText(error)) {
    // Text Postgres cannot store (a NUL character, half a surrogate pair in jsonb), wherever it came in.
    return new ServiceError("invalid_request", "text fields must not contain NUL characters or invalid Unicode");
  }
  if (isDatabaseDown(error)) {
    onDatabaseDown?.(error);
    return new ServiceError("unavailable", "the service is temporarily unavailable; try again shortly", {
      headers: { "Retry-After": "1" },
    });
  }
  onUnexpected?.(error);
  return new ServiceError("internal", "internal error");
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
    param: error.detail.param ?? null,
  };
  if (error.detail.capacityState !== undefined) body.capacity_state = error.detail.capacityState;
  if (error.detail.resetAt !== undefined) body.reset_at = error.detail.resetAt;
  return { error: body };
}
