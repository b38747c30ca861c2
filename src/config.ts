import type net from "node:net";
import path from "node:path";
import { parseTrustedProxies } from "./server/client-address.js";
import { withoutTrailingSlashes } from "./strings.js";

/** One upstream OpenAI-compatible provider, tried in the order given. */
export interface UpstreamConfig {
  /** Operator-facing name; used in logs and metrics, never shown to clients. */
  name: string;
  baseUrl: string;
  apiKey: string;
  /** The upstream's own model name that `project-zero` maps to. */
  model: string;
  /** The upstream's embedding model, when it serves `/v1/embeddings` for the alias. */
  embeddingModel?: string;
}

/** Upstream time limits, in milliseconds. */
export interface UpstreamTimeouts {
  /** TCP (and TLS) connect. */
  connectMs: number;
  /** Until the response head arrives; a non-streaming answer only starts once it is complete. */
  firstByteMs: number;
  /** Longest silence between two pieces of a response body. */
  idleMs: number;
}

/** Where built sites and books live (`ZERO_ARTIFACTS`). */
export type ArtifactsConfig =
  /** A directory of this instance's (`file`: `ZERO_DATA_DIR/artifacts`; `file:<dir>`). */
  | { kind: "file"; dir: string }
  /** Tables in the service's own database, shared by every instance on it. */
  | { kind: "postgres" }
  /** An S3-compatible bucket (`s3://bucket/prefix`), reached with the standard AWS variables. */
  | { kind: "s3"; s3: S3Config };

/** An S3-compatible bucket and how to reach it. */
export interface S3Config {
  bucket: string;
  /** Prepended to every key, without leading or trailing `/`; may be empty. */
  prefix: string;
  /** `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, else AWS's own endpoint for the region. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string | undefined;
  /** `ZERO_S3_FORCE_PATH_STYLE`: `endpoint/bucket/key` instead of `bucket.endpoint/key`. */
  forcePathStyle: boolean;
}

/** Validated service configuration. Built once at start-up from the environment. */
export interface Config {
  port: number;
  host: string;
  /** Postgres URL; undefined selects an embedded database under `dataDir`. */
  databaseUrl: string | undefined;
  /** The embedded database when `databaseUrl` is undefined; undefined lets the data dir decide (see openStore). */
  embeddedDatabase: "postgres" | "pglite" | undefined;
  dataDir: string;
  /** `ZERO_ARTIFACTS`: by default the database with `DATABASE_URL`, else files under `dataDir`. */
  artifacts: ArtifactsConfig;
  /** Base of preview and published URLs; `https` makes cookies Secure. */
  publicUrl: string;
  upstreams: UpstreamConfig[];
  /** Bounds on each upstream attempt; the next upstream is tried when one runs out before the first byte. */
  upstreamTimeouts: UpstreamTimeouts;
  offlineWriter: boolean;
  freePoolDailyRequests: number;
  /** Chat requests one account may have served per UTC day; undefined: no cap. */
  chatDailyRequestsPerAccount: number | undefined;
  generationLimit: number;
  generationWindowSeconds: number;
  signup: "open" | "closed";
  /** Sign-up attempts one client address may make per hour. */
  signUpsPerAddressPerHour: number;
  /** Peers whose `X-Forwarded-For` names the client (`ZERO_TRUSTED_PROXIES`); undefined: the socket's peer is the client. */
  trustedProxies: net.BlockList | undefined;
  logLevel: string;
  /** Optional TLS: both paths or neither. */
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** Stage workers per instance. */
  workerConcurrency: number;
  /** How long a claimed stage stays leased without a heartbeat. */
  stageLeaseMs: number;
  /** `ZERO_STAGE_MAX_ATTEMPTS`: tries of a stage failing with a transient error, the first included; 1 turns retries off. */
  stageMaxAttempts: number;
  /** `ZERO_STAGE_RETRY_BASE_MS`: the backoff before the first retry, doubling per attempt up to `stageRetryCapMs`. */
  stageRetryBaseMs: number;
  /** `ZERO_STAGE_RETRY_CAP_MS`: the longest backoff between two tries. */
  stageRetryCapMs: number;
  /** Bound on waiting for in-flight requests at shutdown. */
  shutdownGraceMs: number;
  /** A request's headers must arrive within this time (slowloris). */
  headersTimeoutMs: number;
  /** A whole request body must arrive within this time. */
  requestTimeoutMs: number;
  /** An HTTP/2 connection with no open stream is closed after this time. */
  http2IdleTimeoutMs: number;
  /** `ZERO_METRICS_TOKEN`: when set, `/metrics` needs it as a bearer token. */
  metricsToken: string | undefined;
  /** `ZERO_CORS_ORIGINS`: origins (or "*") whose browser pages may call `/v1`, `/api` and the RPCs; empty: no CORS. */
  corsOrigins: readonly string[];
  /** OTLP/HTTP collector for traces (`OTEL_EXPORTER_OTLP_ENDPOINT`); unset turns tracing off. */
  otlpEndpoint: string | undefined;
  /** `OTEL_SERVICE_NAME`, default "project-zero". */
  otelServiceName: string;
}

