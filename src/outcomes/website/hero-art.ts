import { createHash } from "node:crypto";
import { ALT_TEXT_MAX, type Tone } from "../content.js";
import { html, join, languageTag, textDirection, type Html } from "../html.js";
import { shorten } from "../json-schema.js";
import { UNSPACED_SCRIPTS } from "../../strings.js";
import type { Theme } from "./themes.js";

/**
 * Generated art for a site's hero, its social preview and a book's cover:
 * an SVG pattern drawn from the theme's colours, its motif picked by the
 * theme (arcs for warm, a grid for professional, dots for playful, waves for
 * calm, stripes for bold) and its arrangement by a hash of the name. The same
 * (name, theme) always gives the same picture; two names give two pictures.
 * No stock photos, no font files, no external requests.
 */
export interface ArtOptions {
  width: number;
  height: number;
  /** Text set large over the pattern (a cover's title, a preview's name); none for the hero, whose heading says it already. */
  title?: string;
  subtitle?: string;
  /** A book's author, on a line of their own under the subtitle. */
  byline?: string;
  /** The accessible name: the SVG's `<title>` and `aria-label`. */
  label: string;
  /** The language of `label` (and of the lettering), as the SVG's `xml:lang`, so a screen reader speaks it in the right voice. */
  lang?: string;
}

/** A deterministic stream of numbers in [0, 1) from the name and theme. */
function randomFrom(name: string, theme: Theme): () => number {
  let state = createHash("sha256")
    .update(`${theme.id}\u0000${name.trim().normalize("NFC")}`)
    .digest();
  let at = 0;
  return () => {
    if (at + 4 > state.length) {
      state = createHash("sha256").update(state).digest();
      at = 0;
    }
    const value = state.readUInt32BE(at) / 2 ** 32;
    at += 4;
    return value;
  };
}

const round = (n: number) => Math.round(n * 10) / 10;

