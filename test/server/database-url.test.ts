import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { postgresClientConfig } from "../../src/db/database.js";
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

  it("require and prefer encrypt without verifying the certificate (a managed Postgres's own CA), and say nothing", () => {
    expect(sslFor("postgres://u@db.example.com:5432/zero?sslmode=require")).toEqual({ rejectUnauthorized: false });
    expect(sslFor("postgres://u@db.example.com:5432/zero?sslmode=prefer")).toEqual({ rejectUnauthorized: false });
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
