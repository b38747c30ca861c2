import { randomBytes } from "node:crypto";
import type { Span } from "@opentelemetry/api";
import type { Logger } from "../observability/logger.js";
import { ServiceError } from "./errors.js";
import type { NodeRequest } from "./node-http.js";

/**
 * Why a request's hang-up signal aborts when the shutdown's grace period is
 * over with the request still under way: not that the client left, so an
 * answer (a stream's last event) is still written, in the `unavailable` shape.
 */
export const SHUTTING_DOWN = new ServiceError("unavailable", "the server is shutting down; the answer is incomplete, try again");

/** Requests whose answer is a stream still being written: told when shutdown's grace period is over. */
const openStreams = new Set<RequestInfo>();

/** Registers a request as an open stream; answers the function that unregisters it. */
export function streamOpened(info: RequestInfo): () => void {
  openStreams.add(info);
  return () => void openStreams.delete(info);
}

/** Tells every open stream that the server is shutting down; answers how many were told. */
export function shutDownOpenStreams(): number {
  for (const info of openStreams) info.shuttingDown();
  return openStreams.size;
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
    this.#hangUp ??= new AbortController();
    return this.#hangUp.signal;
  }

  /** Told by the outer handler when the response has closed, finished or not. */
  responseClosed(finished: boolean): void {
    if (!finished) this.#hangUp?.abort();
  }

  /** Told when shutdown's grace period is over with this request still under way: its work stops, its answer says why. */
  shuttingDown(): void {
    this.#hangUp?.abort(SHUTTING_DOWN);
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
