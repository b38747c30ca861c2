import { Code, ConnectError, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { CapabilitiesService } from "../../../gen/zero/v1/capabilities_pb.js";
import { ConsoleService } from "../../../gen/zero/v1/console_pb.js";
import { ExecutionService } from "../../../gen/zero/v1/execution_pb.js";
import { ERROR_TYPES } from "../../api/errors.js";

// Same origin: the session cookie rides along (fetch's default "same-origin"
// credentials) and the browser adds the Origin header the CSRF check wants.
const transport = createConnectTransport({ baseUrl: window.location.origin });

export const consoleApi: Client<typeof ConsoleService> = createClient(ConsoleService, transport);
export const executionsApi: Client<typeof ExecutionService> = createClient(ExecutionService, transport);
export const capabilitiesApi: Client<typeof CapabilitiesService> = createClient(CapabilitiesService, transport);

/**
 * For the reads the page repeats on its own (the list, one plan): a read
 * that never answers (its connection died while the laptop slept) fails
 * after this instead of holding up every read after it. Not for streams,
 * which run for as long as a plan does, nor for writes, whose outcome a
 * timeout would leave unknown.
 */
export const READ_TIMEOUT: CallOptions = { timeoutMs: 15_000 };

export const UNREACHABLE = "Could not reach the service. Check your connection and try again.";
export const UNAVAILABLE = "The service is unavailable. Try again shortly.";

/** True for a message saying the service could not be reached or was away: an answer from it since makes it untrue. */
export function saysServiceAway(message: string): boolean {
  return message === UNREACHABLE || message === UNAVAILABLE;
}

/** The server's own words for a failure; it writes them for people. */
export function errorMessage(error: unknown): string {
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.Unavailable && connectError.rawMessage === "") return UNAVAILABLE;
  if (connectError.code === Code.Unknown && /fetch|network/i.test(connectError.rawMessage)) return UNREACHABLE;
  const message = sentence(connectError.rawMessage || "Something went wrong. Try again.");
  const retryAfter = Number.parseInt(connectError.metadata.get("retry-after") ?? "", 10);
  if (connectError.code !== Code.ResourceExhausted || !Number.isFinite(retryAfter) || retryAfter <= 0) return message;
  // The server says "try again later" and sends the wait in Retry-After: say the wait.
  const wait = waitInWords(retryAfter);
  const later = "try again later.";
  const withoutLater = message.toLowerCase().endsWith(later)
    ? message
        .slice(0, -later.length)
        .trimEnd()
        .replace(/[;,.]$/, "")
    : message;
  return withoutLater === message ? `${message} Try again in ${wait}.` : `${withoutLater}; try again in ${wait}.`;
}

/** "45 seconds", "15 minutes", "2 hours": rounded up, so waiting that long is enough. */
function waitInWords(seconds: number): string {
  const [count, unit] = seconds < 60 ? [seconds, "second"] : seconds < 90 * 60 ? [Math.ceil(seconds / 60), "minute"] : [Math.ceil(seconds / 3600), "hour"];
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}

export function errorCode(error: unknown): Code {
  return ConnectError.from(error).code;
}

/** True for errors that mean the session is gone, so the Console should show sign-in. */
export function isSignedOut(error: unknown): boolean {
  return errorCode(error) === Code.Unauthenticated;
}

/** True when the plan (or other thing) asked for does not exist, or is not the caller's. */
export function isNotFound(error: unknown): boolean {
  return errorCode(error) === ERROR_TYPES.not_found.code;
}

/** True when the thing's state does not allow the action (409): it changed since the page last read it. */
export function isConflict(error: unknown): boolean {
  return errorCode(error) === ERROR_TYPES.conflict.code;
}

/** True when the server has no such method (e.g. executions not served by this build). */
export function isUnimplemented(error: unknown): boolean {
  return errorCode(error) === Code.Unimplemented;
}

/** The service's words as a sentence: capitalised, with a full stop. */
export function sentence(text: string): string {
  const trimmed = text.trim();
  const capitalised = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capitalised) ? capitalised : `${capitalised}.`;
}