/** Thrown when the environment holds a bad value; `message` is one line naming the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/**
 * Reads and validates the configuration. Every bad value is reported, one line
 * each, in a single ConfigError, so an operator fixes them all in one go.
 */
/**
 * `terminal` says a person is watching stdout (`npm start` in a shell): then
 * the default log level is `warn`, and the one line a newcomer needs, the URL
 * to open, comes from `main.ts`. Under a supervisor the default stays `info`.
 */
export function loadConfig(env: Env = process.env, options: { terminal?: boolean } = {}): Config {
  const problems: string[] = [];
  const read = <T>(name: string, fallback: T, parse: (raw: string) => T | string): T => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const parsed = parse(raw.trim());
    if (typeof parsed === "string" && typeof fallback !== "string") {
      problems.push(`${name}: ${parsed}`);
      return fallback;
    }
    return parsed as T;
  };
  const int =
    (min: number, max: number) =>
    (raw: string): number | string => {
      if (!/^\d+$/.test(raw)) return `expected a whole number, got "${raw}"`;
      const value = Number(raw);
      if (value < min || value > max) return `expected ${min} to ${max}, got ${value}`;
      return value;
    };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === "") return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name}: expected one of ${allowed.join(", ")}, got "${raw}"`);
    return fallback;
  };

  const port = read("PORT", 8080, int(0, 65535));
  const host = env.HOST?.trim() || "127.0.0.1";
  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push(`DATABASE_URL: expected a postgres:// or postgresql:// URL`);
  }
  const dataDir = path.resolve(env.ZERO_DATA_DIR?.trim() || "./data");
  const embeddedDatabase = oneOf<"postgres" | "pglite" | "auto">("ZERO_EMBEDDED_DATABASE", ["postgres", "pglite", "auto"], "auto");
  const artifacts = readArtifacts(env, databaseUrl, dataDir, problems);
  const publicUrl = readPublicUrl(env.ZERO_PUBLIC_URL, host, port, problems);
  const upstreams = readUpstreams(env.ZERO_UPSTREAMS, problems);
  const upstreamTimeouts: UpstreamTimeouts = {
    connectMs: read("ZERO_UPSTREAM_CONNECT_TIMEOUT_MS", 5_000, int(1, 600_000)),
    firstByteMs: read("ZERO_UPSTREAM_FIRST_BYTE_TIMEOUT_MS", 120_000, int(1, 3_600_000)),
    idleMs: read("ZERO_UPSTREAM_IDLE_TIMEOUT_MS", 30_000, int(1, 3_600_000)),
  };
  const offlineWriter = oneOf("ZERO_OFFLINE_WRITER", ["on", "off"] as const, "on") === "on";
  const freePoolDailyRequests = read("ZERO_FREE_POOL_DAILY_REQUESTS", 1000, int(0, 1_000_000_000));
  const chatDailyRequestsPerAccount = read<number | undefined>("ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT", undefined, int(0, 1_000_000_000));
  const generationLimit = read("ZERO_GENERATION_LIMIT", 20, int(0, 1_000_000_000));
  const generationWindowSeconds = read("ZERO_GENERATION_WINDOW_SECONDS", 3600, int(1, 31 * 86400));
  const signup = oneOf("ZERO_SIGNUP", ["open", "closed"] as const, "open");
  const signUpsPerAddressPerHour = read("ZERO_SIGNUPS_PER_ADDRESS_PER_HOUR", 20, int(1, 1_000_000_000));
  const trustedProxies = readTrustedProxies(env.ZERO_TRUSTED_PROXIES, problems);
  const logLevel = oneOf("LOG_LEVEL", LOG_LEVELS, options.terminal ? "warn" : "info");
  const tlsCertFile = env.ZERO_TLS_CERT_FILE?.trim() || undefined;
  const tlsKeyFile = env.ZERO_TLS_KEY_FILE?.trim() || undefined;
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    problems.push("ZERO_TLS_CERT_FILE / ZERO_TLS_KEY_FILE: set both or neither");
  }
  const workerConcurrency = read("ZERO_WORKER_CONCURRENCY", 4, int(0, 256));
  const stageLeaseMs = read("ZERO_STAGE_LEASE_MS", 30_000, int(200, 3_600_000));
  const stageMaxAttempts = read("ZERO_STAGE_MAX_ATTEMPTS", 3, int(1, 100));
  const stageRetryBaseMs = read("ZERO_STAGE_RETRY_BASE_MS", 1000, int(0, 3_600_000));
  const stageRetryCapMs = read("ZERO_STAGE_RETRY_CAP_MS", 60_000, int(0, 86_400_000));
  const shutdownGraceMs = read("ZERO_SHUTDOWN_GRACE_MS", 10_000, int(0, 600_000));
  const headersTimeoutMs = read("ZERO_HEADERS_TIMEOUT_MS", 20_000, int(100, 600_000));
  const requestTimeoutMs = read("ZERO_REQUEST_TIMEOUT_MS", 120_000, int(100, 3_600_000));
  const http2IdleTimeoutMs = read("ZERO_HTTP2_IDLE_TIMEOUT_MS", 300_000, int(100, 86_400_000));
  const metricsToken = env.ZERO_METRICS_TOKEN?.trim() || undefined;
  const corsOrigins = readCorsOrigins(env.ZERO_CORS_ORIGINS, problems);
  const otlpEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || undefined;
  if (otlpEndpoint !== undefined && !/^https?:\/\/[^/]/.test(otlpEndpoint)) {
    problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL, got "${otlpEndpoint}"`);
  }
  const otelServiceName = env.OTEL_SERVICE_NAME?.trim() || "project-zero";

  if (problems.length > 0) throw new ConfigError(problems.join("\n"));
  return {
    port,
    host,
    databaseUrl,
    dataDir,
    artifacts,
    publicUrl,
    upstreams,
    upstreamTimeouts,
    offlineWriter,
    freePoolDailyRequests,
    chatDailyRequestsPerAccount,
    generationLimit,
    generationWindowSeconds,
    signup,
    signUpsPerAddressPerHour,
    trustedProxies,
    logLevel,
    embeddedDatabase: embeddedDatabase === "auto" ? undefined : embeddedDatabase,
    tlsCertFile,
    tlsKeyFile,
    workerConcurrency,
    stageLeaseMs,
    stageMaxAttempts,
    stageRetryBaseMs,
    stageRetryCapMs,
    shutdownGraceMs,
    headersTimeoutMs,
    requestTimeoutMs,
    http2IdleTimeoutMs,
    metricsToken,
    corsOrigins,
    otlpEndpoint,
    otelServiceName,
  };
}

function readArtifacts(env: Env, databaseUrl: string | undefined, dataDir: string, problems: string[]): ArtifactsConfig {
  const raw = env.ZERO_ARTIFACTS?.trim() || (databaseUrl ? "postgres" : "file");
  if (raw === "postgres") return { kind: "postgres" };
  if (raw === "file") return { kind: "file", dir: path.join(dataDir, "artifacts") };
  if (raw.startsWith("file:") && raw.length > "file:".length) return { kind: "file", dir: path.resolve(raw.slice("file:".length)) };
  if (!raw.startsWith("s3://")) {
    problems.push(`ZERO_ARTIFACTS: expected file, file:<dir>, postgres or s3://bucket/prefix, got "${raw}"`);
    return { kind: "postgres" };
  }
  const [bucket = "", ...rest] = raw.slice("s3://".length).split("/");
  const prefix = rest.filter((segment) => segment !== "").join("/");
  // S3's bucket naming rules, lowercase letters, digits, dots and hyphens, which also keeps the bucket safe in a host name.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) problems.push(`ZERO_ARTIFACTS: "${bucket}" is not an S3 bucket name`);
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || "us-east-1";
  const endpointRaw = env.AWS_ENDPOINT_URL_S3?.trim() || env.AWS_ENDPOINT_URL?.trim() || `https://s3.${region}.amazonaws.com`;
  let endpoint = endpointRaw;
  try {
    const url = new URL(endpointRaw);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
    endpoint = withoutTrailingSlashes(url.href);
  } catch {
    problems.push(`AWS_ENDPOINT_URL: expected an http:// or https:// URL, got "${endpointRaw}"`);
  }
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim() ?? "";
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim() ?? "";
  if (!accessKeyId || !secretAccessKey) problems.push("AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY: an s3:// ZERO_ARTIFACTS needs both");
  const forcePath = env.ZERO_S3_FORCE_PATH_STYLE?.trim() || "false";
  if (forcePath !== "true" && forcePath !== "false") problems.push(`ZERO_S3_FORCE_PATH_STYLE: expected true or false, got "${forcePath}"`);
  return {
    kind: "s3",
    s3: {
      bucket,
      prefix,
      endpoint,
      region,
      accessKeyId,
      secretAccessKey,
      sessionToken: env.AWS_SESSION_TOKEN?.trim() || undefined,
      forcePathStyle: forcePath === "true",
    },
  };
}

