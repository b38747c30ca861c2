import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { CapabilitiesService } from "../../../gen/zero/v1/capabilities_pb.js";
import { ConsoleService } from "../../../gen/zero/v1/console_pb.js";
import { ExecutionService } from "../../../gen/zero/v1/execution_pb.js";

// Same origin: the session cookie rides along (fetch's default "same-origin"
// credentials) and the browser adds the Origin header the CSRF check wants.
const transport = createConnectTransport({ baseUrl: window.location.origin });

export const consoleApi: Client<typeof ConsoleService> = createClient(ConsoleService, transport);
export const executionsApi: Client<typeof ExecutionService> = createClient(ExecutionService, transport);
export const capabilitiesApi: Client<typeof CapabilitiesService> = createClient(CapabilitiesService, transport);

/** The server's own words for a failure; it writes them for people. */
export function errorMessage(error: unknown): string {
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.Unavailable && connectError.rawMessage === "") return "The service is unavailable. Try again shortly.";
  if (connectError.code === Code.Unknown && /fetch|network/i.test(connectError.rawMessage)) {
    return "Could not reach the service. Check your connection and try again.";
  }
  return sentence(connectError.rawMessage || "Something went wrong. Try again.");
}

export function errorCode(error: unknown): Code {
  return ConnectError.from(error).code;
}

/** True for errors that mean the session is gone, so the Console should show sign-in. */
export function isSignedOut(error: unknown): boolean {
  return errorCode(error) === Code.Unauthenticated;
}

/** True when the server has no such method (e.g. executions not served by this build). */
export function isUnimplemented(error: unknown): boolean {
  return errorCode(error) === Code.Unimplemented;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  const capitalised = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capitalised) ? capitalised : `${capitalised}.`;
}
