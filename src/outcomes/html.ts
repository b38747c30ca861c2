import { withoutPageControls } from "../strings.js";
import { interfaceWords } from "./interface-words.js";

/**
 * Escaping for generated documents. Every word a writer produced passes
 * through `escapeHtml` before it reaches a page: model output is text, never
 * markup. The same escapes are valid XML, so EPUB's XHTML uses them too.
 */
export function escapeHtml(text: string): string {
  // A model can emit controls XML forbids, and epubcheck would reject the book.
  return withoutPageControls(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/** A tagged template that escapes every interpolated value unless it is already `Html`. */
export function html(strings: TemplateStringsArray, ...values: readonly (Html | string | number | readonly Html[])[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    if (Array.isArray(value)) out += value.map((v: Html) => v.value).join("");
    else if (value instanceof Html) out += value.value;
    else out += escapeHtml(String(value));
    out += strings[i + 1] ?? "";
  });
  return new Html(out);
}

/** Markup that is already safe. Only `html` and this module make one. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Joins safe fragments. */
export function join(parts: readonly Html[], separator = ""): Html {
  return new Html(parts.map((p) => p.value).join(separator));
}

/**
 * The well-formed BCP 47 tag, for `lang`, `xml:lang` and `dc:language`, of a language as a model may give it: a tag
 * in any case or with underscores ("ar_SA" is "ar-SA", "iw" is "he"), its subtags out of order ("zh-CN-Hans" is
 * "zh-Hans-CN"), or the language's name in English or in itself ("Arabic", "العربية" are "ar"). English when
 * nothing in it names a language.
 */
export function languageTag(value: string): string {
  const text = value.trim().replaceAll("_", "-");
  return canonicalTag(text) ?? reorderedTag(text) ?? languageNamed(text) ?? "en";
}

/** The tag in its canonical form, or undefined when it is not well-formed or its language is not a code ("Arabic", "und"). */
function canonicalTag(text: string): string | undefined {
  try {
    const [tag] = Intl.getCanonicalLocales(text);
    const language = tag?.split("-")[0] ?? "";
    return /^[a-z]{2,3}$/.test(language) && language !== "und" ? tag : undefined;
  } catch {
    return undefined;
  }
}

/** A malformed tag's language, script and region, in the order BCP 47 puts them; its language alone if they do not make a tag. */
function reorderedTag(text: string): string | undefined {
  const [language = "", ...rest] = text.split("-");
  if (!/^[A-Za-z]{2,3}$/.test(language)) return undefined;
  const script = rest.find((subtag) => /^[A-Za-z]{4}$/.test(subtag));
  const region = rest.find((subtag) => /^(?:[A-Za-z]{2}|\d{3})$/.test(subtag));
  return canonicalTag([language, script, region].filter((subtag) => subtag !== undefined).join("-")) ?? canonicalTag(language);
}

let languagesByName: Map<string, string> | undefined;

/**
 * The code of a language named in English or in itself ("Japanese", "日本語"), from the platform's locale data (ICU)
 * over every two-letter code it names, and Chinese by its script ("Simplified Chinese"); a name with more to it
 * ("Brazilian Portuguese", "Arabic (Egypt)") by its last word or what comes before the parenthesis.
 */
function languageNamed(text: string): string | undefined {
  languagesByName ??= namesOfLanguages();
  const name = text.toLowerCase();
  const beforeParenthesis = name.split("(")[0]!.trim();
  const lastWord = beforeParenthesis.split(/\s+/).at(-1) ?? "";
  return languagesByName.get(name) ?? languagesByName.get(beforeParenthesis) ?? languagesByName.get(lastWord);
}

function namesOfLanguages(): Map<string, string> {
  const names = new Map<string, string>();
  const english = new Intl.DisplayNames("en", { type: "language", fallback: "none" });
  const englishStandard = new Intl.DisplayNames("en", { type: "language", fallback: "none", languageDisplay: "standard" });
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const codes = [...letters].flatMap((first) => [...letters].map((second) => first + second));
  for (const code of [...codes, "zh-Hans", "zh-Hant"]) {
    const tag = canonicalTag(code);
    const inEnglish = english.of(code);
    if (tag === undefined || inEnglish === undefined) continue;
    const inItself = new Intl.DisplayNames(code, { type: "language", fallback: "none" }).of(code);
    for (const name of [inEnglish, englishStandard.of(code), inItself]) {
      if (name !== undefined && !names.has(name.toLowerCase())) names.set(name.toLowerCase(), tag);
    }
  }
  return names;
}

/**
 * "rtl" for a language written right to left ("ar", "he", "fa", "ur"), else
 * "ltr", from the platform's own locale data (ICU), not a list of ours.
 */
export function textDirection(tag: string): "ltr" | "rtl" {
  try {
    const locale = new Intl.Locale(tag) as Intl.Locale & { getTextInfo?: () => { direction?: string } };
    return locale.getTextInfo?.().direction === "rtl" ? "rtl" : "ltr";
  } catch {
    return "ltr";
  }
}

/**
 * The attributes that mark words in `language` inside a page in another (`lang`, `dir`, and `xml:lang` for XHTML),
 * so they read in their own direction and a screen reader speaks them in their own voice; nothing when undefined.
 */
export function languageMark(language: string | undefined, xml = false): Html {
  if (language === undefined) return html``;
  const tag = languageTag(language);
  return xml ? html` lang="${tag}" xml:lang="${tag}" dir="${textDirection(tag)}"` : html` lang="${tag}" dir="${textDirection(tag)}"`;
}

/**
 * Everything a generated page has before its own header: one stylesheet, no
 * script, a skip link. The skip link is in the page's language where
 * interface-words.ts has it, else English, marked as such.
 */
export function documentStart(lang: string, title: string | Html, description: string, head: Html = html``): Html {
  const { words, otherLanguage } = interfaceWords(lang);
  return html`<!DOCTYPE html>
<html lang="${lang}" dir="${textDirection(lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<meta name="description" content="${description}">
${head}<link rel="stylesheet" href="style.css">
</head>
<body>
<a class="skip-link" href="#main"${languageMark(otherLanguage)}>${words.skipToContent}</a>`;
}