export function generatedArt(name: string, theme: Theme, options: ArtOptions): string {
  const { width: w, height: h } = options;
  const random = randomFrom(name, theme);
  const c = theme.colors;
  const inks = [c.accent, c.muted, c.border, c.heroTo];
  const ink = () => inks[Math.floor(random() * inks.length)]!;
  const shapes: Html[] = [];
  const motif = theme.id;
  if (motif === "warm") {
    // Overlapping suns: concentric arcs rising from the lower edge.
    const suns = 2 + Math.floor(random() * 3);
    for (let s = 0; s < suns; s++) {
      const cx = round(random() * w);
      const cy = round(h * (0.55 + random() * 0.5));
      const rings = 3 + Math.floor(random() * 4);
      const colour = ink();
      for (let r = rings; r >= 1; r--) {
        const radius = round((Math.min(w, h) * 0.09 + random() * 8) * r);
        shapes.push(
          html`<circle cx="${cx}" cy="${cy}" r="${radius}" fill="none" stroke="${colour}" stroke-width="${round(4 + random() * 10)}" opacity="${round(0.25 + random() * 0.5)}"/>`,
        );
      }
    }
  } else if (motif === "professional") {
    // A grid of tiles, some filled, some outlined, a few in the accent.
    const cols = 5 + Math.floor(random() * 4);
    const size = w / cols;
    const rows = Math.ceil(h / size);
    for (let y = 0; y < rows; y++) {
      for (let x = 0; x < cols; x++) {
        const pick = random();
        if (pick < 0.35) continue;
        const inset = round(size * 0.12);
        const fill = pick > 0.85 ? c.accent : pick > 0.6 ? c.heroTo : "none";
        shapes.push(
          html`<rect x="${round(x * size + inset)}" y="${round(y * size + inset)}" width="${round(size - 2 * inset)}" height="${round(size - 2 * inset)}" rx="${round(size * 0.08)}" fill="${fill}" stroke="${c.border}" stroke-width="2"/>`,
        );
      }
    }
  } else if (motif === "playful") {
    // Confetti: dots and rings of every size.
    const count = 18 + Math.floor(random() * 14);
    for (let i = 0; i < count; i++) {
      const r = round(Math.min(w, h) * (0.02 + random() * 0.1));
      const filled = random() > 0.4;
      const colour = ink();
      shapes.push(
        html`<circle cx="${round(random() * w)}" cy="${round(random() * h)}" r="${r}" fill="${filled ? colour : "none"}" stroke="${colour}" stroke-width="${filled ? 0 : round(r * 0.3)}" opacity="${round(0.45 + random() * 0.5)}"/>`,
      );
    }
  } else if (motif === "calm") {
    // Layered waves, each a smooth curve across the picture.
    const waves = 4 + Math.floor(random() * 4);
    for (let i = 0; i < waves; i++) {
      const base = h * (0.25 + (i / waves) * 0.8);
      const amp = h * (0.03 + random() * 0.08);
      const phase = random() * w;
      const segments = 4;
      let d = `M0 ${round(base)}`;
      for (let s = 1; s <= segments; s++) {
        const x = (w / segments) * s;
        const up = (s + Math.floor(phase)) % 2 === 0 ? -amp : amp;
        d += ` Q${round(x - w / segments / 2)} ${round(base + up)} ${round(x)} ${round(base)}`;
      }
      shapes.push(
        html`<path d="${`${d} L${w} ${h} L0 ${h} Z`}" fill="${i % 2 === 0 ? c.heroTo : c.surface}" stroke="${ink()}" stroke-width="2" opacity="${round(0.5 + i / (2 * waves))}"/>`,
      );
    }
  } else {
    // Bold: diagonal bands at an angle of the name's choosing, and one block of accent.
    const angle = round(-60 + random() * 120);
    const bands = 6 + Math.floor(random() * 6);
    const span = Math.hypot(w, h);
    const band = span / bands;
    for (let i = 0; i < bands; i++) {
      if (random() < 0.4) continue;
      shapes.push(
        html`<rect x="${round(-span / 2 + i * band)}" y="${round(-span / 2)}" width="${round(band * (0.3 + random() * 0.5))}" height="${round(span)}" fill="${ink()}" opacity="${round(0.35 + random() * 0.55)}"/>`,
      );
    }
    shapes.splice(0, shapes.length, html`<g transform="translate(${round(w / 2)} ${round(h / 2)}) rotate(${angle})">${join(shapes)}</g>`);
    const s = round(Math.min(w, h) * (0.2 + random() * 0.15));
    shapes.push(html`<rect x="${round(random() * (w - s))}" y="${round(random() * (h - s))}" width="${s}" height="${s}" fill="${c.accent}"/>`);
  }
  const dark = theme.id === "bold";
  const background = html`<defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${c.heroFrom}"/><stop offset="1" stop-color="${c.heroTo}"/></linearGradient></defs>
<rect width="${w}" height="${h}" fill="url(#bg)"/>`;
  const words = options.title ? lettering(options, theme, dark) : html``;
  const tag = options.lang ? languageTag(options.lang) : undefined;
  // The base direction orders a mixed title ("Python للمبتدئين") as its language reads; centred lines stay centred.
  const language = tag ? html` xml:lang="${tag}"${textDirection(tag) === "rtl" ? html` direction="rtl"` : html``}` : html``;
  return html`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${options.label}"${language}>
<title>${options.label}</title>
${background}
<g>${join(shapes, "\n")}</g>
${words}
</svg>
`.value;
}

/** Lines of text set at one size. */
interface SetLines {
  lines: string[];
  size: number;
}

/**
 * The title set on a plate over the pattern, then the subtitle and the
 * author, each on lines of its own. Text in SVG, so any script renders with
 * the reader's fonts; the lines are measured as such fonts set them (see
 * `emWidth`). A title or subtitle too long for its lines ends in an
 * ellipsis; a word too long for a line is set smaller, whole. The
 * subtitle's and the author's size follow the picture's width, never the
 * title's length.
 */
