import { getOption, hasOption, type DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import { access as accessOption, type Access } from "../../gen/zero/v1/access_pb.js";
import { isScope, type Scope, SCOPES } from "../api/scopes.js";
import { authorizedKey, principalKey, reauthenticateKey, type Principal } from "./context.js";
import { ServiceError } from "./errors.js";

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case, RFC 7235), or undefined. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  return authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
}

/** What a method demands of its caller, read from its `(zero.v1.access)` option. */
export interface AccessRule {
  mode: "public" | "session" | "account" | "key";
  /** The scope an API key must carry ("account" and "key"); empty where no key is asked for. */
  scope: Scope | "";
  /** Declared `idempotency_level = NO_SIDE_EFFECTS`: not a write, so no CSRF check. */
  readOnly: boolean;
}

const PUBLIC: AccessRule = { mode: "public", scope: "", readOnly: true };
const rules = new WeakMap<DescMethod, AccessRule>();

/**
 * The rule for a method. Our own methods must declare one (a test checks
 * it); the standard gRPC health and reflection services are public.
 */
export function accessRule(method: DescMethod): AccessRule {
  let rule = rules.get(method);
  if (!rule) {
    const readOnly = method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
    rule = hasOption(method, accessOption) ? toRule(getOption(method, accessOption), readOnly) : defaultRule(method);
    rules.set(method, rule);
  }
  return rule;
}

function toRule(option: Access, readOnly: boolean): AccessRule {
  if (option.mode !== "public" && option.mode !== "session" && option.mode !== "account" && option.mode !== "key") {
    throw new Error(`unknown access mode "${option.mode}"`);
  }
  if (option.mode === "account" || option.mode === "key") {
    // A misspelt scope would refuse every key; refuse the definition instead.
    if (!isScope(option.scope)) throw new Error(`access scope "${option.scope}" is not one of ${SCOPES.join(", ")}`);
    return { mode: option.mode, scope: option.scope, readOnly };
  }
  return { mode: option.mode, scope: "", readOnly };
}

function defaultRule(method: DescMethod): AccessRule {
  if (method.parent.typeName.startsWith("grpc.")) return PUBLIC;
  // Fail closed: a method of ours without a rule is nobody's (a session is refused a "key" method, and no key holds "").
  return { mode: "key", scope: "", readOnly: false };
}

/** What the auth module provides: who the credentials in these headers belong to. */
export interface Authenticator {
  /**
   * Resolves the caller for a method with the given rule, or throws a
   * ServiceError (401 / 403). Never called for public methods.
   */
  authenticate(request: AuthRequest): Promise<Principal>;
}

export interface AuthRequest {
  rule: AccessRule;
  /** Only read: a route with a credential in hand passes it without building a `Headers`. */
  headers: Pick<Headers, "get">;
  /** HTTP method: cookie-authenticated writes are checked against CSRF. */
  requestMethod: string;
  clientAddress: string;
}

/**
 * The one authorization step. The RPC interceptor runs it for every call,
 * and REST's pipeline runs it before it decodes the body (the interceptor
 * then sees it done); it stores the principal in the
 * handler context, where service functions read it with `requirePrincipal`.
 */
export async function authorize(
  authenticator: Authenticator,
  context: Pick<HandlerContext, "method" | "requestHeader" | "requestMethod" | "values">,
  clientAddress: string,
): Promise<void> {
  const rule = accessRule(context.method);
  if (rule.mode !== "public") {
    const request: AuthRequest = { rule, headers: context.requestHeader, requestMethod: context.requestMethod, clientAddress };
    context.values.set(principalKey, await authenticator.authenticate(request));
    context.values.set(reauthenticateKey, () => authenticator.authenticate(request));
  }
  context.values.set(authorizedKey, true);
}

/**
 * Checks the caller's credential again, for a call that outlives a request
 * (a watch): once its key is revoked or its session has ended, it throws the
 * 401 a new call would get, rather than serving on what was true at the start.
 */
export async function requireStillAuthenticated(context: HandlerContext): Promise<void> {
  const reauthenticate = context.values.get(reauthenticateKey);
  if (!reauthenticate) throw new ServiceError("unauthenticated", "authentication required");
  await reauthenticate();
}

/** The caller of a non-public method. */
export function requirePrincipal(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  if (!principal) throw new ServiceError("unauthenticated", "authentication required");
  return principal;
}
