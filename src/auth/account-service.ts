import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import {
  changePassword,
  createAccount,
  createApiKey,
  createSession,
  findAccount,
  findAccountByEmail,
  listApiKeys,
  MAX_LIVE_KEYS,
  revokeApiKey,
  revokeSession,
} from "./accounts.js";
import type { ApiKeyCache } from "./api-key-cache.js";
import { crossSiteRefusal, ownOriginCheck } from "./browser-origin.js";
import type { Account, ApiKeyRow } from "../db/tables/auth.table.js";
import { checkPasswordLength, parseEmail } from "./credentials.js";
import { decoyPasswordHash, verifyPassword } from "./secrets.js";
import { clearedSessionCookie, sessionCookie } from "./session-cookie.js";
import { beginSignIn, checkSignUpAllowed, DEFAULT_SIGN_IN_LIMITS, type SignInLimits } from "./sign-in-limiter.js";
import { KEY_NAME_MAX_LENGTH } from "../api/limits.js";
import { isScope, SCOPES } from "../api/scopes.js";
import type { Config } from "../config.js";
import type { Database } from "../db/schema.js";
import { requirePrincipal } from "../server/access.js";
import { clientAddressKey } from "../server/context.js";
import { invalidRequest, ServiceError } from "../server/errors.js";

export interface AccountServiceDeps {
  db: Kysely<Database>;
  config: Config;
  /** Told of each revocation, so the key is refused from the very next request on this instance. */
  apiKeys: Pick<ApiKeyCache, "forget">;
  signInLimits?: SignInLimits;
}

