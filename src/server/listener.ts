import fs from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type tls from "node:tls";
import type { NodeRequest, NodeResponse } from "./rest.js";

export type RequestListener = (req: NodeRequest, res: NodeResponse) => void;

export interface ListenerOptions {
  /** PEM files; with both, the port speaks TLS and negotiates h2 or http/1.1 by ALPN. */
  tls?: { certFile: string; keyFile: string };
  /** Headers must arrive within this time (slowloris). */
  headersTimeoutMs: number;
  /** The whole request must arrive within this time. */
  requestTimeoutMs: number;
  /** An HTTP/2 session with no open stream closes after this time. */
  http2IdleTimeoutMs: number;
}

/** Idle keep-alive HTTP/1.1 connections close after this time. */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** Concurrent streams one HTTP/2 connection may open. */
const MAX_CONCURRENT_STREAMS = 256;

/** One port for every protocol we serve. */
export interface Listener {
  listen(port: number, host: string): Promise<{ port: number; host: string }>;
  /**
   * Stops accepting connections, lets in-flight requests finish for up to
   * `graceMs`, then awaits `onGraceOver`, gives the requests it ended a
   * moment to say so, and closes whatever is left. Meanwhile HTTP/2
   * sessions are sent GOAWAY, and open HTTP/1.1 connections are not cut
   * while a client may be sending on them (Http1Connections).
   */
  close(graceMs: number, onGraceOver?: () => void | Promise<void>): Promise<void>;
}

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Serves HTTP/1.1 and HTTP/2 on one socket. Without TLS, each connection's
 * first bytes decide: the HTTP/2 connection preface (prior knowledge, as gRPC
 * clients send it) goes to the HTTP/2 server, anything else to the HTTP/1.1
 * server. With TLS, ALPN decides. Both servers call the same listener.
 */
