import { createHash } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { buffer } from "node:stream/consumers";
import { AwsV4Signer } from "aws4fetch";

/** Credentials the fake accepts; any other signature is refused with 403. */
export const FAKE_S3_CREDENTIALS = { accessKeyId: "AKIDFAKES3TEST", secretAccessKey: "fake/s3/secret/key/for/tests/only" };

/**
 * An S3-protocol server for tests: path-style buckets held in memory, the
 * four calls the artifact store makes (PUT with `If-None-Match: *`, GET,
 * DELETE, ListObjectsV2 with continuation tokens), and a real check of each
 * request's SigV4 signature and payload hash, so a signing bug fails tests
 * as it would against S3. It can also refuse every request (`failing`) or
 * hold them unanswered (`freeze`), as a misconfigured or hung bucket does.
 */
export class FakeS3 {
  readonly objects = new Map<string, Uint8Array>();
  /** Requests refused for a bad signature or payload hash. */
  rejected = 0;
  /** ListObjectsV2 page size; small in tests so continuation is exercised. */
  pageSize = 1000;
  /**
   * When set, requests are answered with this error, as a bucket refusing the service (403) or failing (5xx) does:
   * every request, or with `times` that many, after which the bucket answers again.
   */
  failing: { status: number; code: string; times?: number } | undefined;
  /** Requests held unanswered by `freeze`, now. */
  held = 0;
  /** Held requests whose client closed the connection before an answer: calls the caller stopped. */
  abandoned = 0;
  #thawed: Promise<void> | undefined;
  #thaw: (() => void) | undefined;
  readonly #server = http.createServer((req, res) => void this.#handle(req, res));
  url = "";

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  /** Holds every request from now on without an answer, as a hung endpoint does, until `thaw`. */
  freeze(): void {
    if (this.#thawed) return;
    this.#thawed = new Promise((resolve) => {
      this.#thaw = resolve;
    });
  }

  /** Answers the held requests whose clients still wait, and every request after them. */
  thaw(): void {
    this.#thaw?.();
    this.#thawed = undefined;
    this.#thaw = undefined;
  }

  close(): Promise<void> {
    this.thaw();
    const closed = once(this.#server, "close");
    this.#server.close();
    this.#server.closeAllConnections();
    return closed.then(() => undefined);
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await buffer(req);
    if (this.#thawed) {
      this.held++;
      const gone = new Promise<void>((resolve) => res.once("close", resolve));
      const answered = await Promise.race([this.#thawed.then(() => true), gone.then(() => false)]);
      this.held--;
      if (!answered) {
        this.abandoned++;
        return;
      }
    }
    const reply = (status: number, xml = "") => {
      res.writeHead(status, xml ? { "content-type": "application/xml" } : {});
      res.end(xml);
    };
    const error = (status: number, code: string) => reply(status, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code></Error>`);

    if (this.failing) {
      const { status, code, times } = this.failing;
      if (times !== undefined) this.failing = times > 1 ? { status, code, times: times - 1 } : undefined;
      return error(status, code);
    }
    if (!(await this.#signatureHolds(req, body))) {
      this.rejected++;
      return error(403, "SignatureDoesNotMatch");
    }
    const url = new URL(req.url ?? "/", "http://fake");
    const [bucket, ...rest] = url.pathname.slice(1).split("/");
    const key = rest.map((s) => decodeURIComponent(s)).join("/");
    const id = `${bucket}/${key}`;

    if (req.method === "PUT" && key) {
      if (req.headers["if-none-match"] === "*" && this.objects.has(id)) return error(412, "PreconditionFailed");
      this.objects.set(id, new Uint8Array(body));
      res.setHeader("etag", `"${createHash("md5").update(body).digest("hex")}"`);
      return reply(200);
    }
    if (req.method === "GET" && key) {
      const object = this.objects.get(id);
      if (!object) return error(404, "NoSuchKey");
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": object.byteLength });
      return void res.end(object);
    }
    if (req.method === "DELETE" && key) {
      this.objects.delete(id);
      return reply(204);
    }
    if (req.method === "GET" && url.searchParams.get("list-type") === "2") {
      const prefix = `${bucket}/${url.searchParams.get("prefix") ?? ""}`;
      const after = url.searchParams.get("continuation-token") ?? "";
      const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix) && k > after).sort();
      const page = keys.slice(0, this.pageSize);
      const truncated = keys.length > page.length;
      const xmlText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
      return reply(
        200,
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${bucket}</Name><KeyCount>${page.length}</KeyCount>` +
          `<IsTruncated>${truncated}</IsTruncated>${truncated ? `<NextContinuationToken>${xmlText(page.at(-1)!)}</NextContinuationToken>` : ""}` +
          page.map((k) => `<Contents><Key>${xmlText(k.slice(bucket!.length + 1))}</Key></Contents>`).join("") +
          "</ListBucketResult>",
      );
    }
    return error(400, "InvalidRequest");
  }

  /** Recomputes the request's signature from the headers it says it signed, and checks the body against its declared hash. */
  async #signatureHolds(req: http.IncomingMessage, body: Buffer): Promise<boolean> {
    const auth = req.headers.authorization ?? "";
    const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
    if (!match || match[1] !== FAKE_S3_CREDENTIALS.accessKeyId) return false;
    const declared = String(req.headers["x-amz-content-sha256"] ?? "");
    if (declared !== "UNSIGNED-PAYLOAD" && declared !== createHash("sha256").update(body).digest("hex")) return false;
    const headers = new Headers();
    for (const name of match[4]!.split(";")) {
      if (name !== "host") headers.set(name, String(req.headers[name] ?? ""));
    }
    const signer = new AwsV4Signer({
      method: req.method,
      url: `http://${req.headers.host}${req.url}`,
      headers,
      ...FAKE_S3_CREDENTIALS,
      service: "s3",
      region: match[3],
      datetime: String(req.headers["x-amz-date"] ?? ""),
      allHeaders: true,
    });
    return (await signer.authHeader()) === auth;
  }
}
