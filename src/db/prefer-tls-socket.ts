import net from "node:net";
import { Duplex } from "node:stream";
import tls from "node:tls";

/** Postgres's SSLRequest: a length of 8, then the code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
const TLS_ACCEPTED = 0x53; // "S"
const TLS_REFUSED = 0x4e; // "N"

/**
 * libpq's `sslmode=prefer`, which `pg` cannot do (it takes the server's "no"
 * to TLS as an error): ask the server for TLS and encrypt if it agrees, else
 * go on in the clear on the same connection; if the TLS handshake fails,
 * connect again and go on in the clear; over a Unix socket never ask. `pg` is
 * told to connect in the clear and given this as its stream: to it, the
 * connection is made once that question is settled.
 */
export class PreferTlsSocket extends Duplex {
  readonly #tlsOptions: tls.ConnectionOptions;
  #noDelay = false;
  /** The connection to the server. */
  #socket: net.Socket | undefined;
  /** What the bytes go through once settled: the connection, or TLS over it. */
  #channel: net.Socket | undefined;

  constructor(tlsOptions: tls.ConnectionOptions) {
    super();
    this.#tlsOptions = tlsOptions;
  }

  /** As `net.Socket#connect`, as `pg` calls it: a port and host, or a Unix socket's path. */
  connect(portOrPath: number | string, host?: string): this {
    const reach = () => this.#reached(typeof portOrPath === "string" ? net.connect(portOrPath) : net.connect(portOrPath, host));
    const channel = typeof portOrPath === "string" ? reach() : this.#preferringTls(reach, host);
    channel.then(
      (settled) => {
        if (this.destroyed) settled.destroy();
        else this.#settle(settled);
      },
      (error: Error) => this.destroy(error),
    );
    return this;
  }

  /** The connection `reach` makes, encrypted if the server agrees to TLS and its handshake succeeds. */
  async #preferringTls(reach: () => Promise<net.Socket>, host: string | undefined): Promise<net.Socket> {
    const socket = await reach();
    socket.write(SSL_REQUEST);
    const [answer] = (await settledBy(socket, "data")) as [Buffer];
    if (answer.length === 1 && answer[0] === TLS_REFUSED) return socket;
    if (answer.length !== 1 || answer[0] !== TLS_ACCEPTED) throw new Error("There was an error establishing an SSL connection");
    // As pg does: SNI names a host, never an IP address.
    const secure = tls.connect({ ...this.#tlsOptions, socket, host, ...(host && net.isIP(host) === 0 ? { servername: host } : {}) });
    secure.on("error", (error) => {
      if (this.#channel === secure) this.destroy(error);
    });
    try {
      await settledBy(secure, "secureConnect");
      return secure;
    } catch {
      secure.destroy();
      if (this.destroyed) throw new Error("Connection terminated");
      return reach();
    }
  }

  /** `socket` once connected, as the connection to the server. */
  async #reached(socket: net.Socket): Promise<net.Socket> {
    this.#socket?.destroy();
    this.#socket = socket;
    socket.setNoDelay(this.#noDelay);
    // Once settled, a failure ends this stream; before, the step waiting on the socket sees it.
    socket.on("error", (error) => {
      if (this.#channel && this.#socket === socket) this.destroy(error);
    });
    await settledBy(socket, "connect");
    return socket;
  }

  #settle(channel: net.Socket): void {
    this.#channel = channel;
    channel.on("data", (chunk: Buffer) => {
      if (!this.push(chunk)) channel.pause();
    });
    channel.on("end", () => this.push(null));
    channel.on("close", () => this.destroy());
    this.emit("connect");
  }

  override _read(): void {
    this.#channel?.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (!this.#channel) callback(new Error("not connected"));
    else if (this.#channel.write(chunk)) callback();
    else this.#channel.once("drain", () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.#channel) this.#channel.end(() => callback());
    else callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#channel?.destroy();
    this.#socket?.destroy();
    callback(error);
  }

  setNoDelay(noDelay = true): this {
    this.#noDelay = noDelay;
    this.#socket?.setNoDelay(noDelay);
    return this;
  }

  setKeepAlive(enable?: boolean, initialDelay?: number): this {
    this.#socket?.setKeepAlive(enable, initialDelay);
    return this;
  }

  ref(): this {
    this.#socket?.ref();
    return this;
  }

  unref(): this {
    this.#socket?.unref();
    return this;
  }
}

/**
 * The arguments of `socket`'s next `event`; rejects if the socket fails,
 * ends or closes first (a peer that hangs up, as `pg` words it when it has
 * the connection itself).
 */
function settledBy(socket: net.Socket, event: string): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const stop = () => {
      socket.off(event, done);
      socket.off("error", failed);
      socket.off("end", failed);
      socket.off("close", failed);
    };
    const done = (...args: unknown[]) => {
      stop();
      resolve(args);
    };
    const failed = (error?: unknown) => {
      stop();
      reject(error instanceof Error ? error : new Error("Connection terminated unexpectedly"));
    };
    socket.once(event, done);
    socket.once("error", failed);
    socket.once("end", failed);
    socket.once("close", failed);
  });
}