export function createListener(onRequest: RequestListener, options: ListenerOptions): Listener {
  const http2Settings: http2.Settings = { maxConcurrentStreams: MAX_CONCURRENT_STREAMS };
  const { headersTimeoutMs, requestTimeoutMs } = options;
  const sessions = new Set<http2.Http2Session>();
  const requests = new InFlight();
  const connections = new Http1Connections();
  const counted: RequestListener = (req, res) => {
    requests.add(res);
    if (connections.draining && req.httpVersionMajor === 1) res.setHeader("connection", "close");
    onRequest(req, res);
  };
  const trackSession = (session: http2.Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    closeWhenIdle(session, { firstStreamMs: headersTimeoutMs, idleMs: options.http2IdleTimeoutMs });
  };
  // HTTP/1.1 bounds a request's arrival itself (headersTimeout, requestTimeout); HTTP/2 needs it per stream.
  const bounded: RequestListener = (req, res) => {
    if (req.httpVersionMajor === 2) {
      boundRequestBody(req as http2.Http2ServerRequest, requestTimeoutMs);
      // HTTP/2 names the authority in `:authority`, which wins over any Host (RFC 9113 §8.3.1); what reads Host
      // (the CSRF check's own-origin test) reads it the same way over either version.
      const authority = req.headers[":authority"];
      if (typeof authority === "string") req.headers.host = authority;
    }
    counted(req, res);
  };

  if (options.tls) {
    const server = http2.createSecureServer(
      {
        cert: fs.readFileSync(options.tls.certFile),
        key: fs.readFileSync(options.tls.keyFile),
        allowHTTP1: true,
        settings: http2Settings,
        // A handshake that never finishes is a connection whose headers never arrive.
        handshakeTimeout: headersTimeoutMs,
      },
      bounded,
    );
    server.on("session", trackSession);
    // ALPN chose HTTP/1.1 (or the client offered none): the server falls back to its HTTP/1.1 handling.
    server.on("secureConnection", (socket: tls.TLSSocket) => {
      if (socket.alpnProtocol !== "h2") connections.add(socket);
    });
    applyHttp1Timeouts(server as unknown as http.Server, options);
    // Every connection left is an HTTP/2 session or an HTTP/1.1 connection, which the drain itself ends;
    // the server's own close then only stops its check of request deadlines.
    return wrap(server, { sessions, requests, connections }, () => server.close());
  }

  // Node checks header and request deadlines on this interval (30 s by default), so it bounds how late they bite.
  const connectionsCheckingInterval = Math.min(1000, Math.floor(headersTimeoutMs / 2));
  const http1 = http.createServer({ connectionsCheckingInterval }, counted);
  applyHttp1Timeouts(http1, options);
  // This server never listens itself (the sniffer hands it sockets), but Node
  // only starts tracking connections, and so enforcing headersTimeout /
  // requestTimeout and closing idle keep-alive sockets, on "listening".
  http1.emit("listening");
  const h2c = http2.createServer({ settings: http2Settings }, bounded);
  h2c.on("session", trackSession);

  const sockets = new Set<net.Socket>();
  // noDelay: the HTTP servers never accept these sockets themselves, so their
  // own default (Nagle off) does not apply; without it a stream's second small
  // write waits for the client's delayed ACK (~40 ms).
  const sniffer = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    let received: Buffer = Buffer.alloc(0);
    // A deadline from the connection's start, not a silence timer: a client that drips the preface a byte at a
    // time must not hold the socket either. Handing over passes the socket to the servers' own deadlines.
    const sniffDeadline = setTimeout(() => socket.destroy(), headersTimeoutMs);
    const hand = (server: net.Server) => {
      clearTimeout(sniffDeadline);
      socket.removeListener("data", onData);
      socket.removeListener("error", onEarlyError);
      socket.pause();
      socket.unshift(received);
      if (server === http1) connections.add(socket);
      server.emit("connection", socket);
      // HTTP/2 reads the socket natively (taking the unshifted bytes first);
      // resuming the JS stream would steal its data. HTTP/1.1 reads through it.
      if (server === http1) socket.resume();
    };
    const onData = (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      const n = Math.min(received.length, H2_PREFACE.length);
      if (!received.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) hand(http1);
      else if (received.length >= H2_PREFACE.length) hand(h2c);
    };
    const onEarlyError = () => socket.destroy();
    socket.once("close", () => clearTimeout(sniffDeadline));
    socket.on("data", onData);
    socket.on("error", onEarlyError);
  });

  return wrap(sniffer, { sessions, requests, connections }, () => {
    // Also stops its check of request deadlines; it never listened, so there is nothing else to close.
    http1.close();
    http1.closeAllConnections();
    // A destroyed HTTP/2 session only ends its socket; a peer that never closes its side would hold it open.
    for (const socket of sockets) socket.destroy();
  });
}

/**
 * Closes an HTTP/2 session that has no open stream for too long: `firstStreamMs`
 * before its first stream (a client that opens a connection and never sends a
 * request), `idleMs` after its last. A deadline rather than a silence timer,
 * so PINGs or SETTINGS alone do not keep a session alive; a session with an
 * open stream (a watch, a stream of chat chunks) is never idle.
 */
function closeWhenIdle(session: http2.Http2Session, limits: { firstStreamMs: number; idleMs: number }): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number) => {
    timer = setTimeout(() => {
      session.close();
      // close() waits for the peer to read our GOAWAY; a peer that reads nothing must not hold the socket.
      setTimeout(() => session.destroy(), 1_000).unref();
    }, ms);
    timer.unref();
  };
  arm(limits.firstStreamMs);
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      open--;
      if (open === 0 && !session.closed && !session.destroyed) arm(limits.idleMs);
    });
  });
  session.once("close", () => clearTimeout(timer));
}

/**
 * Resets an HTTP/2 stream whose request body has not fully arrived within
 * `ms` of its headers. The deadline ends when the body has been read, so a
 * server stream (its request long complete) may answer for as long as it likes.
 */
function boundRequestBody(req: http2.Http2ServerRequest, ms: number): void {
  const stream = req.stream;
  const timer = setTimeout(() => {
    if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
  }, ms);
  timer.unref();
  const done = () => clearTimeout(timer);
  if (stream.endAfterHeaders) done();
  req.once("end", done);
  stream.once("close", done);
}

function applyHttp1Timeouts(server: http.Server, options: ListenerOptions): void {
  server.headersTimeout = options.headersTimeoutMs;
  server.requestTimeout = options.requestTimeoutMs;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
}

