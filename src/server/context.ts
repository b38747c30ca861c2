import { createContextKey } from "@connectrpc/connect";
import type { RequestLogging } from "./request-info.js";

/**
 * Who is calling. Set by the one authorization step before any service
 * function runs; `undefined` only on public methods.
 */
export interface Principal {
  accountId: string;
  /** How the caller proved who they are. */
  via: "session" | "api_key";
  /** Scopes the credential carries; a session carries all of them. */
  scopes: readonly string[];
  /** The API key's id, or the session's id. */
  credentialId: string;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "principal" });

/** The request's logger, bound to its request id (made on first use), and where its failures are logged. */
export const requestLogKey = createContextKey<RequestLogging | undefined>(undefined, {
  description: "request log",
});

/** Runs the request's authentication again, answering the principal or throwing as the first run would. */
export const reauthenticateKey = createContextKey<(() => Promise<Principal>) | undefined>(undefined, { description: "reauthenticate" });

/** Set once the request passed the authorization step, so no later step repeats it. */
export const authorizedKey = createContextKey<boolean>(false, { description: "authorized" });

/** The peer's address, for per-address limits. */
export const clientAddressKey = createContextKey<string>("", { description: "client address" });

/**
 * For a client that reads an RPC's JSON form (Connect JSON, gRPC-Web or gRPC
 * with `+json`): a service may give, for each message it answers, the JSON
 * to send in its place, when the message's own JSON form cannot say what it
 * means. ChatService's does: protobuf JSON writes no `null` and no empty
 * list, and OpenAI's wire form has both (`"finish_reason": null`,
 * `"choices": []`). Unset for binary clients and for REST.
 */
export const jsonAnswersKey = createContextKey<string[] | undefined>(undefined, { description: "JSON answers" });
