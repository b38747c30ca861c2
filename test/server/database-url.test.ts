import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openStore, postgresClientConfig } from "../../src/db/database.js";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../../src/db/embedded-postgres.js";
import { createLogger } from "../../src/observability/logger.js";
import { unusedPort } from "../support/ports.js";
import { removeDataDir } from "../support/server-process.js";
import { selfSignedCertificate } from "../support/tls.js";

/** The TLS options `pg` connects with for `url` (false: no TLS). */
function sslFor(url: string): unknown {
  return new pg.Client(postgresClientConfig(url)).ssl;
}

describe("DATABASE_URL's sslmode, read as libpq (psql) reads it", () => {
  let ca: Awaited<ReturnType<typeof selfSignedCertificate>>;
  // pg's eight-line "SECURITY WARNING" about these modes, once per process.
  let warn: ReturnType<typeof vi.spyOn>;
  beforeAll(async () => {
    ca = await selfSignedCertificate();
    warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
  });
  afterAll(async () => {
    warn.mockRestore();
    await ca.remove();
  });

  it("require encrypts without verifying the certificate (a managed Postgres's own CA), and says nothing", () => {
    expect(sslFor("postgres://u@db.example.com:5432/zero?sslmode=require")).toEqual({ rejectUnauthorized: false });
    expect(warn).not.toHaveBeenCalled();
  });

  it("verify-full verifies the chain and the host name; verify-ca, and require with a CA, the chain only", () => {
    expect(sslFor("postgres://u@db.example.com/zero?sslmode=verify-full")).toEqual({});
    const rootcert = ca.env.ZERO_TLS_CERT_FILE;
    for (const mode of ["verify-ca", "require"]) {
      const ssl = sslFor(`postgres://u@db.example.com/zero?sslmode=${mode}&sslrootcert=${rootcert}`) as Record<string, unknown>;
      expect(ssl.rejectUnauthorized).not.toBe(false);
      expect(ssl.ca).toContain("BEGIN CERTIFICATE");
      expect(ssl.checkServerIdentity).toBeTypeOf("function");
    }
    expect(warn).not.toHaveBeenCalled();
  });

  it("disable and no sslmode connect in the clear; the rest of the URL is kept", () => {
    expect(sslFor("postgres://u@db.example.com/zero?sslmode=disable")).toBe(false);
    expect(sslFor("postgres://u@db.example.com/zero")).toBe(false);
    expect(postgresClientConfig("postgres://u@db.example.com/zero?application_name=z")).toEqual({
      connectionString: "postgres://u@db.example.com/zero?application_name=z",
    });
    const client = new pg.Client(postgresClientConfig("postgresql://u:p%40ss@db.example.com:6543/zero?sslmode=require&application_name=z"));
    expect(client).toMatchObject({ user: "u", password: "p@ss", host: "db.example.com", port: 6543, database: "zero" });
  });

  it("an explicit uselibpqcompat, and pg's own no-verify, are left as written", () => {
    // pg's own reading: require verifies as verify-full does (pg warns about it).
    expect(sslFor("postgres://u@db.example.com/zero?uselibpqcompat=false&sslmode=require")).toEqual({});
    expect(sslFor("postgres://u@db.example.com/zero?sslmode=require&uselibpqcompat=true")).toEqual({ rejectUnauthorized: false });
    expect(sslFor("postgres://u@db.example.com/zero?sslmode=no-verify")).toEqual({ rejectUnauthorized: false });
  });
});

describe("PGSSLMODE, read as pg reads it rather than as psql (README, DATABASE_URL)", () => {
  it("disable, and a mode pg does not know, connect in the clear; no-verify does not verify; every other mode verifies as verify-full; the URL's sslmode wins", () => {
    const saved = process.env.PGSSLMODE;
    const sslWith = (mode: string, url = "postgres://u@db.example.com/zero") => {
      process.env.PGSSLMODE = mode;
      return sslFor(url);
    };
    try {
      expect(sslWith("disable")).toBe(false);
      expect(sslWith("allow")).toBe(false);
      expect(sslWith("no-verify")).toEqual({ rejectUnauthorized: false });
      // `true`: Node's TLS defaults, which verify the chain and the host name.
      for (const mode of ["prefer", "require", "verify-ca", "verify-full"]) expect(sslWith(mode), mode).toBe(true);
      expect(sslWith("verify-full", "postgres://u@db.example.com/zero?sslmode=require")).toEqual({ rejectUnauthorized: false });
    } finally {
      if (saved === undefined) delete process.env.PGSSLMODE;
      else process.env.PGSSLMODE = saved;
    }
  });
});

/**
 * Connecting as psql would, against a real Postgres (the embedded one, which
 * listens on loopback TCP only and has no TLS): what each URL reaches, and
 * whether the connection is encrypted.
 */
