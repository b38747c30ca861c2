import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync, type BrotliOptions, type ZlibOptions } from "node:zlib";
import { promisify } from "node:util";
import { requestedRange } from "./byte-ranges.js";
import type { NodeRequest, NodeResponse } from "./node-http.js";

/** The content codings answers are compressed with, best first. */
export const CONTENT_CODINGS = ["br", "gzip"] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];

/** Below this many bytes, compressing saves less than it costs: the answer goes as it is. */
export const COMPRESS_MIN_BYTES = 1024;

/** Media types worth compressing; images other than SVG, EPUBs and zips are compressed already. */
const COMPRESSIBLE_TYPES: ReadonlySet<string> = new Set([
  "text/html",
  "text/css",
  "text/plain",
  "text/javascript",
  "image/svg+xml",
  "application/xml",
  "application/json",
  "application/xhtml+xml",
  "application/manifest+json",
]);

/** True when a body of this `Content-Type` and size is worth compressing. */
export function worthCompressing(contentType: string, byteLength: number): boolean {
  return byteLength >= COMPRESS_MIN_BYTES && COMPRESSIBLE_TYPES.has(contentType.split(";", 1)[0]!.trim().toLowerCase());
}

/**
 * The coding to answer with, from a request's `Accept-Encoding`: the one the
 * client weighs highest, br on a tie; undefined (the body as it is) when it
 * accepts neither. `*` stands for a coding it does not name; `q=0` refuses.
 */
export function negotiateCoding(acceptEncoding: string | string[] | undefined): ContentCoding | undefined {
  if (acceptEncoding === undefined) return undefined;
  const weights = new Map<string, number>();
  for (const item of (Array.isArray(acceptEncoding) ? acceptEncoding.join(",") : acceptEncoding).split(",")) {
    const [name, ...parameters] = item.split(";");
    const coding = name!.trim().toLowerCase();
    if (coding === "") continue;
    const q = parameters.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith("q="));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    weights.set(coding === "x-gzip" ? "gzip" : coding, Number.isFinite(weight) ? weight : 0);
  }
  let best: ContentCoding | undefined;
  let bestWeight = 0;
  for (const coding of CONTENT_CODINGS) {
    const weight = weights.get(coding) ?? weights.get("*") ?? 0;
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  return best;
}

/**
 * How hard to try: `build` for what is compressed once and served for good
 * (the Console's bundle), `answer` for what is compressed while a client
 * waits (brotli's quality 4 is about gzip's speed and still smaller).
 */
export type CompressionEffort = "build" | "answer";

function brotliOptions(body: Uint8Array, effort: CompressionEffort): BrotliOptions {
  return {
    params: {
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_QUALITY]: effort === "build" ? constants.BROTLI_MAX_QUALITY : 4,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength,
    },
  };
}

function gzipOptions(effort: CompressionEffort): ZlibOptions {
  return { level: effort === "build" ? constants.Z_BEST_COMPRESSION : 6 };
}

/** `body` compressed with `coding`, at once (an answer's body is small: a page, a stylesheet, a JSON answer). */
export function compressSync(body: Uint8Array, coding: ContentCoding, effort: CompressionEffort = "answer"): Buffer {
  return coding === "br" ? brotliCompressSync(body, brotliOptions(body, effort)) : gzipSync(body, gzipOptions(effort));
}

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** `body` compressed with `coding` off the event loop, for bodies large enough to hold it up (the Console's script at brotli's best). */
export function compressAsync(body: Uint8Array, coding: ContentCoding, effort: CompressionEffort): Promise<Buffer> {
  return coding === "br" ? brotliAsync(body, brotliOptions(body, effort)) : gzipAsync(body, gzipOptions(effort));
}

/**
 * The ETag of a coding of the representation whose ETag is `etag`: each
 * coding's bytes differ, so each is its own representation with its own
 * strong validator (`"abc"` → `"abc-br"`).
 */
export function codedEtag(etag: string, coding: ContentCoding | undefined): string {
  return coding === undefined ? etag : `${etag.slice(0, -1)}-${coding}"`;
}

/** Adds `token` to the answer's `Vary`, keeping what another part set there (CORS's `Origin`). */
export function addVary(res: NodeResponse, token: string): void {
  const current = res.getHeader("vary");
  const tokens =
    current === undefined
      ? []
      : String(current)
          .split(",")
          .map((t) => t.trim());
  if (tokens.some((t) => t === "*" || t.toLowerCase() === token.toLowerCase())) return;
  res.setHeader("vary", [...tokens, token].filter(Boolean).join(", "));
}

/**
 * True when an `If-None-Match` header names `etag` (or is `*`), by the weak
 * comparison RFC 9110 asks for: `W/"x"` matches `"x"`.
 */
