import { isTraditionalChinese } from "./interface-words.js";

/**
 * Type for the scripts the generic stacks of a theme leave to chance. A
 * theme's fonts are Latin (Georgia, system-ui); on a page in Arabic, Chinese
 * or Devanagari the browser then falls back glyph by glyph, to whatever font
 * it finds first, which mixes faces and can miss shaping. Each language gets
 * families that carry its script, the ones the common systems ship first
 * (macOS and iOS, Windows, Android and Debian's Noto), ahead of the theme's
 * generic family. Chinese gets them by script as well: the same character
 * takes other forms in Traditional fonts (TC, for Taiwan and Hong Kong) than
 * in Simplified ones (SC). Used by the site stylesheet, for the `lang` of
 * its pages, so nothing else has to know the script.
 */
const FAMILIES: Record<string, { serif: string; sans: string }> = {
  ar: {
    serif: '"Noto Naskh Arabic", "Geeza Pro", "Traditional Arabic", "Noto Sans Arabic", Tahoma',
    sans: '"Noto Sans Arabic", "Geeza Pro", "Segoe UI", Tahoma, "Noto Naskh Arabic"',
  },
  fa: {
    serif: '"Noto Naskh Arabic", "Geeza Pro", "Noto Sans Arabic", Tahoma',
    sans: '"Noto Sans Arabic", "Geeza Pro", "Segoe UI", Tahoma',
  },
  ur: {
    serif: '"Noto Nastaliq Urdu", "Noto Naskh Arabic", "Geeza Pro", Tahoma',
    sans: '"Noto Sans Arabic", "Noto Nastaliq Urdu", "Segoe UI", Tahoma',
  },
  he: { serif: '"Noto Serif Hebrew", "Times New Roman", "Noto Sans Hebrew"', sans: '"Noto Sans Hebrew", "Arial Hebrew", "Segoe UI", Arial' },
  zh: {
    serif: '"Noto Serif CJK SC", "Songti SC", SimSun, "Noto Sans CJK SC"',
    sans: '"Noto Sans CJK SC", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei"',
  },
  "zh-Hant": {
    serif: '"Noto Serif CJK TC", "Songti TC", PMingLiU, "Noto Sans CJK TC"',
    sans: '"Noto Sans CJK TC", "PingFang TC", "Microsoft JhengHei"',
  },
  ja: {
    serif: '"Noto Serif CJK JP", "Hiragino Mincho ProN", "Yu Mincho", "Noto Sans CJK JP"',
    sans: '"Noto Sans CJK JP", "Hiragino Sans", "Hiragino Kaku Gothic ProN", "Yu Gothic", Meiryo',
  },
  ko: {
    serif: '"Noto Serif CJK KR", "AppleMyungjo", Batang, "Noto Sans CJK KR"',
    sans: '"Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic"',
  },
  hi: {
    serif: '"Noto Serif Devanagari", "Kohinoor Devanagari", Mangal, "Noto Sans Devanagari"',
    sans: '"Noto Sans Devanagari", "Kohinoor Devanagari", Mangal, Nirmala UI',
  },
  th: { serif: '"Noto Serif Thai", Thonburi, Tahoma, "Noto Sans Thai"', sans: '"Noto Sans Thai", Thonburi, Leelawadee UI, Tahoma' },
};

/**
 * Languages whose letters join (Arabic script, and the headline that runs
 * through Devanagari, Bengali and Gurmukhi words) or have no word gaps to
 * widen (CJK, Thai): never letter-spaced.
 */
const NO_LETTER_SPACING = ["ar", "fa", "ur", "zh", "ja", "ko", "th", "hi", "mr", "ne", "bn", "pa"];

/**
 * CSS that sets `--heading` and `--body` for a document in `lang` (a well-formed BCP 47 tag, see languageTag) when
 * its script needs families of its own, to be placed after the rule that sets the theme's. `headingFont` and
 * `bodyFont` are the theme's own stacks, each ending in its generic family.
 */
export function scriptFontsCss(theme: { headingFont: string; bodyFont: string }, lang: string): string {
  const families = familiesFor(lang);
  const fonts = families ? `html:lang(${lang}) { --heading: ${stackOf(families, theme.headingFont)}; --body: ${stackOf(families, theme.bodyFont)}; }\n` : "";
  const unspaced = unspacedScript(lang) ? `html:lang(${lang}) * { letter-spacing: normal !important; }\n` : "";
  return fonts + unspaced;
}

/**
 * The same for a book in `lang`, to follow its stylesheet: `font-family`
 * itself on the body and on `headings` (a selector list), as EPUB reading
 * systems do not all read custom properties. `stacks` are the book's own.
 */
export function bookScriptFontsCss(lang: string, stacks: { body: string; heading: string }, headings: string): string {
  const families = familiesFor(lang);
  const scoped = (selectors: string) =>
    selectors
      .split(",")
      .map((selector) => `${selector.trim()}:lang(${lang})`)
      .join(", ");
  const fonts = families
    ? `${scoped("body")} { font-family: ${stackOf(families, stacks.body)}; }\n${scoped(headings)} { font-family: ${stackOf(families, stacks.heading)}; }\n`
    : "";
  const unspaced = unspacedScript(lang) ? `${scoped("*")} { letter-spacing: normal !important; }\n` : "";
  return fonts + unspaced;
}

function familiesFor(lang: string): { serif: string; sans: string } | undefined {
  const key = isTraditionalChinese(lang) ? "zh-Hant" : lang.split("-")[0]!.toLowerCase();
  return Object.hasOwn(FAMILIES, key) ? FAMILIES[key] : undefined;
}

function unspacedScript(lang: string): boolean {
  return NO_LETTER_SPACING.includes(lang.split("-")[0]!.toLowerCase());
}

/** The script's families ahead of a theme's stack: the serif ones when the theme's ends in `serif`, else the sans ones. */
function stackOf(families: { serif: string; sans: string }, themeStack: string): string {
  return `${/\bserif\s*$/.test(themeStack) && !/sans-serif\s*$/.test(themeStack) ? families.serif : families.sans}, ${themeStack}`;
}