describe("DATABASE_URL, connected to as psql connects", () => {
  const logger = createLogger("silent");
  let dataDir: string;
  let server: EmbeddedPostgres;
  let port: number;
  let password: string;
  let certificate: Awaited<ReturnType<typeof selfSignedCertificate>>;
  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-database-url-"));
    server = await startEmbeddedPostgres(dataDir, logger);
    const url = new URL(server.url);
    port = Number(url.port);
    password = decodeURIComponent(url.password);
    certificate = await selfSignedCertificate();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await removeDataDir(dataDir);
    await certificate?.remove();
  });

  /** Opens the store for `url` (checked as the service checks it) with `env` as libpq's variables; answers whether it is encrypted. */
  async function connect(url: string, env: Record<string, string | undefined> = {}): Promise<{ encrypted: boolean }> {
    const names = ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSSLMODE"];
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    for (const name of names) delete process.env[name];
    Object.assign(process.env, env);
    try {
      const store = await openStore({ databaseUrl: loadConfig({ DATABASE_URL: url }).databaseUrl, dataDir, logger });
      try {
        const { rows } = await sql<{ ssl: boolean }>`select ssl from pg_stat_ssl where pid = pg_backend_pid()`.execute(store.db);
        return { encrypted: rows[0]!.ssl };
      } finally {
        await store.close();
      }
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }

  it("takes the host from PGHOST when the URL has none, as it takes the port, user and password from theirs", async () => {
    const libpq = { PGHOST: "127.0.0.1", PGPORT: String(port), PGUSER: "postgres", PGPASSWORD: password };
    expect(await connect("postgres://", libpq)).toEqual({ encrypted: false });
    expect(await connect("postgres:///postgres", libpq)).toEqual({ encrypted: false });
    const closed = await unusedPort();
    await expect(connect("postgres:///postgres", { ...libpq, PGPORT: String(closed) })).rejects.toThrow(
      new RegExp(`^cannot reach the database at 127\\.0\\.0\\.1:${closed}/postgres: .*ECONNREFUSED`),
    );
  });

  it("with no host in the URL or PGHOST, uses the local server's socket where psql looks for it", async () => {
    // A socket for a port nothing listens on over TCP, so only the socket can reach the server.
    const socketPort = await unusedPort();
    const socket = path.join("/tmp", `.s.PGSQL.${socketPort}`);
    let connections = 0;
    const proxy = net.createServer((client) => {
      connections++;
      const upstream = net.connect(port, "127.0.0.1");
      client.pipe(upstream).pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(socket, resolve));
    try {
      expect(await connect("postgres:///postgres", { PGPORT: String(socketPort), PGUSER: "postgres", PGPASSWORD: password })).toEqual({ encrypted: false });
      expect(connections).toBeGreaterThan(0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("sslmode=prefer connects in the clear to a server without TLS, as psql does", async () => {
    expect(await connect(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres?sslmode=prefer`)).toEqual({ encrypted: false });
  });

  it("sslmode=prefer encrypts when the server offers TLS", async () => {
    // A server that offers TLS: a proxy that answers the client's SSLRequest with "S", ends TLS, and passes the rest on.
    const [cert, key] = await Promise.all([fs.readFile(certificate.env.ZERO_TLS_CERT_FILE), fs.readFile(certificate.env.ZERO_TLS_KEY_FILE)]);
    let encryptedSessions = 0;
    const proxy = net.createServer((client) => {
      client.once("data", () => {
        client.write("S");
        const secure = new tls.TLSSocket(client, { isServer: true, cert, key });
        secure.once("secure", () => encryptedSessions++);
        const upstream = net.connect(port, "127.0.0.1");
        secure.pipe(upstream).pipe(secure);
        secure.on("error", () => upstream.destroy());
        upstream.on("error", () => secure.destroy());
      });
    });
    const proxyPort = await new Promise<number>((resolve) => proxy.listen(0, "127.0.0.1", () => resolve((proxy.address() as net.AddressInfo).port)));
    try {
      await connect(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${proxyPort}/postgres?sslmode=prefer`);
      expect(encryptedSessions).toBeGreaterThan(0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("sslmode=prefer fails at once, as sslmode=disable does, when the server hangs up on the question of TLS", async () => {
    // A TCP load balancer with no healthy backend: it takes the connection, then closes it once the client speaks.
    const hangsUp = net.createServer((client) => client.once("data", () => client.end()));
    const hangsUpPort = await new Promise<number>((resolve) => hangsUp.listen(0, "127.0.0.1", () => resolve((hangsUp.address() as net.AddressInfo).port)));
    try {
      for (const mode of ["disable", "prefer"]) {
        await expect(connect(`postgres://postgres:secret@127.0.0.1:${hangsUpPort}/postgres?sslmode=${mode}`), mode).rejects.toThrow(
          `cannot reach the database at 127.0.0.1:${hangsUpPort}/postgres: Connection terminated unexpectedly`,
        );
      }
    } finally {
      await new Promise((resolve) => hangsUp.close(resolve));
    }
  });

  it("sslmode=prefer connects again in the clear when the TLS handshake fails, as psql does", async () => {
    // A server that says yes to TLS and then cannot do it; asked nothing, it is the real server.
    let failedHandshakes = 0;
    const proxy = net.createServer((client) => {
      client.once("data", (first) => {
        if (first.length === 8 && first.readUInt32BE(4) === 80877103) {
          client.write("S");
          client.once("data", () => {
            failedHandshakes++;
            client.end("not TLS at all\n");
          });
          return;
        }
        const upstream = net.connect(port, "127.0.0.1");
        upstream.write(first);
        client.pipe(upstream).pipe(client);
        client.on("error", () => upstream.destroy());
        upstream.on("error", () => client.destroy());
      });
    });
    const proxyPort = await new Promise<number>((resolve) => proxy.listen(0, "127.0.0.1", () => resolve((proxy.address() as net.AddressInfo).port)));
    try {
      expect(await connect(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${proxyPort}/postgres?sslmode=prefer`)).toEqual({ encrypted: false });
      expect(failedHandshakes).toBeGreaterThan(0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
