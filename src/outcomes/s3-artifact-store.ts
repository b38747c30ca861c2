import { createHash } from "node:crypto";
import { AwsClient } from "aws4fetch";
import type { S3Config } from "../config.js";
import type { Logger } from "../observability/logger.js";
import { RepeatingFailure } from "../observability/repeating-failure.js";
import { ServiceError } from "../server/errors.js";
import { artifactStoreUnavailable, isValidKey, type ArtifactStore } from "./artifact-store.js";

/** How long one request to the bucket may take, its answer's body included, before the store is called unavailable. */
export const S3_REQUEST_TIMEOUT_MS = 10_000;

export interface S3StoreOptions {
  /** Says when the bucket fails the service and when it works again, a few lines per outage. */
  logger?: Logger;
  /** Default S3_REQUEST_TIMEOUT_MS; shorter in tests. */
  requestTimeoutMs?: number;
}

/**
 * The store in an S3-compatible bucket (`ZERO_ARTIFACTS=s3://bucket/prefix`):
 * AWS S3, R2, MinIO, anything that speaks the protocol. Requests are signed
 * with SigV4 by aws4fetch, a small signer over `fetch`, rather than the AWS
 * SDK: four calls (PUT, GET, DELETE, ListObjectsV2) need no more.
 *
 * `ifAbsent` is S3's conditional write, `If-None-Match: *`: the bucket
 * itself refuses the second writer with 412, so two instances claiming one
 * slug cannot both win. Every PUT carries its body's sha256, which S3
 * checks, so a body damaged on the way is refused, not stored.
 *
 * Each request is bounded (`requestTimeoutMs`) and stopped by its caller's
 * signal. A bucket that cannot be reached, does not answer in time or
 * answers anything the store does not expect (403 for a wrong key, 5xx) is
 * unavailable: there is nothing in the service to fix, but the bucket or
 * its configuration.
 */
