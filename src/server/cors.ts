import { cors as connectCors } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "./node-http.js";

/** Headers browsers may send besides Connect's and gRPC-Web's: keys, retries, and the OpenAI SDKs' own. */
const EXTRA_ALLOWED_HEADERS = ["Authorization", "Idempotency-Key", "OpenAI-Organization", "OpenAI-Project", "OpenAI-Beta"];
/** Headers a browser page may read besides Connect's: limits and retry advice, request ids, replays, a download's file name. */
const EXTRA_EXPOSED_HEADERS = [
  "Content-Disposition",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "RateLimit-Policy",
  "Retry-After",
  "X-Should-Retry",
  "X-Request-Id",
  "Idempotent-Replayed",
];

const ALLOWED_METHODS = [...new Set([...connectCors.allowedMethods, "DELETE", "OPTIONS"])].join(", ");
const ALLOWED_HEADERS = [...connectCors.allowedHeaders, ...EXTRA_ALLOWED_HEADERS].join(", ");
const EXPOSED_HEADERS = [...connectCors.exposedHeaders, ...EXTRA_EXPOSED_HEADERS].join(", ");

/**
 * CORS for the API surfaces (`/v1`, `/api`, the RPC paths) and the origins
 * in `ZERO_CORS_ORIGINS`. Never with credentials: cross-origin callers send
 * keys, and the Console's cookie writes keep their own Origin check.
 * Returns a function that decorates a response and answers a preflight
 * itself (true), or undefined when no origin is configured.
 */
export function corsPolicy(
  origins: readonly string[],
  isApiPath: (pathname: string) => boolean,
): ((req: NodeRequest, res: NodeResponse, pathname: string) => boolean) | undefined {
  if (origins.length === 0) return undefined;
  const anyOrigin = origins.includes("*");
  const allowed = new Set(origins);
  return (req, res, pathname) => {
    const origin = req.headers.origin;
    if (origin === undefined || !isApiPath(pathname)) return false;
    res.setHeader("Vary", "Origin");
    if (!anyOrigin && !allowed.has(origin)) return false;
    res.setHeader("Access-Control-Allow-Origin", anyOrigin ? "*" : origin);
    const preflight = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    if (!preflight) {
      res.setHeader("Access-Control-Expose-Headers", EXPOSED_HEADERS);
      return false;
    }
    res.setHeader("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
    res.setHeader("Access-Control-Allow-Methods", ALLOWED_METHODS);
    res.setHeader("Access-Control-Allow-Headers", requestedHeaders(req) ?? ALLOWED_HEADERS);
    res.setHeader("Access-Control-Max-Age", "7200");
    res.statusCode = 204;
    res.end();
    return true;
  };
}

/**
 * The headers a preflight asks for, when every one is allowed: the OpenAI
 * SDKs send `x-stainless-*` headers whose names change between versions.
 */
function requestedHeaders(req: NodeRequest): string | undefined {
  const requested = req.headers["access-control-request-headers"];
  if (typeof requested !== "string" || requested.trim() === "") return undefined;
  const names = requested.split(",").map((name) => name.trim().toLowerCase());
  const stainless = names.filter((name) => name.startsWith("x-stainless-"));
  if (!names.every((name) => KNOWN_HEADERS.has(name) || name.startsWith("x-stainless-"))) return undefined;
  return stainless.length > 0 ? `${ALLOWED_HEADERS}, ${stainless.join(", ")}` : ALLOWED_HEADERS;
}

const KNOWN_HEADERS = new Set(ALLOWED_HEADERS.toLowerCase().split(", "));
