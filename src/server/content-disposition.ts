import { trimOf } from "../strings.js";

/**
 * `Content-Disposition` for a file to save as `filename`. A name in printable
 * ASCII goes as it is (`filename="lyon-bakery.zip"`); any other, such as a
 * slug in Cyrillic, goes as RFC 6266 asks: `filename*` (RFC 8187, UTF-8,
 * percent-encoded), which browsers and the typed client read, after a
 * `filename` in ASCII for clients that read only that.
 */
export function attachmentDisposition(filename: string): string {
  if (/^[\x20-\x7e]+$/.test(filename) && !/["\\%]/.test(filename)) return `attachment; filename="${filename}"`;
  return `attachment; filename="${asciiStandIn(filename)}"; filename*=UTF-8''${rfc8187(filename)}`;
}

/** `filename` in ASCII letters, digits, `.`, `_` and `-`, accents folded; "download" (with its extension) when no letter is left. */
function asciiStandIn(filename: string): string {
  const dot = filename.lastIndexOf(".");
  const [stem, extension] = dot > 0 ? [filename.slice(0, dot), filename.slice(dot)] : [filename, ""];
  const ascii = (text: string) =>
    text
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .replace(/[^A-Za-z0-9._-]+/g, "-");
  const folded = trimOf(ascii(stem), "-._");
  return `${/[A-Za-z]/.test(folded) ? folded : "download"}${ascii(extension)}`;
}

/** Percent-encoded UTF-8 with only RFC 8187's attr-chars left as they are (encodeURIComponent also spares ' ( ) *). */
function rfc8187(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
