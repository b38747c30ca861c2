import { createContextValues } from "@connectrpc/connect";
import { CapabilitiesService } from "../../gen/zero/v1/capabilities_pb.js";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { API_BODY_MAX_BYTES } from "../api/limits.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { RepeatingFailure } from "../observability/repeating-failure.js";
import { endSpan, type Tracing } from "../observability/tracing.js";
import { type Authenticator, bearerToken } from "./access.js";
import { createHash, timingSafeEqual } from "node:crypto";
import type { BlockList } from "node:net";
import { clientAddressResolver } from "./client-address.js";
import { createConnectAdapter } from "./connect-adapter.js";
import { clientAddressKey, requestLogKey } from "./context.js";
import { ServiceError } from "./errors.js";
import { registerHealth } from "./health.js";
import { authInterceptor, deadlineInterceptor, errorInterceptor } from "./interceptors.js";
import type { RequestListener } from "./listener.js";
import { registerReflection } from "./reflection.js";
import { assignRequestInfo, ListeningRequests, requestIdOf, requestInfo, type RequestInfo } from "./request-info.js";
import { RestRouter, sendError, sendJson, type NodeRequest, type NodeResponse, type RestExchange, type RestHandler } from "./rest.js";
import type { AppPart } from "./app-part.js";
import { createRestRpc } from "./rpc-pipeline.js";
import { corsPolicy } from "./cors.js";

export interface HttpHandlerOptions {
  logger: Logger;
  authenticator: Authenticator;
  /** What each feature serves: typed services and plain HTTP routes (REST, SSE, pages, artifacts). */
  parts: readonly AppPart[];
  ping(): Promise<void>;
  /** Aborted when shutdown begins: readiness and gRPC health say the instance is not serving. */
  drainingSignal: AbortSignal;
  /** Aborted when shutdown's grace period is over: RPC handlers still running are told to stop. */
  shutdownSignal: AbortSignal;
  metrics: Metrics;
  /** Set when tracing is configured: one server span per request. */
  tracing?: Tracing;
  /** Peers whose `X-Forwarded-For` names the client; unset, the socket's peer is the client. */
  trustedProxies?: BlockList;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** Origins whose browser pages may call the API (`ZERO_CORS_ORIGINS`); empty: no CORS. */
  corsOrigins?: readonly string[];
}

/**
 * The single entry point of every request on the port: assigns the request
 * id, logs the exchange, then hands it to a REST route or to the Connect
 * adapter (Connect, gRPC, gRPC-Web). Both reach the services through the
 * same interceptors: REST routes call them through a RestRpc.
 */
export interface HttpHandler {
  handle: RequestListener;
  /** When the shutdown's grace period ends: tells every request still under way (see RequestInfo.hangUpSignal); answers how many. */
  shutDownRequests(): number;
}