/** The account use cases behind ConsoleService: sign-up, sign-in, sessions and API keys. */
export function accountService(deps: AccountServiceDeps): ServiceImpl<typeof ConsoleService> {
  const secureCookies = deps.config.publicUrl.startsWith("https:");
  const limits = deps.signInLimits ?? { ...DEFAULT_SIGN_IN_LIMITS, signUpsPerAddressPerHour: deps.config.signUpsPerAddressPerHour };

  const isOwnOrigin = ownOriginCheck(deps.config.publicUrl);

  const sendSessionCookie = (context: HandlerContext, session: { token: string }) => {
    context.responseHeader.append("set-cookie", sessionCookie(session.token, secureCookies));
  };

  // Browsers send an Origin with every POST: a page elsewhere (or on a rebound host name) must not create
  // accounts or sessions through a visitor. Clients that send none (curl, the CLI) are not browsers. Here
  // rather than in the authenticator, which never sees these two public methods.
  const refuseOtherSites = (context: HandlerContext) => {
    if (context.requestHeader.has("origin") && !isOwnOrigin(context.requestHeader)) {
      throw crossSiteRefusal(deps.config.publicUrl, context.requestHeader.get("origin"));
    }
  };

  return {
    async signUp(request, context) {
      refuseOtherSites(context);
      const email = parseEmail(request.email);
      checkPasswordLength(request.password);
      await checkSignUpAllowed(deps.db, context.values.get(clientAddressKey), limits);
      const result = await createAccount(deps.db, {
        email,
        password: request.password,
        onlyFirst: deps.config.signup === "closed",
      });
      if ("refused" in result) {
        if (result.refused === "signup_closed") {
          throw new ServiceError("permission_denied", "sign-up is closed on this service");
        }
        throw new ServiceError("conflict", "an account with this email already exists; sign in instead");
      }
      sendSessionCookie(context, result.session);
      return { account: toAccountMessage(result.account) };
    },

    async signIn(request, context) {
      refuseOtherSites(context);
      // A malformed e-mail or password can never match an account, so it costs no attempt and no hash.
      const email = parseEmail(request.email);
      checkPasswordLength(request.password, { policy: false });
      const account = await findAccountByEmail(deps.db, email);
      const attempt = await beginSignIn(deps.db, { email, address: context.values.get(clientAddressKey), account }, limits);
      // Unknown emails cost the same time as wrong passwords.
      const valid = await verifyPassword(request.password, account?.password_hash ?? (await decoyPasswordHash()));
      // A password changed since it was read is a wrong one now: that sign-in gets no session.
      const session = account && valid ? await createSession(deps.db, account) : undefined;
      if (!account || !session) throw new ServiceError("unauthenticated", "the email or password is incorrect");
      await attempt.succeeded(account.id);
      sendSessionCookie(context, session);
      return { account: toAccountMessage(account) };
    },

    async signOut(_request, context) {
      const principal = requirePrincipal(context);
      await revokeSession(deps.db, principal.credentialId);
      context.responseHeader.append("set-cookie", clearedSessionCookie(secureCookies));
      return {};
    },

    async getSession(_request, context) {
      const principal = requirePrincipal(context);
      const account = await findAccount(deps.db, principal.accountId);
      if (!account) throw new ServiceError("unauthenticated", "the session has ended; sign in again");
      return { account: toAccountMessage(account) };
    },

    async createApiKey(request, context) {
      const principal = requirePrincipal(context);
      const name = request.name.trim();
      if (name.length === 0 || [...name].length > KEY_NAME_MAX_LENGTH) {
        throw invalidRequest(`give the key a name of 1 to ${KEY_NAME_MAX_LENGTH} characters`, "name");
      }
      const scopes = [...new Set(request.scopes)];
      const unknown = scopes.filter((s) => !isScope(s));
      if (scopes.length === 0 || unknown.length > 0) {
        throw invalidRequest(`choose scopes from ${SCOPES.join(", ")}${unknown.length ? ` (unknown: ${unknown.join(", ")})` : ""}`, "scopes");
      }
      const created = await createApiKey(deps.db, { accountId: principal.accountId, name, scopes });
      if (!created) throw invalidRequest(`an account may hold at most ${MAX_LIVE_KEYS} live API keys; revoke one first`);
      return { secret: created.secret, apiKey: toApiKeyMessage(created.key) };
    },

    async changePassword(request, context) {
      const principal = requirePrincipal(context);
      checkPasswordLength(request.currentPassword, { field: "current_password", policy: false });
      checkPasswordLength(request.newPassword, { field: "new_password" });
      const account = await findAccount(deps.db, principal.accountId);
      if (!account) throw new ServiceError("unauthenticated", "the session has ended; sign in again");
      // Guessing the current password through a stolen session is limited like signing in.
      const attempt = await beginSignIn(deps.db, { email: account.email, address: context.values.get(clientAddressKey), account }, limits);
      const valid = await verifyPassword(request.currentPassword, account.password_hash);
      // Every device is signed out, this one included; it continues on a new token.
      const session = valid ? await changePassword(deps.db, account, request.newPassword) : undefined;
      // Undefined too when another change came first: the password verified is no longer the current one.
      if (!session) throw invalidRequest("the current password is incorrect", "current_password");
      await attempt.succeeded(account.id);
      sendSessionCookie(context, session);
      return {};
    },

    async listApiKeys(_request, context) {
      const principal = requirePrincipal(context);
      const keys = await listApiKeys(deps.db, principal.accountId);
      return { apiKeys: keys.map(toApiKeyMessage) };
    },

    async revokeApiKey(request, context) {
      const principal = requirePrincipal(context);
      if (!(await revokeApiKey(deps.db, principal.accountId, request.id))) {
        throw new ServiceError("not_found", "no such API key");
      }
      deps.apiKeys.forget(request.id);
      return {};
    },
  };
}

function toAccountMessage(account: Account) {
  return { id: account.id, email: account.email, createdAt: timestampFromDate(account.created_at) };
}

function toApiKeyMessage(key: ApiKeyRow) {
  return {
    id: key.id,
    name: key.name,
    scopes: key.scopes,
    prefix: key.prefix,
    createdAt: timestampFromDate(key.created_at),
    lastUsedAt: key.last_used_at ? timestampFromDate(key.last_used_at) : undefined,
    revokedAt: key.revoked_at ? timestampFromDate(key.revoked_at) : undefined,
  };
}
