import { randomBytes } from "node:crypto";
import type { Span } from "@opentelemetry/api";
import type { Logger } from "../observability/logger.js";
import { ServiceError } from "./errors.js";
import type { NodeRequest } from "./node-http.js";

/**
 * Why a request's hang-up signal aborts when the shutdown's grace period is
 * over with the request still under way: not that the client left, so an
 * answer (a stream's last event, or a 503) is still written, in the `unavailable` shape.
 */
export const SHUTTING_DOWN = new ServiceError("unavailable", "the server is shutting down; the answer is incomplete, try again");

/**
 * The newest request that holds a hang-up signal and whose response has not
 * closed; each links to the one before. A list through the requests
 * themselves rather than a Set, which would give every request an identity hash.
 */
let newestListening: RequestInfo | undefined;

/** Tells every request still under way that holds a hang-up signal that the server is shutting down; answers how many were told. */
export function shutDownRequests(): number {
  return RequestInfo.shutDownListening();
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
  readonly #parent: Logger;
  #log: Logger | undefined;
  #hangUp: AbortController | undefined;
  /** Neighbours in the list of requests holding a hang-up signal (see newestListening). */
  #older: RequestInfo | undefined;
  #newer: RequestInfo | undefined;

  constructor(id: string, clientAddress: string, parent: Logger) {
    this.id = id;
    this.clientAddress = clientAddress;
    this.startedAt = performance.now();
    this.#parent = parent;
  }

  get log(): Logger {
    this.#log ??= this.#parent.child({ requestId: this.id });
    return this.#log;
  }

  /**
   * Aborted when the client hangs up before its answer is finished. Made on
   * first use, and aborted from the outer handler's one close listener
   * rather than from a listener of its own on every response.
   */
  get hangUpSignal(): AbortSignal {
    if (this.#hangUp === undefined) {
      this.#hangUp = new AbortController();
      this.#older = newestListening;
      if (newestListening) newestListening.#newer = this;
      newestListening = this;
    }
    return this.#hangUp.signal;
  }

  /** Told by the outer handler when the response has closed, finished or not. */
  responseClosed(finished: boolean): void {
    if (this.#hangUp === undefined) return;
    if (this.#older) this.#older.#newer = this.#newer;
    if (this.#newer) this.#newer.#older = this.#older;
    else newestListening = this.#older;
    this.#older = this.#newer = undefined;
    if (!finished) this.#hangUp.abort();
  }

  /** Told when shutdown's grace period is over with this request still under way: its work stops, its answer says why. */
  shuttingDown(): void {
    this.#hangUp?.abort(SHUTTING_DOWN);
  }

  static shutDownListening(): number {
    let told = 0;
    for (let info = newestListening; info !== undefined; info = info.#older) {
      info.shuttingDown();
      told++;
    }
    return told;
  }
}

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

export function assignRequestInfo(req: NodeRequest, log: Logger, clientAddress: (req: NodeRequest) => string): RequestInfo {
  const supplied = req.headers["x-request-id"];
  const id = typeof supplied === "string" && ACCEPTABLE_ID.test(supplied) ? supplied : `${ID_PREFIX}${(idCounter++).toString(36)}`;
  const info = new RequestInfo(id, clientAddress(req), log);
  (req as WithInfo)[INFO] = info;
  return info;
}

export function requestInfo(req: NodeRequest): RequestInfo | undefined {
  return (req as WithInfo)[INFO];
}
