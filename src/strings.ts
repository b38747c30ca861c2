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

/**
 * What XML 1.0 forbids in a document, of what a JavaScript string can hold whole: the C0 controls other than tab,
 * line feed and carriage return, and the noncharacters U+FFFE and U+FFFF. NUL among them is what no Postgres text
 * or jsonb value holds.
 */
const XML_FORBIDDEN = String.raw`\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF`;
/** DEL and the C1 controls (ranges for a character class): XML discourages them and HTML parses them as errors. */
export const DEL_AND_C1 = String.raw`\u007F-\u009F`;
/** The bidi embedding, override and isolate controls (ranges for a character class): one left open reverses everything after it. */
export const BIDI_CONTROLS = String.raw`\u202A-\u202E\u2066-\u2069`;

const XML_FORBIDDEN_CHARACTERS = new RegExp(`[${XML_FORBIDDEN}]`, "g");
const PAGE_FORBIDDEN_CHARACTERS = new RegExp(`[${XML_FORBIDDEN}${DEL_AND_C1}]`, "g");
const NAME_FORBIDDEN_CHARACTERS = new RegExp(`[${XML_FORBIDDEN}${DEL_AND_C1}${BIDI_CONTROLS}]`, "g");

/** `text` without the characters XML 1.0 forbids (NUL among them): what Postgres and an EPUB can hold. */
export function withoutXmlForbidden(text: string): string {
  return text.replace(XML_FORBIDDEN_CHARACTERS, "");
}

/** `text` without the characters XML 1.0 forbids, DEL and the C1 controls: what a page or a book may show. */
export function withoutPageControls(text: string): string {
  return text.replace(PAGE_FORBIDDEN_CHARACTERS, "");
}

/**
 * `text` without the controls no name keeps: those a page may not show, and the bidi controls, which would reverse
 * a page's title or the sentence after the name.
 */
export function withoutNameControls(text: string): string {
  return text.replace(NAME_FORBIDDEN_CHARACTERS, "");
}

/** What a person can see in a name: a letter, a digit or a symbol (an emoji is one). */
const VISIBLE = /[\p{L}\p{N}\p{S}]/u;

/**
 * The scripts written without spaces between words (Han, Kana, Thai, Lao, Khmer, Myanmar), and Hangul, whose
 * particles are written against the word before them ("hello@bomnal.kr로"): ranges for a character class. In them
 * one "word" can be a whole sentence, and an address or a link typed into it ends where their letters start.
 */
export const UNSPACED_SCRIPTS = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}`;

/** A character of an e-mail address: a letter of any script but the UNSPACED_SCRIPTS, a mark, a digit, or one of "_.+-". */
const ADDRESS_CHARACTER = String.raw`(?:[^\P{L}${UNSPACED_SCRIPTS}]|[\p{M}\p{N}_.+-])`;
/** A character of a domain's label: as an address's, without "_", "." and "+". */
const DOMAIN_CHARACTER = String.raw`(?:[^\P{L}${UNSPACED_SCRIPTS}]|[\p{M}\p{N}-])`;

/**
 * The e-mail addresses in a text, letters of any script included (josé@…, info@müller.de: RFC 6531), each
 * from its first character, never the tail of a longer word. The letters of a script written without spaces end
 * it ("メールはinfo@midori-coffee.jpです" gives "info@midori-coffee.jp"), so an address all in such a script is none.
 * Global: read it with `match` or `matchAll`.
 */
export const EMAIL_ADDRESSES = new RegExp(String.raw`(?<!${ADDRESS_CHARACTER})${ADDRESS_CHARACTER}+@${DOMAIN_CHARACTER}+(?:\.${DOMAIN_CHARACTER}+)+`, "gu");

/** Web addresses (a scheme or "www."), up to white space or the letters of a script written without spaces. Global. */
export const WEB_LINKS = new RegExp(String.raw`\b(?:https?:\/\/|www\.)[^\s${UNSPACED_SCRIPTS}]+`, "giu");

/** True when `text` has something a person can see: not only spaces, marks or invisible characters (zero-width spaces). */
export function hasVisibleCharacter(text: string): boolean {
  return VISIBLE.test(text);
}

/** `text` as the end of a sentence: with a full stop, unless it ends in its own ("Four & Co.", "Yahoo!"). */
export function endSentence(text: string): string {
  return /[.!?]$/u.test(text) ? text : `${text}.`;
}

/**
 * The JSON text of `value` with every object's keys in sorted order, so equal
 * values give equal text whatever order their keys came in: a stage's output
 * read back from Postgres `jsonb` has its keys in jsonb's order, not the
 * writer's, and a client's retry may build its body anew. For keys and
 * digests, not for what is shown.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}