function readCorsOrigins(raw: string | undefined, problems: string[]): string[] {
  const entries = (raw ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const origins: string[] = [];
  for (const entry of entries) {
    if (entry === "*") {
      origins.push(entry);
      continue;
    }
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      if ((url.protocol === "http:" || url.protocol === "https:") && url.origin === withoutTrailingSlashes(entry)) origin = url.origin;
    } catch {
      origin = undefined;
    }
    if (origin === undefined) problems.push(`ZERO_CORS_ORIGINS: "${entry}" is not an origin (scheme://host[:port], nothing after it) or *`);
    else origins.push(origin);
  }
  return origins;
}

function readTrustedProxies(raw: string | undefined, problems: string[]): net.BlockList | undefined {
  const entries = (raw ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) return undefined;
  const { list, problem } = parseTrustedProxies(entries);
  if (problem) problems.push(`ZERO_TRUSTED_PROXIES: ${problem} (expected comma-separated addresses or CIDR ranges)`);
  return list;
}

function readPublicUrl(raw: string | undefined, host: string, port: number, problems: string[]): string {
  const value = raw?.trim();
  if (!value) return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  try {
    const url = new URL(value);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
    return withoutTrailingSlashes(url.href);
  } catch {
    problems.push(`ZERO_PUBLIC_URL: expected an http:// or https:// URL, got "${value}"`);
    return "";
  }
}

