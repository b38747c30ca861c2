import { spawnSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { selfSignedCertificate } from "../support/tls.js";

/** The lines of the ConfigError `env` gets; none when it loads. */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.message.split("\n");
  }
}

/**
 * `problems`, in a child process without root's power to write and search
 * anywhere (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), for checks root passes
 * whatever the permissions; as root otherwise, so it still reads the checkout.
 */
function problemsWithoutOverride(env: Record<string, string>): string[] {
  const script = `import { ConfigError, loadConfig } from "./src/config.ts";
try { loadConfig(${JSON.stringify(env)}); console.log("[]"); }
catch (error) { if (!(error instanceof ConfigError)) throw error; console.log(JSON.stringify(error.message.split("\\n"))); }`;
  const child = spawnSync(
    "setpriv",
    ["--bounding-set=-dac_override,-dac_read_search", "--", process.execPath, "--import", "tsx", "--input-type=module", "-e", script],
    { cwd: path.resolve(import.meta.dirname, "../.."), encoding: "utf8" },
  );
  if (child.status !== 0) throw new Error(`the check without root's override failed: ${child.error?.message ?? child.stderr}`);
  return JSON.parse(child.stdout) as string[];
}

describe("configuration from the environment", () => {
  it("has the documented defaults", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: "127.0.0.1",
      databaseUrl: undefined,
      publicUrl: "http://127.0.0.1:8080",
      upstreams: [],
      offlineWriter: true,
      freePoolDailyRequests: 1000,
      generationLimit: 20,
      generationWindowSeconds: 3600,
      signup: "open",
      logLevel: "info",
    });
    expect(config.dataDir).toMatch(/\/data$/);
  });

  it("keeps artifacts in files on the embedded database and in the database with DATABASE_URL, unless ZERO_ARTIFACTS says", () => {
    const dataDir = path.join(os.tmpdir(), "zero-data");
    expect(loadConfig({ ZERO_DATA_DIR: dataDir }).artifacts).toEqual({ kind: "file", dir: path.join(dataDir, "artifacts") });
    expect(loadConfig({ DATABASE_URL: "postgres://db/zero" }).artifacts).toEqual({ kind: "postgres" });
    expect(loadConfig({ DATABASE_URL: "postgres://db/zero", ZERO_ARTIFACTS: "file" }).artifacts.kind).toBe("file");
    const shared = path.join(os.tmpdir(), "zero-shared");
    expect(loadConfig({ ZERO_ARTIFACTS: `file:${shared}` }).artifacts).toEqual({ kind: "file", dir: shared });
    expect(loadConfig({ ZERO_ARTIFACTS: "postgres" }).artifacts).toEqual({ kind: "postgres" });
  });

  it("reads an s3:// store with the standard AWS variables", () => {
    const aws = { AWS_ACCESS_KEY_ID: "AKID", AWS_SECRET_ACCESS_KEY: "secret" };
    expect(loadConfig({ ZERO_ARTIFACTS: "s3://my-bucket/zero/sites/", AWS_REGION: "eu-west-3", ...aws }).artifacts).toEqual({
      kind: "s3",
      s3: {
        bucket: "my-bucket",
        prefix: "zero/sites",
        endpoint: "https://s3.eu-west-3.amazonaws.com",
        region: "eu-west-3",
        accessKeyId: "AKID",
        secretAccessKey: "secret",
        sessionToken: undefined,
        forcePathStyle: false,
      },
    });
    const minio = loadConfig({
      ZERO_ARTIFACTS: "s3://sites",
      AWS_ENDPOINT_URL: "http://other:1",
      AWS_ENDPOINT_URL_S3: "http://minio:9000/",
      ZERO_S3_FORCE_PATH_STYLE: "true",
      ...aws,
    }).artifacts;
    expect(minio).toMatchObject({ s3: { bucket: "sites", prefix: "", endpoint: "http://minio:9000", region: "us-east-1", forcePathStyle: true } });
    const lines = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        return (error as ConfigError).message.split("\n");
      }
    };
    expect(lines({ ZERO_ARTIFACTS: "s3://Bad_Bucket/x", ...aws })).toEqual(['ZERO_ARTIFACTS: "Bad_Bucket" is not an S3 bucket name']);
    expect(lines({ ZERO_ARTIFACTS: "s3://ok-bucket" })).toEqual(["AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY: an s3:// ZERO_ARTIFACTS needs both"]);
    expect(lines({ ZERO_ARTIFACTS: "s3://ok-bucket", ZERO_S3_FORCE_PATH_STYLE: "yes", ...aws })).toEqual([
      'ZERO_S3_FORCE_PATH_STYLE: expected true or false, got "yes"',
    ]);
    // Checked whatever the store, as every other variable is: a typo stops the process before anyone relies on it.
    expect(lines({ ZERO_S3_FORCE_PATH_STYLE: "yes" })).toEqual(['ZERO_S3_FORCE_PATH_STYLE: expected true or false, got "yes"']);
    expect(lines({ ZERO_ARTIFACTS: "disk" })).toEqual(['ZERO_ARTIFACTS: expected file, file:<dir>, postgres or s3://bucket/prefix, got "disk"']);
  });

  it("retries transient stage errors 3 tries in all by default, with a 1 s to 60 s backoff; refuses 0 tries", () => {
    expect(loadConfig({})).toMatchObject({ stageMaxAttempts: 3, stageRetryBaseMs: 1000, stageRetryCapMs: 60_000 });
    expect(loadConfig({ ZERO_STAGE_MAX_ATTEMPTS: "1" }).stageMaxAttempts).toBe(1);
    expect(() => loadConfig({ ZERO_STAGE_MAX_ATTEMPTS: "0" })).toThrow(/^ZERO_STAGE_MAX_ATTEMPTS/);
  });

  it("reads upstreams as a JSON array", () => {
    const config = loadConfig({
      ZERO_UPSTREAMS: JSON.stringify([{ name: "a", baseUrl: "http://127.0.0.1:9/v1/", apiKey: "k", model: "m" }]),
    });
    expect(config.upstreams).toEqual([{ name: "a", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k", model: "m" }]);
  });

  it("reports every bad value, one line each, naming the variable", () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: "eighty",
        DATABASE_URL: "mysql://x",
        ZERO_UPSTREAMS: "[{",
        ZERO_SIGNUP: "maybe",
        ZERO_GENERATION_LIMIT: "-1",
        LOG_LEVEL: "loud",
        ZERO_PUBLIC_URL: "ftp://x",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as Error).message.split("\n");
    expect(lines.map((l) => l.split(":")[0])).toEqual([
      "PORT",
      "DATABASE_URL",
      "ZERO_PUBLIC_URL",
      "ZERO_UPSTREAMS",
      "ZERO_GENERATION_LIMIT",
      "ZERO_SIGNUP",
      "LOG_LEVEL",
    ]);
  });

  it("refuses an upstream key it does not know, suggesting the one meant, and two upstreams of one name", () => {
    const upstream = { name: "a", baseUrl: "http://127.0.0.1:9/v1", model: "m" };
    expect(problems({ ZERO_UPSTREAMS: JSON.stringify([{ ...upstream, api_key: "sk-live-123", modle: "x", region: "eu" }]) })).toEqual([
      'ZERO_UPSTREAMS[0] ("a"): unknown key "api_key" (did you mean "apiKey"?)',
      'ZERO_UPSTREAMS[0] ("a"): unknown key "modle" (did you mean "model"?)',
      'ZERO_UPSTREAMS[0] ("a"): unknown key "region" (known: name, baseUrl, apiKey, model, embeddingModel)',
    ]);
    expect(problems({ ZERO_UPSTREAMS: JSON.stringify([{ ...upstream, embedding_model: "e" }]) })).toEqual([
      'ZERO_UPSTREAMS[0] ("a"): unknown key "embedding_model" (did you mean "embeddingModel"?)',
    ]);
    expect(problems({ ZERO_UPSTREAMS: JSON.stringify([upstream, { ...upstream, model: "n" }, { ...upstream, name: "b" }, upstream]) })).toEqual([
      'ZERO_UPSTREAMS[1]: the name "a" is also ZERO_UPSTREAMS[0]\'s; each upstream needs a name of its own (it labels logs and metrics)',
      'ZERO_UPSTREAMS[3]: the name "a" is also ZERO_UPSTREAMS[0]\'s; each upstream needs a name of its own (it labels logs and metrics)',
    ]);
  });

  it("refuses an upstream without a base URL or model", () => {
    expect(() => loadConfig({ ZERO_UPSTREAMS: JSON.stringify([{ name: "a", apiKey: "k" }]) })).toThrow(
      /ZERO_UPSTREAMS\[0\]: missing or invalid baseUrl, model/,
    );
  });

  it("refuses a ZERO_PUBLIC_URL with a query or fragment, which would land inside every public URL", () => {
    for (const value of [
      "https://zero.example.com/app?x=1#frag",
      "https://zero.example.com/app?x=1",
      "https://zero.example.com/app#frag",
      "https://zero.example.com/?",
    ]) {
      expect(problems({ ZERO_PUBLIC_URL: value })).toEqual([expect.stringMatching(/^ZERO_PUBLIC_URL: .*query or fragment/)]);
    }
    expect(loadConfig({ ZERO_PUBLIC_URL: "https://zero.example.com/app/" }).publicUrl).toBe("https://zero.example.com/app");
  });

  it("refuses an upstream baseUrl that is not http:// or https://", () => {
    for (const baseUrl of ["ftp://host/v1", "javascript:alert(1)", "file:///etc/passwd"]) {
      expect(problems({ ZERO_UPSTREAMS: JSON.stringify([{ name: "a", baseUrl, apiKey: "k", model: "m" }]) })).toEqual([
        `ZERO_UPSTREAMS[0].baseUrl: expected an http:// or https:// URL, got "${baseUrl}"`,
      ]);
    }
  });

  it("links to localhost by default when HOST is every address (0.0.0.0, ::), which no browser can open", () => {
    for (const host of ["0.0.0.0", "::", "::0", "0:0:0:0:0:0:0:0"]) {
      expect(loadConfig({ HOST: host, PORT: "9000" }).publicUrl).toBe("http://localhost:9000");
    }
    expect(loadConfig({ HOST: "10.1.2.3", PORT: "9000" }).publicUrl).toBe("http://10.1.2.3:9000");
    expect(loadConfig({ HOST: "::1", PORT: "9000" }).publicUrl).toBe("http://[::1]:9000");
    expect(loadConfig({ HOST: "0.0.0.0", ZERO_PUBLIC_URL: "https://zero.example.com" }).publicUrl).toBe("https://zero.example.com");
  });

  it("refuses a HOST that is neither an IP address nor a host name", () => {
    for (const host of ["999.1.1.1", "1.2.3", "bad host", "-lead.example.com", "[::1]", "a..b"]) {
      expect(problems({ HOST: host })).toEqual([`HOST: expected an IP address or a host name, got "${host}"`]);
    }
    for (const host of ["0.0.0.0", "127.0.0.1", "::", "::1", "fe80::1%eth0", "localhost", "zero-api.internal", "my_service", "example.com."]) {
      expect(loadConfig({ HOST: host }).host).toBe(host);
    }
  });

  it("refuses a malformed DATABASE_URL as a bad value rather than an unreachable database", () => {
    for (const url of ["postgres://u@127.0.0.1:notaport/db", "postgres://u@127.0.0.1:99999/db", "postgres://u@[::1/db"]) {
      expect(problems({ DATABASE_URL: url })).toEqual([expect.stringMatching(/^DATABASE_URL: /)]);
    }
    // The password never appears in the message.
    expect(problems({ DATABASE_URL: "postgres://u:hunter2@h:nope/db" }).join("\n")).not.toContain("hunter2");
    for (const url of [
      "postgres://u@host:5432/db?sslmode=require",
      "postgresql://u:p%40ss@[::1]:5432/db",
      "postgres://u@host/db",
      "postgres:///db?host=/var/run/postgresql",
    ]) {
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
    }
  });

  it("takes a DATABASE_URL without a host, as psql does: the host then comes from PGHOST, or is the local server", () => {
    for (const url of ["postgres://", "postgres:///zero", "postgresql://u@/zero", "postgres:///zero?port=6543"]) {
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
    }
  });

  it("refuses in DATABASE_URL an sslmode pg cannot honour, verify-ca without a CA, and an unreadable sslrootcert", () => {
    expect(problems({ DATABASE_URL: "postgres://u@h/db?sslmode=verify-ca" })).toEqual([
      expect.stringMatching(/^DATABASE_URL: sslmode=verify-ca needs sslrootcert/),
    ]);
    expect(problems({ DATABASE_URL: "postgres://u@h/db?sslmode=strict" })).toEqual([expect.stringMatching(/^DATABASE_URL: sslmode "strict"/)]);
    expect(problems({ DATABASE_URL: "postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem" })).toEqual([
      "DATABASE_URL: sslrootcert: cannot read /nonexistent/ca.pem: no such file",
    ]);
    expect(problems({ DATABASE_URL: "postgres://u@h/db?sslmode=allow" })).toEqual([expect.stringMatching(/^DATABASE_URL: sslmode "allow" is not one of/)]);
  });

  it("names the AWS endpoint variable that holds the bad value", () => {
    const s3 = { ZERO_ARTIFACTS: "s3://ok-bucket", AWS_ACCESS_KEY_ID: "AKID", AWS_SECRET_ACCESS_KEY: "secret" };
    expect(problems({ ...s3, AWS_ENDPOINT_URL_S3: "notaurl" })).toEqual(['AWS_ENDPOINT_URL_S3: expected an http:// or https:// URL, got "notaurl"']);
    expect(problems({ ...s3, AWS_ENDPOINT_URL: "notaurl" })).toEqual(['AWS_ENDPOINT_URL: expected an http:// or https:// URL, got "notaurl"']);
    expect(problems({ ...s3, AWS_ENDPOINT_URL: "notaurl", AWS_ENDPOINT_URL_S3: "http://minio:9000" })).toEqual([]);
    expect(problems({ ...s3, AWS_REGION: "eu west" })).toEqual(['AWS_REGION: "eu west" does not make an S3 endpoint (https://s3.eu west.amazonaws.com)']);
  });

  describe("files it names, checked before anything starts", () => {
    let dir: string;
    let good: Awaited<ReturnType<typeof selfSignedCertificate>>;
    let other: Awaited<ReturnType<typeof selfSignedCertificate>>;
    beforeAll(async () => {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-config-"));
      await fs.writeFile(path.join(dir, "junk.pem"), "not a certificate\n");
      await fs.writeFile(path.join(dir, "a-file"), "");
      [good, other] = await Promise.all([selfSignedCertificate(), selfSignedCertificate()]);
    });
    afterAll(async () => {
      await fs.rm(dir, { recursive: true, force: true });
      await good.remove();
      await other.remove();
    });

    it("loads a certificate and its key", () => {
      expect(loadConfig(good.env)).toMatchObject({ tlsCertFile: good.env.ZERO_TLS_CERT_FILE, tlsKeyFile: good.env.ZERO_TLS_KEY_FILE });
    });

    it("refuses TLS files that are missing, a directory, not PEM, or a key of another certificate, naming the variable", () => {
      const missing = path.join(dir, "missing.pem");
      const junk = path.join(dir, "junk.pem");
      expect(problems({ ...good.env, ZERO_TLS_CERT_FILE: missing })).toEqual([`ZERO_TLS_CERT_FILE: cannot read ${missing}: no such file`]);
      expect(problems({ ZERO_TLS_CERT_FILE: missing, ZERO_TLS_KEY_FILE: missing })).toEqual([
        `ZERO_TLS_CERT_FILE: cannot read ${missing}: no such file`,
        `ZERO_TLS_KEY_FILE: cannot read ${missing}: no such file`,
      ]);
      expect(problems({ ...good.env, ZERO_TLS_KEY_FILE: dir })).toEqual([`ZERO_TLS_KEY_FILE: cannot read ${dir}: a directory, not a file`]);
      expect(problems({ ...good.env, ZERO_TLS_CERT_FILE: junk })).toEqual([
        expect.stringMatching(new RegExp(`^ZERO_TLS_CERT_FILE: ${junk} is not a PEM certificate \\(.*no start line\\)$`)),
      ]);
      expect(problems({ ...good.env, ZERO_TLS_KEY_FILE: junk })).toEqual([
        expect.stringMatching(new RegExp(`^ZERO_TLS_KEY_FILE: ${junk} is not a PEM private key`)),
      ]);
      expect(problems({ ...good.env, ZERO_TLS_KEY_FILE: other.env.ZERO_TLS_KEY_FILE })).toEqual([
        expect.stringMatching(/^ZERO_TLS_KEY_FILE: .* is not the key of ZERO_TLS_CERT_FILE's certificate \(.*key values mismatch\)$/),
      ]);
    });

    it("refuses a ZERO_DATA_DIR that is a file or lies under one", () => {
      const file = path.join(dir, "a-file");
      expect(problems({ ZERO_DATA_DIR: file })).toEqual([`ZERO_DATA_DIR: ${file} is a file, not a directory`]);
      expect(problems({ ZERO_DATA_DIR: path.join(file, "data") })).toEqual([`ZERO_DATA_DIR: ${file} is a file, not a directory`]);
      expect(problems({ ZERO_ARTIFACTS: `file:${file}/artifacts` })).toEqual([`ZERO_ARTIFACTS: ${file} is a file, not a directory`]);
      expect(loadConfig({ ZERO_DATA_DIR: path.join(dir, "new", "data") }).dataDir).toBe(path.join(dir, "new", "data"));
    });

    it("refuses a ZERO_DATA_DIR that is, or lies under, a symbolic link to nothing", async () => {
      const dangling = path.join(dir, "dangling");
      const target = path.join(dir, "gone", "data");
      await fs.symlink(target, dangling);
      expect(problems({ ZERO_DATA_DIR: dangling })).toEqual([`ZERO_DATA_DIR: ${dangling} is a symbolic link to ${target}, which does not exist`]);
      expect(problems({ ZERO_DATA_DIR: path.join(dangling, "data") })).toEqual([
        `ZERO_DATA_DIR: ${dangling} is a symbolic link to ${target}, which does not exist`,
      ]);
      expect(problems({ ZERO_ARTIFACTS: `file:${dangling}` })).toEqual([`ZERO_ARTIFACTS: ${dangling} is a symbolic link to ${target}, which does not exist`]);
    });

    // Root may write anywhere but on a read-only file system (see the process test, which mounts one), so as root
    // (CI) the checks run in a child without that power.
    const asUser = process.getuid?.() === 0 ? problemsWithoutOverride : problems;

    it("refuses a ZERO_DATA_DIR in a directory it may not write in", async () => {
      const locked = path.join(dir, "locked");
      await fs.mkdir(locked, { mode: 0o500 });
      expect(asUser({ ZERO_DATA_DIR: path.join(locked, "data") })).toEqual([`ZERO_DATA_DIR: cannot write in ${locked}: permission denied`]);
      expect(asUser({ ZERO_ARTIFACTS: `file:${locked}` })).toEqual([`ZERO_ARTIFACTS: cannot write in ${locked}: permission denied`]);
    });

    it("refuses a ZERO_DATA_DIR under a directory it may not pass through", async () => {
      const closed = path.join(dir, "closed");
      await fs.mkdir(closed, { mode: 0o000 });
      const data = path.join(closed, "zero", "data");
      expect(asUser({ ZERO_DATA_DIR: data })).toEqual([`ZERO_DATA_DIR: cannot reach ${data}: permission denied`]);
      await fs.chmod(closed, 0o700);
    });
  });
});