export function createS3ArtifactStore(config: S3Config, options: S3StoreOptions = {}): ArtifactStore {
  const timeoutMs = options.requestTimeoutMs ?? S3_REQUEST_TIMEOUT_MS;
  // aws4fetch retries 5xx and 429 itself, with backoff, within the request's bound; a few tries are enough for a page write.
  const client = new AwsClient({
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    sessionToken: config.sessionToken,
    service: "s3",
    region: config.region,
    retries: 3,
  });
  const endpoint = new URL(config.endpoint);
  const bucketUrl = config.forcePathStyle
    ? `${endpoint.origin}${endpoint.pathname.replace(/\/$/, "")}/${config.bucket}`
    : `${endpoint.protocol}//${config.bucket}.${endpoint.host}${endpoint.pathname.replace(/\/$/, "")}`;
  const base = config.prefix ? `${config.prefix}/` : "";
  // A valid key's letters may be any script's, escaped in the path as S3 expects; its `/` stay separators.
  const objectUrl = (key: string) => `${bucketUrl}/${base}${key.split("/").map(encodeURIComponent).join("/")}`;
  const trouble = options.logger ? new RepeatingFailure(options.logger.child({ component: "artifact-store" }), "reaching the S3 bucket") : undefined;

  /**
   * One request (`what` names it in errors), and `read` of its answer, both
   * within the request's bound. An answer `read` does not expect it passes
   * to `refused`.
   */
  const request = async <T>(
    what: string,
    url: string | URL,
    init: RequestInit,
    caller: AbortSignal | undefined,
    read: (res: Response) => Promise<T>,
  ): Promise<T> => {
    caller?.throwIfAborted();
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const res = await client.fetch(url, { ...init, signal: caller ? AbortSignal.any([caller, timeout]) : timeout });
      const answer = await read(res);
      trouble?.succeeded();
      return answer;
    } catch (error) {
      if (caller?.aborted) throw caller.reason;
      const unavailable =
        error instanceof ServiceError
          ? error
          : timeout.aborted
            ? artifactStoreUnavailable(`the artifact store (S3) did not answer ${what} within ${timeoutMs / 1000} s`, error)
            : artifactStoreUnavailable(`the artifact store (S3) could not be reached for ${what}`, error);
      trouble?.failed(unavailable);
      throw unavailable;
    }
  };

  const refused = async (what: string, res: Response): Promise<never> => {
    const text = await res.text().catch(() => "");
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
    throw artifactStoreUnavailable(`the artifact store (S3) refused ${what}: ${res.status}${code ? ` ${code}` : ""}`);
  };

  return {
    async put(key, body, options = {}) {
      checkKey(key);
      // A copy when given a view: fetch takes only bodies over a plain ArrayBuffer.
      const bytes = typeof body === "string" ? new TextEncoder().encode(body) : new Uint8Array(body);
      const headers: Record<string, string> = {
        "content-type": "application/octet-stream",
        "x-amz-content-sha256": createHash("sha256").update(bytes).digest("hex"),
      };
      if (options.ifAbsent) headers["if-none-match"] = "*";
      // AWS answers 409 while another conditional write of the same key is in flight; the retry then sees 412 or wins.
      for (let attempt = 1; ; attempt++) {
        const written = await request(`PUT ${key}`, objectUrl(key), { method: "PUT", headers, body: bytes }, options.signal, async (res) => {
          if (res.ok) {
            await res.body?.cancel();
            return true;
          }
          if (options.ifAbsent && res.status === 412) {
            await res.body?.cancel();
            return false;
          }
          if (!(options.ifAbsent && res.status === 409 && attempt < 5)) return refused(`PUT ${key}`, res);
          await res.body?.cancel();
          return undefined;
        });
        if (written !== undefined) return written;
      }
    },

    async get(key, options = {}) {
      if (!isValidKey(key)) return undefined;
      return request(`GET ${key}`, objectUrl(key), {}, options.signal, async (res) => {
        if (res.status === 404) {
          await res.body?.cancel();
          return undefined;
        }
        if (!res.ok) return refused(`GET ${key}`, res);
        return new Uint8Array(await res.arrayBuffer());
      });
    },

    async list(prefix, options = {}) {
      const keys: string[] = [];
      const under = listablePrefix(prefix);
      if (!under) return keys;
      let token: string | undefined;
      do {
        const url = new URL(`${bucketUrl}/`);
        url.searchParams.set("list-type", "2");
        url.searchParams.set("prefix", base + under);
        if (token) url.searchParams.set("continuation-token", token);
        const page = await request(`a list of ${under}`, url, {}, options.signal, async (res) =>
          res.ok ? parseListPage(await res.text()) : refused(`a list of ${under}`, res),
        );
        for (const key of page.keys) {
          const own = key.slice(base.length);
          if (key.startsWith(base) && isValidKey(own)) keys.push(own);
        }
        token = page.next;
      } while (token);
      return keys.sort();
    },

    async remove(key, options = {}) {
      if (!isValidKey(key)) return;
      await request(`DELETE ${key}`, objectUrl(key), { method: "DELETE" }, options.signal, async (res) => {
        if (!res.ok && res.status !== 404) return refused(`DELETE ${key}`, res);
        await res.body?.cancel();
      });
    },

    async removeAll(prefix, options = {}) {
      const keys = await this.list(prefix, options);
      // A few at a time: a site is tens of files, and a bucket throttles bursts.
      for (let i = 0; i < keys.length; i += 8) await Promise.all(keys.slice(i, i + 8).map((key) => this.remove(key, options)));
      return keys.length;
    },
  };
}

function checkKey(key: string): void {
  if (!isValidKey(key)) throw new Error(`invalid artifact key: ${JSON.stringify(key)}`);
}

/** `prefix` with its trailing `/`, or undefined when no valid key can be under it. */
function listablePrefix(prefix: string): string | undefined {
  const base = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  return isValidKey(base) ? `${base}/` : undefined;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** The keys and continuation token of one ListObjectsV2 answer; its XML is flat enough for two patterns. */
function parseListPage(xml: string): { keys: string[]; next: string | undefined } {
  const decodeXml = (text: string) => text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => ENTITIES[name]!);
  const keys = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => decodeXml(m[1]!));
  const truncated = /<IsTruncated>true<\/IsTruncated>/.test(xml);
  const next = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1];
  return { keys, next: truncated && next ? decodeXml(next) : undefined };
}
