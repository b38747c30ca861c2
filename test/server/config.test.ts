import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

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
    expect(loadConfig({ ZERO_DATA_DIR: "/srv/zero" }).artifacts).toEqual({ kind: "file", dir: "/srv/zero/artifacts" });
    expect(loadConfig({ DATABASE_URL: "postgres://db/zero" }).artifacts).toEqual({ kind: "postgres" });
    expect(loadConfig({ DATABASE_URL: "postgres://db/zero", ZERO_ARTIFACTS: "file" }).artifacts.kind).toBe("file");
    expect(loadConfig({ ZERO_ARTIFACTS: "file:/mnt/shared" }).artifacts).toEqual({ kind: "file", dir: "/mnt/shared" });
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

  it("refuses an upstream without a base URL or model", () => {
    expect(() => loadConfig({ ZERO_UPSTREAMS: JSON.stringify([{ name: "a", apiKey: "k" }]) })).toThrow(
      /ZERO_UPSTREAMS\[0\]: missing or invalid baseUrl, model/,
    );
  });
});
