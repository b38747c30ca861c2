import { randomBytes } from "node:crypto";
import type { Code } from "@connectrpc/connect";
import type { Span } from "@opentelemetry/api";
import type { Logger } from "../observability/logger.js";
import type { RepeatingFailure } from "../observability/repeating-failure.js";
import { ServiceError } from "./errors.js";
import type { NodeRequest } from "./node-http.js";

/**
 * Why a request's hang-up signal aborts when the shutdown's grace period is
 * over with the request still under way: not that the client left, so an
 * answer (a stream's last event, or a 503) is still written, in the `unavailable` shape.
 */
export const SHUTTING_DOWN = new ServiceError("unavailable", "the server is shutting down; the answer is incomplete, try again");

/**
 * One server's requests that hold a hang-up signal and whose response has
 * not closed, told when that server's shutdown grace period ends. A list
 * through the requests themselves rather than a Set, which would give every
 * request an identity hash.
 */
export class ListeningRequests {
  /** The newest in the list; each links to the one before. */
  newest: RequestInfo | undefined;
  /** Set when the grace period ends: a request asking for its signal after that gets it already aborted. */
  over = false;

  /** Tells every request in the list that the server is shutting down; answers how many were told. */
  shutDown(): number {
    this.over = true;
    return RequestInfo.shutDownFrom(this.newest);
  }
}

/** True when the client itself has gone: a signal aborted for any reason but the shutdown's. */
export function clientGone(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason !== SHUTTING_DOWN;
}

/**
 * What the outer handler learns of each request before any route sees it.
 * The request's own logger (bound to its id) is made on first use: most
 * requests never log anything of their own, and a pino child costs more than
 * the rest of this object.
 */
export class RequestInfo {
  readonly id: string;
  readonly clientAddress: string;
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number;
  /** The metrics label: the REST path or prefix that matched, the RPC procedure, or "other". */
  route = "other";
  span: Span | undefined;
  /**
   * The code of an RPC that failed over a protocol that answers HTTP 200
   * whatever the outcome (gRPC, gRPC-Web, Connect streams): the metrics, the
   * request log and the span give the HTTP status Connect gives that code instead.
   */
  rpcFailure: Code | undefined;
  readonly #parent: Logger;
  readonly #listening: ListeningRequests;
  readonly #databaseOutage: RepeatingFailure;
  #log: Logger | undefined;
  #hangUp: AbortController | undefined;
  #closed = false;
  /** In `#listening`'s list, between these two. */
  #linked = false;
  #older: RequestInfo | undefined;
  #newer: RequestInfo | undefined;

  constructor(id: string, clientAddress: string, parent: Logger, listening: ListeningRequests, databaseOutage: RepeatingFailure) {
    this.id = id;
    this.clientAddress = clientAddress;
    this.startedAt = performance.now();
    this.#parent = parent;
    this.#listening = listening;
    this.#databaseOutage = databaseOutage;
  }

  get log(): Logger {
    this.#log ??= this.#parent.child({ requestId: this.id });
    return this.#log;
  }

  /** An error the service did not raise on purpose (see toServiceError): a bug, logged at error with its cause. */
  logUnexpected(error: unknown, fields?: Record<string, unknown>): void {
    this.log.error({ err: error, ...fields }, "unexpected error");
  }

  /**
   * The database being away (see toServiceError): the documented 503, which
   * `/readyz` reports too, so the server's one outage log counts it rather
   * than every request logging an error with a stack trace.
   */
  logDatabaseDown(error: unknown): void {
    this.#databaseOutage.failed(error);
  }

  /**
   * Aborted when the client hangs up before its answer is finished, or with
   * SHUTTING_DOWN when the shutdown's grace period ends first. Made on first
   * use, and aborted from the outer handler's one close listener rather than
   * from a listener of its own on every response.
   */
  get hangUpSignal(): AbortSignal {
    if (this.#hangUp === undefined) {
      this.#hangUp = new AbortController();
      // Asked for late (a route that awaited something first): the client may have gone, or the grace ended, meanwhile.
      if (this.#closed) this.#hangUp.abort();
      else if (this.#listening.over) this.#hangUp.abort(SHUTTING_DOWN);
      else this.#link();
    }
    return this.#hangUp.signal;
  }

  /** Told by the outer handler when the response has closed, finished or not. */
  responseClosed(finished: boolean): void {
    this.#closed = true;
    if (this.#linked) this.#unlink();
    if (!finished) this.#hangUp?.abort();
  }

  /** Told when shutdown's grace period is over with this request still under way: its work stops, its answer says why. */
  shuttingDown(): void {
    this.#hangUp?.abort(SHUTTING_DOWN);
  }

  /** Tells `newest` and every request before it in its list; answers how many. */
  static shutDownFrom(newest: RequestInfo | undefined): number {
    let told = 0;
    for (let info = newest; info !== undefined; info = info.#older) {
      info.shuttingDown();
      told++;
    }
    return told;
  }

  #link(): void {
    this.#older = this.#listening.newest;
    if (this.#older) this.#older.#newer = this;
    this.#listening.newest = this;
    this.#linked = true;
  }

  #unlink(): void {
    if (this.#older) this.#older.#newer = this.#newer;
    if (this.#newer) this.#newer.#older = this.#older;
    else this.#listening.newest = this.#older;
    this.#older = this.#newer = undefined;
    this.#linked = false;
  }
}

/** What a route hands on of its request for logging: its logger, and where its failures go (see toServiceError). */
export type RequestLogging = Pick<RequestInfo, "log" | "logUnexpected" | "logDatabaseDown">;

/**
 * Kept on the request itself rather than in a WeakMap: there every request
 * added an ephemeron entry that the young-generation GC had to trace and
 * then clear. With a BigInt clock, that was about 2 µs of a chat request's 74.
 */
const INFO = Symbol("zero.requestInfo");
type WithInfo = NodeRequest & { [INFO]?: RequestInfo };

/** A caller-supplied id is kept when it is short and printable; otherwise we make one. */
const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Our ids need to be unique, not secret: a random prefix per process and a
 * counter, rather than fresh random bytes (a call into the CSPRNG) per request.
 */
const ID_PREFIX = `req_${randomBytes(6).toString("base64url")}`;
let idCounter = 0;

/** The request's id: the caller's `x-request-id` when acceptable, else a new one of ours. */
export function requestIdOf(req: NodeRequest): string {
  const supplied = req.headers["x-request-id"];
  return typeof supplied === "string" && ACCEPTABLE_ID.test(supplied) ? supplied : `${ID_PREFIX}${(idCounter++).toString(36)}`;
}

export function assignRequestInfo(
  req: NodeRequest,
  log: Logger,
  clientAddress: (req: NodeRequest) => string,
  listening: ListeningRequests,
  databaseOutage: RepeatingFailure,
): RequestInfo {
  const info = new RequestInfo(requestIdOf(req), clientAddress(req), log, listening, databaseOutage);
  (req as WithInfo)[INFO] = info;
  return info;
}

export function requestInfo(req: NodeRequest): RequestInfo | undefined {
  return (req as WithInfo)[INFO];
}