function lettering(options: ArtOptions, theme: Theme, dark: boolean): Html {
  const { width: w, height: h } = options;
  const room = w * 0.8;
  const measure = Math.max(8, Math.floor(w / 42)) * LATIN_EM;
  const titleSize = Math.min(h / 9, room / measure);
  const smallSize = round(titleSize * 0.42);
  const title = setLines(options.title ?? "", measure, 4, h / 9, room);
  const subtitle = setLines(options.subtitle ?? "", measure * 1.6, 3, smallSize, room);
  const byline = setLines(options.byline ?? "", measure * 2.4, 1, smallSize, room);
  const { size } = title;
  const subSize = subtitle.size;
  const bylineSize = byline.size;
  // Spacing follows the title's size, but no less than the small lines need under a title set small (one long word).
  const gap = Math.max(size * 0.5, smallSize * 0.8);
  const padding = Math.max(size * 0.6, smallSize);
  const subGap = subtitle.lines.length ? gap : 0;
  const bylineGap = byline.lines.length ? gap : 0;
  const block = title.lines.length * size * 1.15 + subGap + subtitle.lines.length * subSize * 1.3 + bylineGap + byline.lines.length * bylineSize * 1.3;
  const top = (h - block) / 2;
  const plate = html`<rect x="${round(w * 0.06)}" y="${round(top - padding)}" width="${round(w * 0.88)}" height="${round(block + padding * 1.85)}" rx="12" fill="${dark ? "#111827" : theme.colors.bg}" opacity="0.92"/>`;
  const colour = dark ? "#f9fafb" : theme.colors.text;
  const titleLines = title.lines.map(
    (line, i) =>
      html`<text x="${round(w / 2)}" y="${round(top + size * (i + 0.85) * 1.15)}" text-anchor="middle" font-family="${theme.headingFont}" font-weight="700" font-size="${size}" fill="${colour}">${line}</text>`,
  );
  const subStart = top + title.lines.length * size * 1.15 + subGap;
  const subLines = subtitle.lines.map(
    (line, i) =>
      html`<text x="${round(w / 2)}" y="${round(subStart + subSize * (i + 1) * 1.3)}" text-anchor="middle" font-family="${theme.bodyFont}" font-size="${subSize}" fill="${colour}">${line}</text>`,
  );
  const bylineStart = subStart + subtitle.lines.length * subSize * 1.3 + bylineGap;
  const bylineLines = byline.lines.map(
    (line, i) =>
      html`<text x="${round(w / 2)}" y="${round(bylineStart + bylineSize * (i + 1) * 1.3)}" text-anchor="middle" font-family="${theme.bodyFont}" font-weight="600" font-size="${bylineSize}" fill="${colour}">${line}</text>`,
  );
  return html`<g>${plate}
${join(titleLines, "\n")}
${join(subLines, "\n")}
${join(bylineLines, "\n")}</g>`;
}