/** How long requests under way when the grace ends have to write their last words before connections close. */
const LAST_WORDS_MS = 500;

/** Waits for `done`, for at most `ms`. */
async function within(done: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** During a shutdown, an HTTP/1.1 connection with no request under way that received nothing for this long is closed. */
const DRAIN_QUIET_MS = 1000;

/**
 * The open HTTP/1.1 connections, for a drain that cuts none while its client
 * may be sending on it: HTTP/1.1 has no GOAWAY, so a keep-alive connection
 * closed at once resets whatever request its client had just sent, a POST
 * included. While draining, each answer says `Connection: close` and its
 * connection closes after it, and a connection is closed only once it has
 * been quiet for DRAIN_QUIET_MS. A request sent at that very moment still
 * meets a reset, as at any keep-alive timeout; it was never read, so its
 * client may send it again.
 */
class Http1Connections {
  draining = false;
  /** Called each time the last connection closes. */
  onEmpty: (() => void) | undefined;
  readonly #sockets = new Set<net.Socket>();
  #quietTimer: NodeJS.Timeout | undefined;

  get size(): number {
    return this.#sockets.size;
  }

  add(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.once("close", () => {
      this.#sockets.delete(socket);
      if (this.#sockets.size === 0) this.onEmpty?.();
    });
  }

  /** From now on every answer closes its connection, and quiet connections are closed. */
  drain(): void {
    this.draining = true;
    // Per connection: bytes it had read at the last look, and since when it has been quiet.
    const seen = new WeakMap<net.Socket, { read: number; quietSince: number }>();
    const look = () => {
      const now = performance.now();
      for (const socket of this.#sockets) {
        const before = seen.get(socket);
        // Node's own test for a connection with no answer under way (http.Server#closeIdleConnections).
        const answering = (socket as { _httpMessage?: { finished: boolean } | null })._httpMessage?.finished === false;
        if (answering || before === undefined || before.read !== socket.bytesRead) seen.set(socket, { read: socket.bytesRead, quietSince: now });
        else if (now - before.quietSince >= DRAIN_QUIET_MS) socket.destroy();
      }
    };
    look();
    this.#quietTimer = setInterval(look, DRAIN_QUIET_MS / 4);
    this.#quietTimer.unref();
  }

  destroyAll(): void {
    clearInterval(this.#quietTimer);
    for (const socket of this.#sockets) socket.destroy();
  }
}

/** Requests whose responses have not closed yet. */
class InFlight {
  count = 0;
  /** Called each time the count falls to zero. */
  onIdle: (() => void) | undefined;
  // One function for every response, rather than a closure per request. A count, not a set of responses:
  // putting each response in a Set gave it an identity hash, and cost the chat path 20 µs a request.
  readonly #closed = () => {
    if (--this.count === 0) this.onIdle?.();
  };

  add(res: NodeResponse): void {
    this.count++;
    res.on("close", this.#closed);
  }
}

function wrap(
  server: net.Server,
  open: { sessions: Set<http2.Http2Session>; requests: InFlight; connections: Http1Connections },
  closeAll: () => void,
): Listener {
  const { sessions, requests, connections } = open;
  return {
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const address = server.address() as net.AddressInfo;
          resolve({ port: address.port, host: address.address });
        });
      });
    },
    async close(graceMs, onGraceOver) {
      // net.Server's close, which only stops accepting: an HTTP server's own would also cut idle keep-alive connections.
      const stopped = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
      connections.drain();
      for (const session of sessions) session.close();
      const allDone = new Promise<void>((resolve) => {
        const check = () => (requests.count === 0 && sessions.size === 0 && connections.size === 0 ? resolve() : undefined);
        requests.onIdle = check;
        connections.onEmpty = check;
        for (const session of sessions) session.once("close", check);
        check();
      });
      await within(allDone, graceMs);
      await onGraceOver?.();
      // What was just told the grace is over (a stream's error event or trailers, a 503) gets a moment to be written.
      await within(
        new Promise<void>((resolve) => {
          requests.onIdle = resolve;
          if (requests.count === 0) resolve();
        }),
        LAST_WORDS_MS,
      );
      for (const session of sessions) session.destroy();
      connections.destroyAll();
      closeAll();
      await stopped;
    },
  };
}
