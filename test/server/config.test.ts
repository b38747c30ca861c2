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
