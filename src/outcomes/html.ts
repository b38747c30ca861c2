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

/** A language tag safe for `lang` and `xml:lang`; falls back to English. */
export function languageTag(value: string): string {
  const tag = value.trim();
  return /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}$/.test(tag) ? tag : "en";
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