export function ifNoneMatchMatches(header: string | string[] | undefined, etag: string): boolean {
  const value = Array.isArray(header) ? header.join(",") : header;
  if (!value) return false;
  const wanted = etag.startsWith("W/") ? etag.slice(2) : etag;
  return value.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || (t.startsWith("W/") ? t.slice(2) : t) === wanted;
  });
}

/**
 * Ends an answer with `body`, compressed in the coding the client prefers if
 * it accepts one (`Vary: Accept-Encoding` either way), with its length; HEAD
 * gets the headers alone. For a body made for this answer, worth compressing.
 */
export function endCompressed(req: NodeRequest, res: NodeResponse, body: Uint8Array): void {
  addVary(res, "accept-encoding");
  const coding = negotiateCoding(req.headers["accept-encoding"]);
  const sent = coding ? compressSync(body, coding) : body;
  if (coding) res.setHeader("content-encoding", coding);
  res.setHeader("content-length", sent.byteLength);
  if (req.method === "HEAD") res.end();
  else (res as { end(chunk: Uint8Array): void }).end(sent);
}

/** A stored body and what describes it: its media type and its (identity) ETag. */
export interface StoredBody {
  contentType: string;
  body: Uint8Array;
  /** A strong ETag for the body as it is; each coding's is derived from it (`codedEtag`). */
  etag: string;
}

/** How `sendStored` answers byte ranges; without it, every answer is the whole body. */
export interface RangeAnswers {
  /** Ends the answer to a range past the body's end, its status (416) and `Content-Range` set, with the caller's error body. */
  notSatisfiable(): void;
}

/**
 * Answers a GET or HEAD with a stored body: in the coding the client prefers
 * among those `encoded` has (undefined: none worth it), with that coding's
 * ETag, `Vary: Accept-Encoding` when a coding was possible, and 304 when
 * `If-None-Match` names what would be sent. HEAD gets GET's headers. With
 * `ranges`, `Accept-Ranges: bytes`, and a GET's one range (`requestedRange`)
 * is answered 206 with that part of the body as stored, or 416.
 */
export function sendStored(
  req: NodeRequest,
  res: NodeResponse,
  stored: StoredBody,
  cacheControl: string,
  encoded?: (coding: ContentCoding) => Uint8Array,
  ranges?: RangeAnswers,
): void {
  const length = stored.body.byteLength;
  const range = ranges ? requestedRange(req, length, stored.etag) : undefined;
  // A range counts the bytes as stored, so a part is never compressed (the whole may be: hence Vary all the same).
  const coding = encoded && range === undefined ? negotiateCoding(req.headers["accept-encoding"]) : undefined;
  if (encoded) addVary(res, "accept-encoding");
  if (ranges) res.setHeader("accept-ranges", "bytes");
  const etag = codedEtag(stored.etag, coding);
  res.setHeader("etag", etag);
  res.setHeader("cache-control", cacheControl);
  if (ifNoneMatchMatches(req.headers["if-none-match"], etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  if (range === "unsatisfiable") {
    // The error body that follows is no representation of the file: it gets no validator of it.
    res.removeHeader("etag");
    res.statusCode = 416;
    res.setHeader("content-range", `bytes */${length}`);
    ranges!.notSatisfiable();
    return;
  }
  const body = range ? stored.body.subarray(range.start, range.end + 1) : coding ? encoded!(coding) : stored.body;
  res.statusCode = range ? 206 : 200;
  res.setHeader("content-type", stored.contentType);
  if (range) res.setHeader("content-range", `bytes ${range.start}-${range.end}/${length}`);
  if (coding) res.setHeader("content-encoding", coding);
  res.setHeader("content-length", body.byteLength);
  if (req.method === "HEAD") res.end();
  else (res as { end(chunk: Uint8Array): void }).end(body);
}

/**
 * Compressed bodies by key (an ETag and a coding), so that a page many
 * visitors read is compressed once, not per request; the least recently
 * used go once the whole passes `maxBytes`.
 */
export class CompressedBodies {
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** `body` in `coding`, from the cache or compressed now; `etag` names the body. */
  get(etag: string, body: Uint8Array, coding: ContentCoding): Buffer {
    const key = `${coding} ${etag}`;
    const hit = this.#entries.get(key);
    if (hit) {
      // Most recently used last: a Map keeps insertion order.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    const compressed = compressSync(body, coding);
    if (compressed.byteLength > this.maxBytes) return compressed;
    this.#entries.set(key, compressed);
    this.#bytes += compressed.byteLength;
    for (const [oldKey, old] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldKey);
      this.#bytes -= old.byteLength;
    }
    return compressed;
  }
}
