import type { NodeRequest } from "./node-http.js";

/** A part of a body, from `start` to `end` inclusive, as `Content-Range` counts. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * The part of a body of `length` bytes whose strong ETag is `etag` that a
 * request asks for (RFC 9110 §14): one range of a GET, `bytes=a-b`, `bytes=a-`
 * or `bytes=-n`, cut at the body's end; `"unsatisfiable"` (416) when it
 * starts past the end or is an empty suffix (`bytes=-0`). Undefined, the
 * whole body, when there is no Range, when it is malformed (ignored, as the
 * RFC asks), when it names
 * several ranges (a whole answer is allowed, and spares a multipart one), on
 * any method but GET (the only one ranges are defined for), or when
 * `If-Range` names another validator: the client's part is of another
 * version, a date included, since these bodies have no `Last-Modified`.
 */
export function requestedRange(req: NodeRequest, length: number, etag: string): ByteRange | "unsatisfiable" | undefined {
  const header = req.headers.range;
  if (req.method !== "GET" || header === undefined) return undefined;
  const ifRange = req.headers["if-range"];
  if (ifRange !== undefined && !strongMatch(ifRange, etag)) return undefined;
  const equals = header.indexOf("=");
  if (equals < 0 || header.slice(0, equals).toLowerCase() !== "bytes") return undefined;
  const specs = header
    .slice(equals + 1)
    .split(",")
    .map((spec) => spec.trim())
    .filter((spec) => spec !== "");
  if (specs.length !== 1) return undefined;
  const spec = /^(\d*)-(\d*)$/.exec(specs[0]!);
  if (!spec) return undefined;
  const [, first = "", last = ""] = spec;
  if (first === "") {
    if (last === "") return undefined;
    const suffixLength = Number(last);
    if (suffixLength === 0 || length === 0) return "unsatisfiable";
    return { start: Math.max(0, length - suffixLength), end: length - 1 };
  }
  const start = Number(first);
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= length) return "unsatisfiable";
  return { start, end: last === "" ? length - 1 : Math.min(Number(last), length - 1) };
}

/** The strong comparison `If-Range` asks for: the same opaque tag, and neither weak; a header sent twice names no one validator. */
function strongMatch(header: string | string[], etag: string): boolean {
  if (Array.isArray(header)) return false;
  const tag = header.trim();
  return !tag.startsWith("W/") && !etag.startsWith("W/") && tag === etag;
}