function readUpstreams(raw: string | undefined, problems: string[]): UpstreamConfig[] {
  if (raw === undefined || raw.trim() === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push("ZERO_UPSTREAMS: not valid JSON (expected an array of {name, baseUrl, apiKey, model})");
    return [];
  }
  if (!Array.isArray(parsed)) {
    problems.push("ZERO_UPSTREAMS: expected a JSON array of {name, baseUrl, apiKey, model}");
    return [];
  }
  const upstreams: UpstreamConfig[] = [];
  parsed.forEach((item: unknown, index) => {
    const entry = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    const missing = ["name", "baseUrl", "model"].filter((k) => typeof entry[k] !== "string" || entry[k] === "");
    if (entry.apiKey !== undefined && typeof entry.apiKey !== "string") missing.push("apiKey");
    if (entry.embeddingModel !== undefined && (typeof entry.embeddingModel !== "string" || entry.embeddingModel === "")) missing.push("embeddingModel");
    if (missing.length > 0) {
      problems.push(`ZERO_UPSTREAMS[${index}]: missing or invalid ${missing.join(", ")}`);
      return;
    }
    try {
      new URL(entry.baseUrl as string);
    } catch {
      problems.push(`ZERO_UPSTREAMS[${index}].baseUrl: not a URL`);
      return;
    }
    upstreams.push({
      name: entry.name as string,
      baseUrl: withoutTrailingSlashes(entry.baseUrl as string),
      apiKey: (entry.apiKey as string | undefined) ?? "",
      model: entry.model as string,
      ...(typeof entry.embeddingModel === "string" ? { embeddingModel: entry.embeddingModel } : {}),
    });
  });
  return upstreams;
}
