import type { Kysely } from "kysely";
import { SCOPES } from "../api/scopes.js";
import type { Config } from "../config.js";
import type { Database } from "../db/schema.js";
import { type Authenticator, type AuthRequest, bearerToken } from "../server/access.js";
import type { Principal } from "../server/context.js";
import { ServiceError } from "../server/errors.js";
import { findLiveSession } from "./accounts.js";
import type { ApiKeyCache } from "./api-key-cache.js";
import { crossSiteRefusal, ownOriginCheck } from "./browser-origin.js";
import { API_KEY_PATTERN } from "./secrets.js";
import { readSessionToken } from "./session-cookie.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The one authentication layer for REST and RPC alike.
 * - `Authorization: Bearer zk_…` is an API key: unknown and revoked keys are
 *   the same 401; a key without the method's scope is 403; a key is never
 *   accepted where a session is required (key management). Keys are looked
 *   up through `apiKeys`, which remembers live ones (see ApiKeyCache).
 * - Otherwise the `zero_session` cookie, where the method allows it. A cookie
 *   on a write must come with this service's own `Origin` (CSRF).
 * - The chat gateway takes keys only (mode "key", as OpenAI's API does), and
 *   its refusals carry OpenAI's names: `invalid_api_key`, `insufficient_scope`.
 */
export function createAuthenticator(deps: { db: Kysely<Database>; config: Config; apiKeys: ApiKeyCache }): Authenticator {
  const isOwnOrigin = ownOriginCheck(deps.config.publicUrl);
  return {
    // Not async itself: a key's promise is handed back as it is, rather than adopted by another.
    authenticate(request: AuthRequest): Promise<Principal> {
      const authorization = request.headers.get("authorization");
      if (authorization !== null) return authenticateKey(request, authorization);
      return authenticateCookie(request);
    },
  };

  async function authenticateKey(request: AuthRequest, authorization: string): Promise<Principal> {
    const secret = bearerToken(authorization);
    // A remembered key is checked without an await, as most requests' keys are.
    const key = secret && API_KEY_PATTERN.test(secret) ? (deps.apiKeys.remembered(secret) ?? (await deps.apiKeys.find(secret))) : undefined;
    const keyOnly = request.rule.mode === "key";
    if (!key) throw new ServiceError(keyOnly ? "invalid_api_key" : "unauthenticated", "invalid or revoked API key");
    if (request.rule.mode === "session") {
      throw new ServiceError("permission_denied", "API keys cannot do this; sign in to the Console");
    }
    if (!key.scopes.includes(request.rule.scope)) {
      throw new ServiceError(keyOnly ? "insufficient_scope" : "permission_denied", `this API key lacks the \`${request.rule.scope}\` scope`);
    }
    deps.apiKeys.recordUse(key);
    return { accountId: key.account_id, via: "api_key", scopes: key.scopes, credentialId: key.id };
  }

  async function authenticateCookie(request: AuthRequest): Promise<Principal> {
    if (request.rule.mode === "key") throw new ServiceError("invalid_api_key", "no API key: send it as `Authorization: Bearer <API_KEY>`");
    const token = readSessionToken(request.headers.get("cookie"));
    if (token !== undefined) return authenticateSession(request, token);
    throw new ServiceError("unauthenticated", "authentication required: send an API key as `Authorization: Bearer <key>`, or sign in");
  }

  async function authenticateSession(request: AuthRequest, token: string): Promise<Principal> {
    const session = await findLiveSession(deps.db, token);
    if (!session) throw new ServiceError("unauthenticated", "the session has ended; sign in again");
    const isWrite = !request.rule.readOnly && !SAFE_METHODS.has(request.requestMethod.toUpperCase());
    if (isWrite && !isOwnOrigin(request.headers)) throw crossSiteRefusal(deps.config.publicUrl, request.headers.get("origin"));
    return { accountId: session.account_id, via: "session", scopes: SCOPES, credentialId: session.id };
  }
}