export function createHttpHandler(options: HttpHandlerOptions): HttpHandler {
  const { logger } = options;
  // Requests that meet the database away: one outage is a warning with its cause, a count now and then, and a line
  // when the database answers a readiness check again, not an error per request.
  const databaseOutage = new RepeatingFailure(logger, "reaching the database");
  const ping = async () => {
    await options.ping();
    databaseOutage.succeeded();
  };
  const bindings = options.parts.flatMap((part) => part.services ?? []);
  const services = bindings.map((binding) => binding.service);
  const interceptors = [errorInterceptor, deadlineInterceptor, authInterceptor(options.authenticator)];
  const rest = new RestRouter();
  const rpc = createRestRpc({ bindings, authenticator: options.authenticator, interceptors, shutdownSignal: options.shutdownSignal });
  for (const part of options.parts) part.routes?.(rest, rpc);
  const connect = createConnectAdapter({
    routes(router) {
      for (const binding of bindings) binding.register(router);
      registerHealth(router, {
        serviceNames: services.map((s) => s.typeName),
        ping,
        drainingSignal: options.drainingSignal,
      });
      registerReflection(router, services);
    },
    interceptors,
    shutdownSignal: options.shutdownSignal,
    readMaxBytes: API_BODY_MAX_BYTES,
    contextValues: (req) => {
      const info = requestInfo(req);
      return createContextValues()
        .set(requestLogKey, info)
        .set(clientAddressKey, info?.clientAddress ?? "");
    },
    fallback: (req, res) => sendError(res, new ServiceError("not_found", `no route for ${req.method} ${pathOf(req.url)}`), req),
    onHandlerError: (error) => logger.warn({ err: error }, "rpc handler failed outside the protocol"),
    onRpcFailed: (req, code) => {
      requestInfo(req)!.rpcFailure = code;
    },
  });

  rest.add("GET", "/healthz", ({ res }) => sendJson(res, 200, { status: "ok" }));
  rest.add("GET", "/readyz", async ({ res }) => {
    if (options.drainingSignal.aborted) {
      sendNotReady(res, "the instance is shutting down");
      return;
    }
    try {
      await ping();
    } catch {
      sendNotReady(res, "the database does not answer");
      return;
    }
    sendJson(res, 200, { status: "ready" });
  });

  const metricsTokenHash = options.metricsToken === undefined ? undefined : sha256(options.metricsToken);
  rest.add("GET", "/metrics", async ({ req, res }) => {
    if (metricsTokenHash) {
      const presented = bearerToken(req.headers.authorization) ?? "";
      // Equal-length digests, so the comparison takes the same time whatever was sent.
      if (!timingSafeEqual(sha256(presented), metricsTokenHash)) {
        throw new ServiceError("unauthenticated", "metrics need `Authorization: Bearer <ZERO_METRICS_TOKEN>`");
      }
    }
    const body = await options.metrics.render();
    res.setHeader("content-type", options.metrics.registry.contentType);
    res.end(body);
  });

  const resolveClient = clientAddressResolver(options.trustedProxies);
  const clientAddress = (req: NodeRequest) => resolveClient(req.socket?.remoteAddress, req.headers["x-forwarded-for"]);
  const rpcRoutes = new Set(services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
  const { httpRequests, httpDuration } = options.metrics;
  const cors = corsPolicy(options.corsOrigins ?? [], (pathname) => pathname.startsWith("/v1/") || pathname.startsWith("/api/") || rpcRoutes.has(pathname));

  // One listener for every response (`this` is the response), rather than a closure per request.
  function closed(this: NodeResponse): void {
    const info = requestInfo(this.req)!;
    // Ended by us and flushed. (An HTTP/2 stream the client reset reads as writableFinished, never as writableEnded.)
    const finished = this.writableEnded && this.writableFinished;
    info.responseClosed(finished);
    // A response closed before its head was sent (the client left, or shutdown's grace ran out) has no status:
    // `statusCode` is only Node's default 200 then.
    const status = !this.headersSent ? undefined : info.rpcFailure === undefined ? this.statusCode : codeToHttpStatus(info.rpcFailure);
    endSpan(info.span, status === undefined ? {} : { "http.response.status_code": status }, status === undefined || status >= 500);
    const seconds = (performance.now() - info.startedAt) / 1000;
    const method = this.req.method ?? "GET";
    const methodLabel = KNOWN_METHODS.has(method) ? method : "other";
    httpRequests.inc({ route: info.route, method: methodLabel, code: status === undefined ? "aborted" : String(status) });
    httpDuration.observe({ route: info.route, method: methodLabel }, seconds);
    if (logger.isLevelEnabled("info")) {
      logger.info(
        {
          requestId: info.id,
          method,
          path: pathOf(this.req.url),
          status: status ?? null,
          ms: Math.round(seconds * 1e5) / 100,
          aborted: !finished,
        },
        "request",
      );
    }
  }

  const listening = new ListeningRequests();
  const handle: RequestListener = (req, res) => {
    const info = assignRequestInfo(req, logger, clientAddress, listening, databaseOutage);
    setAnswerHeaders(res, info.id);
    const pathname = pathOf(req.url);
    const method = req.method ?? "GET";
    const route = rest.match(method, pathname);
    info.route = route ? rest.label(method, pathname) : rpcRoutes.has(pathname) ? pathname : "other";
    const traceparent = req.headers.traceparent;
    // OpenTelemetry's names for a method it does not know, which would otherwise make a span name per token sent.
    const known = KNOWN_METHODS.has(method);
    info.span = options.tracing?.start(
      `${known ? method : "HTTP"} ${info.route}`,
      "server",
      { "http.request.method": known ? method : "_OTHER", "http.route": info.route, "zero.request_id": info.id },
      { traceparent: typeof traceparent === "string" ? traceparent : undefined },
    );
    // A response closes once, so `on` (which spares `once`'s wrapper and its removal) is enough.
    res.on("close", closed);
    if (cors?.(req, res, pathname)) return;
    // Spans started while serving it (upstream attempts) are the request's children.
    if (info.span) options.tracing!.within(info.span, () => serve(req, res, route, info));
    else serve(req, res, route, info);
  };
  return { handle, shutDownRequests: () => listening.shutDown() };

  function serve(req: NodeRequest, res: NodeResponse, route: RestHandler | undefined, info: RequestInfo): void {
    if (!route) {
      connect(req, res);
      return;
    }
    try {
      route(new Exchange(req, res, info))?.catch((error: unknown) => sendError(res, error, req));
    } catch (error) {
      sendError(res, error, req);
    }
  }
}

/**
 * What the port answers while the service starts (it is bound before the
 * database starts): the process is up (`/healthz`), not ready (`/readyz`),
 * and every other request is 503 `unavailable` in its API's shape, to be
 * tried again in a second.
 */
export const answerWhileStarting: RequestListener = (req, res) => {
  setAnswerHeaders(res, requestIdOf(req));
  const pathname = pathOf(req.url);
  const reading = req.method === "GET" || req.method === "HEAD";
  if (reading && pathname === "/healthz") sendJson(res, 200, { status: "starting" });
  else if (reading && pathname === "/readyz") sendNotReady(res, "starting up", { "Retry-After": "1" });
  // An RPC's refusal in its protocol (Connect, gRPC, gRPC-Web), with the error detail typed clients read.
  else rpcWhileStarting(req, res);
};

/** The API's services, whose RPCs are refused as starting up before the parts that serve them exist. */
const API_SERVICES = [CapabilitiesService, ChatService, ConsoleService, ExecutionService];

const startingUp = () => new ServiceError("unavailable", "the service is starting up; try again shortly", { headers: { "Retry-After": "1" } });

/** Every RPC of the API refused as starting up, as the running service would refuse it; anything else is REST's 503. */
const rpcWhileStarting = createConnectAdapter({
  routes(router) {
    for (const service of API_SERVICES) {
      for (const method of service.methods) {
        // Thrown as the call begins, a server stream's as well as a unary's.
        router.rpc(method, (() => {
          throw startingUp();
        }) as never);
      }
    }
  },
  interceptors: [],
  shutdownSignal: new AbortController().signal,
  readMaxBytes: API_BODY_MAX_BYTES,
  contextValues: () => createContextValues(),
  fallback: (req, res) => sendError(res, startingUp(), req),
  onHandlerError: () => {},
  onRpcFailed: () => {},
});

/** What every answer carries, the service started or not: the request's id, and no content sniffing. */
function setAnswerHeaders(res: NodeResponse, requestId: string): void {
  res.setHeader("x-request-id", requestId);
  res.setHeader("x-content-type-options", "nosniff");
}

function sendNotReady(res: NodeResponse, why: string, headers?: Record<string, string>): void {
  sendJson(res, 503, { error: { type: "unavailable", message: `not ready: ${why}` } }, headers);
}

/** A REST exchange whose URL is parsed only when a route reads it: most routes need the path alone, which routing already has. */
class Exchange implements RestExchange {
  #url: URL | undefined;

  constructor(
    readonly req: NodeRequest,
    readonly res: NodeResponse,
    readonly info: RequestInfo,
  ) {}

  get hangUp(): AbortSignal {
    return this.info.hangUpSignal;
  }

  get url(): URL {
    if (this.#url) return this.#url;
    try {
      this.#url = new URL(this.req.url ?? "/", "http://localhost");
    } catch {
      throw new ServiceError("invalid_request", "malformed request URL");
    }
    return this.#url;
  }
}

/**
 * The methods a metric label may name; any other is `other`. HTTP/1.1's
 * parser refuses unknown methods, but HTTP/2 takes any token as `:method`,
 * and each one would add series to every scrape, for good.
 */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

function pathOf(url: string | undefined): string {
  if (!url) return "/";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
