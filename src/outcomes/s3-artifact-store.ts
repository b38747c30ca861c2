import { createHash } from "node:crypto";
import { AwsClient } from "aws4fetch";
import type { S3Config } from "../config.js";
import { isValidKey, type ArtifactStore } from "./artifact-store.js";

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
 */
export function createS3ArtifactStore(config: S3Config): ArtifactStore {
  // aws4fetch retries 5xx and 429 itself, with backoff; a few tries are enough for a page write.
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
  // Valid keys hold only characters that need no escaping in a URL path.
  const objectUrl = (key: string) => `${bucketUrl}/${base}${key}`;

  const fail = async (what: string, res: Response): Promise<never> => {
    const text = await res.text().catch(() => "");
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
    throw new Error(`S3 ${what} answered ${res.status}${code ? ` ${code}` : ""}`);
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
        const res = await client.fetch(objectUrl(key), { method: "PUT", headers, body: bytes });
        if (res.ok) {
          await res.body?.cancel();
          return true;
        }
        if (options.ifAbsent && res.status === 412) {
          await res.body?.cancel();
          return false;
        }
        if (!(options.ifAbsent && res.status === 409 && attempt < 5)) return fail(`PUT ${key}`, res);
        await res.body?.cancel();
      }
    },

    async get(key) {
      if (!isValidKey(key)) return undefined;
      const res = await client.fetch(objectUrl(key));
      if (res.status === 404) {
        await res.body?.cancel();
        return undefined;
      }
      if (!res.ok) return fail(`GET ${key}`, res);
      return new Uint8Array(await res.arrayBuffer());
    },

    async list(prefix) {
      const keys: string[] = [];
      const under = listablePrefix(prefix);
      if (!under) return keys;
      let token: string | undefined;
      do {
        const url = new URL(`${bucketUrl}/`);
        url.searchParams.set("list-type", "2");
        url.searchParams.set("prefix", base + under);
        if (token) url.searchParams.set("continuation-token", token);
        const res = await client.fetch(url);
        if (!res.ok) return fail(`list ${under}`, res);
        const page = parseListPage(await res.text());
        for (const key of page.keys) {
          const own = key.slice(base.length);
          if (key.startsWith(base) && isValidKey(own)) keys.push(own);
        }
        token = page.next;
      } while (token);
      return keys.sort();
    },

    async remove(key) {
      if (!isValidKey(key)) return;
      const res = await client.fetch(objectUrl(key), { method: "DELETE" });
      if (!res.ok && res.status !== 404) return fail(`DELETE ${key}`, res);
      await res.body?.cancel();
    },

    async removeAll(prefix) {
      const keys = await this.list(prefix);
      // A few at a time: a site is tens of files, and a bucket throttles bursts.
      for (let i = 0; i < keys.length; i += 8) await Promise.all(keys.slice(i, i + 8).map((key) => this.remove(key)));
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
