/**
 * Small string helpers that run in linear time on any input. A regex such
 * as `/\/+$/` looks harmless but restarts its scan at every run of the
 * character, which is quadratic on a long run followed by anything else;
 * the ReDoS check (`npm run lint:regex`) refuses such patterns.
 */

/** `text` without the characters of `chars` at its end. */
export function trimEndOf(text: string, chars: string): string {
  let end = text.length;
  while (end > 0 && chars.includes(text[end - 1]!)) end--;
  return end === text.length ? text : text.slice(0, end);
}

/** `text` without the characters of `chars` at either end. */
export function trimOf(text: string, chars: string): string {
  let start = 0;
  while (start < text.length && chars.includes(text[start]!)) start++;
  return trimEndOf(text.slice(start), chars);
}

/** A base URL or path without its trailing slashes. */
export function withoutTrailingSlashes(url: string): string {
  return trimEndOf(url, "/");
}

/**
 * Percent-decoded text (a path segment, a grpc-message), or the text as sent
 * when its escapes are malformed (`%ZZ`): such a segment can name nothing we
 * store, so a lookup of it as sent finds nothing, which is the answer a
 * mistyped address deserves.
 */
export function decodedOrAsSent(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
