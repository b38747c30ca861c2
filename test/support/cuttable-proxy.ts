import net from "node:net";

/**
 * A TCP proxy in front of a real server (Postgres, the service) that a test
 * can cut: while cut, every connection through it, open or new, is reset, as
 * when the server's host drops off the network; once restored, new
 * connections go through again. Or silence: every connection, open or new,
 * stays open and carries nothing more either way, with neither end told, as
 * when a network drops packets (a NAT forgot the flow, a laptop slept). The
 * client under test meets its own driver's real errors, or none.
 */
export class CuttableProxy {
  readonly #server: net.Server;
  /** Each open connection's two sockets: the client's, and the one to the target. */
  readonly #open = new Map<net.Socket, net.Socket>();
  #cut = false;
  /** Connections reset because the proxy was cut (open ones and new ones). */
  resets = 0;

  private constructor(target: { host: string; port: number }) {
    this.#server = net.createServer((client) => {
      if (this.#cut) {
        this.resets++;
        client.resetAndDestroy();
        return;
      }
      const server = net.connect(target);
      this.#open.set(client, server);
      const end = () => {
        this.#open.delete(client);
        client.destroy();
        server.destroy();
      };
      for (const socket of [client, server]) socket.on("error", end).on("close", end);
      if (this.#silent) return;
      client.pipe(server);
      server.pipe(client);
    });
  }

  #silent = false;

  /** A proxy on a free port of 127.0.0.1 to `target`. */
  static async start(target: { host: string; port: number }): Promise<CuttableProxy> {
    const proxy = new CuttableProxy(target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** `url` (a `postgres://` URL, say) with its host and port this proxy's. */
  through(url: string): string {
    const proxied = new URL(url);
    proxied.hostname = "127.0.0.1";
    proxied.port = String((this.#server.address() as net.AddressInfo).port);
    return proxied.href;
  }

  /** Resets every open connection, and every new one until `restore`. */
  cut(): void {
    this.#cut = true;
    for (const [client, server] of this.#open) {
      this.resets++;
      client.resetAndDestroy();
      server.destroy();
    }
  }

  /** Stops carrying bytes on every connection, open or new, and closes none: both ends wait. */
  silence(): void {
    this.#silent = true;
    for (const [client, server] of this.#open) {
      client.unpipe(server);
      server.unpipe(client);
      client.pause();
      server.pause();
    }
  }

  restore(): void {
    this.#cut = false;
  }

  async close(): Promise<void> {
    for (const [client, server] of this.#open) {
      client.destroy();
      server.destroy();
    }
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