/** The width of a Latin, Cyrillic, Arabic… character, on average, in em; a character of `FULL_WIDTH` is one em. */
const LATIN_EM = 0.6;
/** Han, Kana, Hangul and Bopomofo: the scripts of Chinese, Japanese and Korean, each character a square. */
const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}`;
/** Characters as wide as they are high: Han, Kana, Hangul, their full-width punctuation and forms, and emoji. */
const FULL_WIDTH = new RegExp(String.raw`[${CJK}\u3000-\u303F\u30FB\u30FC\uFF01-\uFF60\uFFE0-\uFFE6]|\p{Extended_Pictographic}`, "u");
/** Where a line may not begin (Japanese kinsoku): closing brackets and quotes, stops, commas, the long-vowel mark, small kana. */
const NO_BREAK_BEFORE =
  /^[\p{Pe}\p{Pf}!%),.:;?\u2026\u3001\u3002\u3005\u301C\u303B\u3041\u3043\u3045\u3047\u3049\u3063\u3083\u3085\u3087\u308E\u3095\u3096\u309D\u309E\u30A1\u30A3\u30A5\u30A7\u30A9\u30C3\u30E3\u30E5\u30E7\u30EE\u30F5\u30F6\u30FB-\u30FE\uFF01\uFF05\uFF0C\uFF0E\uFF1A\uFF1B\uFF1F]/u;
/** Where a line may not end: opening brackets and quotes. */
const NO_BREAK_AFTER = /[\p{Ps}\p{Pi}]$/u;
const UNSPACED = new RegExp(`[${UNSPACED_SCRIPTS}]`, "u");
const ELLIPSIS = "\u2026";

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const dictionaryWords = new Intl.Segmenter(undefined, { granularity: "word" });

/** The width of `text` set at 1 px, in em. */
function emWidth(text: string): number {
  let width = 0;
  for (const { segment } of graphemes.segment(text)) width += FULL_WIDTH.test(segment) ? 1 : LATIN_EM;
  return width;
}

/** A piece of text no line breaks inside, and whether a space sets it apart from the piece before. */
interface Piece {
  text: string;
  spaced: boolean;
}

/**
 * The pieces a line may break between: words between spaces, and in a script written without them (Chinese,
 * Japanese, Thai) the words of the platform's dictionary (ICU), punctuation kept with the word it belongs to. A
 * word of those scripts still too wide for a line breaks between any two characters (Korean written without its
 * spaces), never inside one, nor before closing punctuation.
 */
function piecesOf(text: string, lineWidth: number): Piece[] {
  const pieces: Piece[] = [];
  for (const spaced of text.trim().split(/\s+/)) {
    if (spaced === "") continue;
    const [first, ...rest] = UNSPACED.test(spaced) ? unspacedParts(spaced, lineWidth) : [spaced];
    pieces.push({ text: first!, spaced: pieces.length > 0 }, ...rest.map((part) => ({ text: part, spaced: false })));
  }
  return pieces;
}

function unspacedParts(word: string, lineWidth: number): string[] {
  const joined = (segments: Iterable<string>) => {
    const parts: string[] = [];
    for (const segment of segments) {
      const last = parts.at(-1);
      if (last !== undefined && (NO_BREAK_BEFORE.test(segment) || NO_BREAK_AFTER.test(last))) parts[parts.length - 1] = last + segment;
      else parts.push(segment);
    }
    return parts;
  };
  const inWords = joined(Array.from(dictionaryWords.segment(word), (s) => s.segment));
  return inWords.flatMap((part) => (emWidth(part) > lineWidth && UNSPACED.test(part) ? joined(Array.from(graphemes.segment(part), (s) => s.segment)) : [part]));
}

/** Pieces into lines at most `lineWidth` em wide (a piece wider than that alone on its line). */
function wrap(pieces: readonly Piece[], lineWidth: number): Piece[][] {
  const lines: Piece[][] = [];
  let line: Piece[] = [];
  for (const piece of pieces) {
    if (line.length > 0 && emWidth(lineText([...line, piece])) > lineWidth) {
      lines.push(line);
      line = [{ ...piece, spaced: false }];
    } else line.push(line.length === 0 ? { ...piece, spaced: false } : piece);
  }
  if (line.length > 0) lines.push(line);
  return lines;
}

const lineText = (line: readonly Piece[]) => line.map((piece) => (piece.spaced ? ` ${piece.text}` : piece.text)).join("");

/**
 * `text` on at most `maxLines` lines of about `lineWidth` em, set at `maxSize` px or smaller to fit `room` px:
 * lines up to half as long again (set smaller) before a word is left out, and then the last line ends in an
 * ellipsis.
 */
function setLines(text: string, lineWidth: number, maxLines: number, maxSize: number, room: number): SetLines {
  const widest = lineWidth * 1.5;
  const pieces = piecesOf(text, lineWidth);
  let lines = wrap(pieces, lineWidth);
  for (const wider of [lineWidth * 1.25, widest]) if (lines.length > maxLines) lines = wrap(pieces, wider);
  const shown = lines.slice(0, maxLines).map(lineText);
  if (lines.length > maxLines) shown[maxLines - 1] = withEllipsis(lines[maxLines - 1]!, widest);
  const longest = Math.max(0, ...shown.map(emWidth));
  // Rounded down, so that the lines still fit at the size the SVG says.
  return { lines: shown, size: Math.floor(Math.min(maxSize, room / Math.max(1, longest)) * 10) / 10 };
}

/** A cut line ending in an ellipsis, within `lineWidth` em: pieces, then characters, dropped from its end to make room. */
function withEllipsis(line: readonly Piece[], lineWidth: number): string {
  const kept = [...line];
  while (kept.length > 1 && emWidth(lineText(kept) + ELLIPSIS) > lineWidth) kept.pop();
  const characters = Array.from(graphemes.segment(lineText(kept)), (s) => s.segment);
  while (characters.length > 1 && emWidth(characters.join("") + ELLIPSIS) > lineWidth) characters.pop();
  // No stop, comma or space before the ellipsis ("balcony,…"); a closing bracket or quote stays.
  while (characters.length > 1 && /^[\s\p{Po}]$/u.test(characters.at(-1)!)) characters.pop();
  return characters.join("") + ELLIPSIS;
}

/**
 * What each tone's picture shows, in English: the alt text where no writer
 * gave one on an English site or book, and what a model is told the picture
 * is before it describes it in the goal's language.
 */
export const ART_MOTIFS: Record<Tone, string> = {
  warm: "Rings of rust, brown and sand rising like suns over a peach background",
  professional: "A grid of blue and pale blue tiles on a light blue background",
  playful: "Confetti of purple and lilac dots and rings on a pink and lilac background",
  calm: "Layered pale green waves outlined in deep green on a pale green background",
  bold: "Diagonal bands of orange and grey and one orange square on a near-black background",
};

/** True for English (any region): the only language the fallback descriptions are written in. */
export const isEnglish = (language: string) => languageTag(language).toLowerCase().split("-")[0] === "en";

/**
 * A picture's description where no model wrote one (the offline writer, a
 * brief from before alt text was asked for): the motif in English on an
 * English page; elsewhere the name alone, which is in the page's language
 * and script, rather than English words in an Arabic or Chinese page.
 */
export function describeArt(tone: Tone, language: string, name: string): string {
  return isEnglish(language) ? (ART_MOTIFS[tone] ?? ART_MOTIFS.professional) : name.trim();
}

/** English leads that only say "this is a picture"; the alt of an image is already announced as one. */
const IMAGE_OF = /^(?:alt(?:\s*text)?\s*:\s*)?(?:(?:an?|the)\s+)?(?:image|picture|photo|illustration|graphic|drawing)\s+(?:of|showing)\s+/i;
/** Words a model gives for "nothing": not a description. */
const PLACEHOLDER = /^(?:n\/?a|none|null|undefined|todo|tbd|alt|alt text|image|picture|empty|-+|\.+|\u2026)$/i;

/**
 * The alt text a writer gave, made fit to use: one line, no "image of" lead,
 * at most ALT_TEXT_MAX characters cut at a word; none when it is missing,
 * empty or junk (a placeholder, markup, a template to fill in, no letters),
 * or when the page's language has a script of its own and the text has not
 * one letter of it (a model that answered in English for an Arabic site).
 */
export function givenAlt(raw: unknown, language?: string): string | undefined {
  if (typeof raw !== "string") return undefined;
  let text = raw.replace(/\s+/g, " ").trim();
  const lead = IMAGE_OF.exec(text);
  if (lead) text = text.slice(lead[0].length).replace(/^\p{Ll}/u, (c) => c.toUpperCase());
  if (!/[\p{L}\p{N}]/u.test(text) || PLACEHOLDER.test(text) || /[<>{}[\]]|lorem ipsum/i.test(text)) return undefined;
  const script = language === undefined ? undefined : scriptOf(language);
  if (script && !script.test(text)) return undefined;
  return shorten(text, ALT_TEXT_MAX);
}

/** ISO 15924 codes of writing systems that mix scripts, as Unicode script properties. */
const MIXED_SCRIPTS: Record<string, string> = { Hans: "Han", Hant: "Han", Jpan: "Han|Hiragana|Katakana", Kore: "Hangul|Han" };

/**
 * A pattern matching a letter of the script a language is usually written
 * in (from the platform's locale data: "ar" is Arab, "ja" Jpan), or none for
 * Latin-script languages and ones the platform does not know.
 */
function scriptOf(language: string): RegExp | undefined {
  try {
    const code = new Intl.Locale(languageTag(language)).maximize().script;
    if (!code || code === "Latn") return undefined;
    const names = (MIXED_SCRIPTS[code] ?? code).split("|");
    return new RegExp(names.map((name) => `\\p{Script=${name}}`).join("|"), "u");
  } catch {
    return undefined;
  }
}

/**
 * The description of a picture that sets `name` in large type: the name
 * first unless the description says it already. The dash joins them in any
 * language without words of ours.
 */
export function withName(name: string, description: string): string {
  const trimmed = name.trim();
  if (trimmed === "" || description.normalize("NFC").toLowerCase().includes(trimmed.normalize("NFC").toLowerCase())) return description;
  return `${trimmed} \u2014 ${description}`;
}
