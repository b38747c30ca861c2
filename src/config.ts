import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import tls from "node:tls";
import { MAX_GENERATION_WINDOW_SECONDS } from "./api/limits.js";
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
  /** Until the response head arrives, and until a non-streamed answer has arrived whole (however slowly its bytes trickle in). */
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
 *
 * Besides `env`, it reads the files the configuration names (the TLS
 * certificate and key, DATABASE_URL's `sslrootcert` …) and looks at the data
 * directory's parents, so that a value that could only fail later fails here,
 * before anything is created or started. It writes nothing.
 *
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
  if (!isIpOrHostName(host)) problems.push(`HOST: expected an IP address or a host name, got "${host}"`);
  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (databaseUrl !== undefined) checkDatabaseUrl(databaseUrl, problems);
  const dataDir = path.resolve(env.ZERO_DATA_DIR?.trim() || "./data");
  const embeddedDatabase = oneOf<"postgres" | "pglite" | "auto">("ZERO_EMBEDDED_DATABASE", ["postgres", "pglite", "auto"], "auto");
  const artifacts = readArtifacts(env, databaseUrl, dataDir, problems);
  // The embedded database lives in the data dir, and so do `file` artifacts unless `file:<dir>` moves them.
  if (databaseUrl === undefined || (artifacts.kind === "file" && artifacts.dir === path.join(dataDir, "artifacts"))) {
    checkDirectory("ZERO_DATA_DIR", dataDir, problems);
  }
  const tlsCertFile = env.ZERO_TLS_CERT_FILE?.trim() || undefined;
  const tlsKeyFile = env.ZERO_TLS_KEY_FILE?.trim() || undefined;
  // With TLS the port speaks nothing else: links to it are https.
  const publicUrl = readPublicUrl(env.ZERO_PUBLIC_URL, { scheme: tlsCertFile ? "https" : "http", host, port }, problems);
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
  const generationWindowSeconds = read("ZERO_GENERATION_WINDOW_SECONDS", 3600, int(1, MAX_GENERATION_WINDOW_SECONDS));
  const signup = oneOf("ZERO_SIGNUP", ["open", "closed"] as const, "open");
  const signUpsPerAddressPerHour = read("ZERO_SIGNUPS_PER_ADDRESS_PER_HOUR", 20, int(1, 1_000_000_000));
  const trustedProxies = readTrustedProxies(env.ZERO_TRUSTED_PROXIES, problems);
  const logLevel = oneOf("LOG_LEVEL", LOG_LEVELS, options.terminal ? "warn" : "info");
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    problems.push("ZERO_TLS_CERT_FILE / ZERO_TLS_KEY_FILE: set both or neither");
  } else if (tlsCertFile !== undefined && tlsKeyFile !== undefined) {
    checkTlsFiles(tlsCertFile, tlsKeyFile, problems);
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
  // Ours, so checked whatever the store is (the AWS variables below may be set for other programs).
  const forcePath = env.ZERO_S3_FORCE_PATH_STYLE?.trim() || "false";
  if (forcePath !== "true" && forcePath !== "false") problems.push(`ZERO_S3_FORCE_PATH_STYLE: expected true or false, got "${forcePath}"`);
  const raw = env.ZERO_ARTIFACTS?.trim() || (databaseUrl ? "postgres" : "file");
  if (raw === "postgres") return { kind: "postgres" };
  if (raw === "file") return { kind: "file", dir: path.join(dataDir, "artifacts") };
  if (raw.startsWith("file:") && raw.length > "file:".length) {
    const dir = path.resolve(raw.slice("file:".length));
    checkDirectory("ZERO_ARTIFACTS", dir, problems);
    return { kind: "file", dir };
  }
  if (!raw.startsWith("s3://")) {
    problems.push(`ZERO_ARTIFACTS: expected file, file:<dir>, postgres or s3://bucket/prefix, got "${raw}"`);
    return { kind: "postgres" };
  }
  const [bucket = "", ...rest] = raw.slice("s3://".length).split("/");
  const prefix = rest.filter((segment) => segment !== "").join("/");
  // S3's bucket naming rules, lowercase letters, digits, dots and hyphens, which also keeps the bucket safe in a host name.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) problems.push(`ZERO_ARTIFACTS: "${bucket}" is not an S3 bucket name`);
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || "us-east-1";
  // The S3-specific variable wins over the general one, as in the AWS SDKs; a bad value is reported under its own name.
  const endpointVariable = env.AWS_ENDPOINT_URL_S3?.trim() ? "AWS_ENDPOINT_URL_S3" : env.AWS_ENDPOINT_URL?.trim() ? "AWS_ENDPOINT_URL" : undefined;
  const endpointRaw = (endpointVariable && env[endpointVariable]?.trim()) || `https://s3.${region}.amazonaws.com`;
  const endpointUrl = httpUrl(endpointRaw);
  if (endpointUrl === undefined) {
    problems.push(
      endpointVariable
        ? `${endpointVariable}: expected an http:// or https:// URL, got "${endpointRaw}"`
        : `AWS_REGION: "${region}" does not make an S3 endpoint (${endpointRaw})`,
    );
  }
  const endpoint = endpointUrl ? withoutTrailingSlashes(endpointUrl.href) : endpointRaw;
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim() ?? "";
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim() ?? "";
  if (!accessKeyId || !secretAccessKey) problems.push("AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY: an s3:// ZERO_ARTIFACTS needs both");
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

function readPublicUrl(raw: string | undefined, bound: { scheme: "http" | "https"; host: string; port: number }, problems: string[]): string {
  const value = raw?.trim();
  if (!value) return reachableUrl(bound.scheme, bound.host, bound.port);
  const url = httpUrl(value);
  if (url === undefined) {
    problems.push(`ZERO_PUBLIC_URL: expected an http:// or https:// URL, got "${value}"`);
    return "";
  }
  // Public URLs are this base with a path appended: a query or fragment would end up in the middle of each.
  if (value.includes("?") || value.includes("#")) {
    problems.push(`ZERO_PUBLIC_URL: expected a base URL without a query or fragment (? or #), got "${value}"`);
    return "";
  }
  return withoutTrailingSlashes(url.href);
}

/**
 * The URL a person or a link reaches a listener at: bound to every address,
 * it is reached at one of them, never at 0.0.0.0 or ::, which cannot be opened.
 */
export function reachableUrl(scheme: "http" | "https", host: string, port: number): string {
  const reachable = isEveryAddress(host) ? "localhost" : host;
  return `${scheme}://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}

/** `0.0.0.0`, or `::` however it is written: listening there is listening on every address of the machine. */
function isEveryAddress(host: string): boolean {
  if (net.isIPv4(host)) return host === "0.0.0.0";
  return net.isIPv6(host) && new net.SocketAddress({ address: host, family: "ipv6" }).address === "::";
}

/** `raw` as a URL if it is an http:// or https:// one. */
function httpUrl(raw: string): URL | undefined {
  const url = URL.parse(raw);
  return url && (url.protocol === "http:" || url.protocol === "https:") ? url : undefined;
}

/** Every key a ZERO_UPSTREAMS entry may have; the type makes sure none of UpstreamConfig's is missing. */
const UPSTREAM_KEYS = Object.keys({ name: true, baseUrl: true, apiKey: true, model: true, embeddingModel: true } satisfies Record<keyof UpstreamConfig, true>);

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
  const indexOfName = new Map<unknown, number>();
  parsed.forEach((item: unknown, index) => {
    const entry = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    const where = `ZERO_UPSTREAMS[${index}]${typeof entry.name === "string" ? ` (${JSON.stringify(entry.name)})` : ""}`;
    // A misspelt key would be ignored: a misspelt apiKey turns into no credential, found only at the upstream's 401s.
    for (const key of Object.keys(entry).filter((key) => !UPSTREAM_KEYS.includes(key))) {
      const meant = closestName(key, UPSTREAM_KEYS);
      problems.push(`${where}: unknown key ${JSON.stringify(key)} (${meant ? `did you mean "${meant}"?` : `known: ${UPSTREAM_KEYS.join(", ")}`})`);
    }
    // The name labels the upstream's logs and metrics: two of one name would be counted as one.
    const first = indexOfName.get(entry.name);
    if (first !== undefined)
      problems.push(
        `ZERO_UPSTREAMS[${index}]: the name ${JSON.stringify(entry.name)} is also ZERO_UPSTREAMS[${first}]'s; each upstream needs a name of its own (it labels logs and metrics)`,
      );
    else if (typeof entry.name === "string") indexOfName.set(entry.name, index);
    const missing = ["name", "baseUrl", "model"].filter((k) => typeof entry[k] !== "string" || entry[k] === "");
    if (entry.apiKey !== undefined && typeof entry.apiKey !== "string") missing.push("apiKey");
    if (entry.embeddingModel !== undefined && (typeof entry.embeddingModel !== "string" || entry.embeddingModel === "")) missing.push("embeddingModel");
    if (missing.length > 0) {
      problems.push(`ZERO_UPSTREAMS[${index}]: missing or invalid ${missing.join(", ")}`);
      return;
    }
    if (httpUrl(entry.baseUrl as string) === undefined) {
      problems.push(`ZERO_UPSTREAMS[${index}].baseUrl: expected an http:// or https:// URL, got "${entry.baseUrl as string}"`);
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

/** The one of `known` that `key` most likely misspells: the same but for case, `_` and `-` (`api_key`), or two edits from it at most (`modle`). */
function closestName(key: string, known: readonly string[]): string | undefined {
  const plain = (name: string) => name.toLowerCase().replace(/[-_]/g, "");
  let closest: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(plain(key), plain(name));
    if (distance <= 2 && distance < (closest?.distance ?? Number.POSITIVE_INFINITY)) closest = { name, distance };
  }
  return closest?.name;
}

/** Levenshtein distance: the fewest insertions, deletions and substitutions that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * An address `listen` can bind: an IP address, or a name made of DNS labels.
 * A name of dotted numbers is an IPv4 address or nothing (`999.1.1.1`), as no
 * top-level domain is all digits.
 */
function isIpOrHostName(host: string): boolean {
  if (net.isIP(host) !== 0) return true;
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  if (name === "" || name.length > 253) return false;
  const labels = name.split(".");
  if (/^\d+$/.test(labels.at(-1)!)) return false;
  // Underscores are not DNS but are common in container and compose service names, which /etc/hosts resolves.
  return labels.every((label) => label.length <= 63 && /^[\w-]+$/.test(label) && !label.startsWith("-") && !label.endsWith("-"));
}

/** The sslmode values `pg` reads: libpq's, less `allow` (which `pg` cannot do: plain first, TLS if refused), and `pg`'s own `no-verify`. */
const SSL_MODES = ["disable", "prefer", "require", "verify-ca", "verify-full", "no-verify"];

/**
 * What would otherwise surface only when connecting, as "cannot reach the
 * database": a URL that does not parse, a bad port, an sslmode `pg` does not
 * know, a certificate file it cannot read. A URL without a host is psql's
 * (`postgres:///zero`): the host comes from PGHOST, or is the local server
 * (see postgresClientConfig). The URL is never echoed: it may hold a password.
 */
function checkDatabaseUrl(raw: string, problems: string[]): void {
  const shape = "expected postgres://user:password@host:port/database, with @ : / ? # in the password percent-encoded";
  if (!/^postgres(ql)?:\/\//.test(raw)) {
    problems.push(`DATABASE_URL: expected a postgres:// or postgresql:// URL`);
    return;
  }
  // As pg reads it: `user@/db` is a URL with no host.
  const url = URL.parse(raw) ?? URL.parse(raw.replace("@/", "@placeholder/"));
  if (url === null) {
    problems.push(`DATABASE_URL: not a valid URL (${shape})`);
    return;
  }
  const port = url.searchParams.get("port") ?? url.port;
  if (port !== "" && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    problems.push(`DATABASE_URL: port "${port}" is not a port number (1 to 65535)`);
  }
  const sslmode = url.searchParams.get("sslmode");
  if (sslmode !== null && !SSL_MODES.includes(sslmode)) {
    problems.push(`DATABASE_URL: sslmode "${sslmode}" is not one of ${SSL_MODES.join(", ")}`);
  }
  // libpq's verify-ca (pg's too, in its libpq mode) checks the chain against a CA the URL must name.
  const libpqModes = (url.searchParams.get("uselibpqcompat") ?? "true") === "true";
  if (sslmode === "verify-ca" && libpqModes && !url.searchParams.get("sslrootcert")) {
    problems.push("DATABASE_URL: sslmode=verify-ca needs sslrootcert=<CA certificate file> (or use sslmode=verify-full)");
  }
  for (const parameter of ["sslrootcert", "sslcert", "sslkey"]) {
    const file = url.searchParams.get(parameter);
    if (file) readFile(`DATABASE_URL: ${parameter}`, file, problems);
  }
}

/**
 * The first of `dir` and its parents that exists must be a directory this
 * process may write in: a file there fails every mkdir below it, and a
 * read-only one fails them with a misleading ENOENT. A symbolic link to
 * nothing on the way fails them too.
 */
function checkDirectory(variable: string, dir: string, problems: string[]): void {
  for (let current = dir; ; current = path.dirname(current)) {
    let stat: fs.Stats | undefined;
    try {
      stat = fs.statSync(current);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A parent this process may not pass through (no search permission): every mkdir below it fails too.
      if (code === "EACCES" || code === "EPERM") {
        problems.push(`${variable}: cannot reach ${current}: ${fileProblem(error as NodeJS.ErrnoException)}`);
        return;
      }
      // Not there yet (mkdir makes it), or a parent is not a directory (found further up).
      if (code !== "ENOENT" && code !== "ENOTDIR") return;
      // A link to nothing: no mkdir makes the directory it names.
      if (code === "ENOENT" && fs.lstatSync(current, { throwIfNoEntry: false })?.isSymbolicLink()) {
        problems.push(`${variable}: ${current} is a symbolic link to ${fs.readlinkSync(current)}, which does not exist`);
        return;
      }
    }
    if (stat) {
      if (!stat.isDirectory()) problems.push(`${variable}: ${current} is ${stat.isFile() ? "a file, not a directory" : "not a directory"}`);
      else checkWritable(variable, current, problems);
      return;
    }
    if (path.dirname(current) === current) return;
  }
}

/**
 * Both files read, and one TLS context built from them as the server will:
 * a file that is missing, a directory, not PEM, or a key of another
 * certificate is reported now, naming its variable.
 */
function checkTlsFiles(certFile: string, keyFile: string, problems: string[]): void {
  const cert = readFile("ZERO_TLS_CERT_FILE", certFile, problems);
  const key = readFile("ZERO_TLS_KEY_FILE", keyFile, problems);
  if (cert === undefined || key === undefined) return;
  try {
    tls.createSecureContext({ cert, key });
    return;
  } catch (error) {
    // Which one is at fault: each alone, then the pair.
    const certProblem = tlsProblem({ cert });
    const keyProblem = tlsProblem({ key });
    if (certProblem) problems.push(`ZERO_TLS_CERT_FILE: ${certFile} is not a PEM certificate (${certProblem})`);
    if (keyProblem) problems.push(`ZERO_TLS_KEY_FILE: ${keyFile} is not a PEM private key (${keyProblem})`);
    if (certProblem || keyProblem) return;
    problems.push(
      (error as NodeJS.ErrnoException).code === "ERR_OSSL_X509_KEY_VALUES_MISMATCH"
        ? `ZERO_TLS_KEY_FILE: ${keyFile} is not the key of ZERO_TLS_CERT_FILE's certificate (${opensslReason(error)})`
        : `ZERO_TLS_CERT_FILE / ZERO_TLS_KEY_FILE: cannot serve TLS with ${certFile} and ${keyFile} (${opensslReason(error)})`,
    );
  }
}

function tlsProblem(options: tls.SecureContextOptions): string | undefined {
  try {
    tls.createSecureContext(options);
    return undefined;
  } catch (error) {
    return opensslReason(error);
  }
}

/** `error:0480006C:PEM routines::no start line` → `no start line`. */
function opensslReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const end = message.lastIndexOf("::");
  return end >= 0 ? message.slice(end + 2) : message;
}

function checkWritable(variable: string, dir: string, problems: string[]): void {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (error) {
    problems.push(`${variable}: cannot write in ${dir}: ${fileProblem(error as NodeJS.ErrnoException)}`);
  }
}

function readFile(variable: string, file: string, problems: string[]): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    problems.push(`${variable}: cannot read ${file}: ${fileProblem(error as NodeJS.ErrnoException)}`);
    return undefined;
  }
}

function fileProblem(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case "ENOENT":
      return "no such file";
    case "EISDIR":
      return "a directory, not a file";
    case "ENOTDIR":
      return "a parent is not a directory";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EROFS":
      return "read-only file system";
    default:
      return error.message;
  }
}
