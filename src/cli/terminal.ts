import { BIDI_CONTROLS, DEL_AND_C1 } from "../strings.js";

/** Where the CLI writes, and what that place can show. */
export interface Terminal {
  write(text: string): void;
  /** True when output goes to a terminal that understands ANSI: repaint in place, Unicode bar. */
  ansi: boolean;
  /** Colours too (ANSI, and `NO_COLOR` unset). */
  color: boolean;
  /** Visible width; long lines are cut to it so a repaint can count its lines. Unbounded where nothing repaints (a pipe, a log). */
  columns: number;
  /** Visible height: a repaint cannot climb above the top row, so a frame drawn in place must fit below it. Unbounded where nothing repaints. */
  rows: number;
  /** Calls `listener` when the window's size changes (a terminal only); returns how to stop. */
  onResize?(listener: () => void): () => void;
}

export interface WritableOutput {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  on?(event: "resize", listener: () => void): unknown;
  off?(event: "resize", listener: () => void): unknown;
}

/** Decides, once, how to draw on `stream` (https://no-color.org, `TERM=dumb`). */
export function terminalFor(stream: WritableOutput, env: Record<string, string | undefined>): Terminal {
  const ansi = stream.isTTY === true && env.TERM !== "dumb";
  return {
    write: (text) => void stream.write(text),
    ansi,
    color: ansi && (env.NO_COLOR ?? "") === "",
    // Read at each use: a resized window must not make a repaint miscount its wrapped lines. Without ANSI
    // nothing is repainted, so nothing needs cutting: a log keeps every word of a warning or an error.
    get columns() {
      if (!ansi) return Number.POSITIVE_INFINITY;
      return stream.columns || 100;
    },
    get rows() {
      if (!ansi) return Number.POSITIVE_INFINITY;
      return stream.rows || 24;
    },
    onResize: (listener) => {
      stream.on?.("resize", listener);
      return () => stream.off?.("resize", listener);
    },
  };
}

export type Tone = "plain" | "green" | "red" | "yellow" | "cyan" | "dim" | "bold";

const SGR: Record<Exclude<Tone, "plain">, [number, number]> = {
  green: [32, 39],
  red: [31, 39],
  yellow: [33, 39],
  cyan: [36, 39],
  dim: [2, 22],
  bold: [1, 22],
};

/** A piece of a line with its tone; lines are built of these so they can be cut by visible width. */
export type Segment = readonly [text: string, tone?: Tone];

/** Joins segments into one line no wider than `width` columns, coloured when `color`. */
export function line(segments: readonly Segment[], width: number, color: boolean): string {
  let room = width;
  let out = "";
  for (const [raw, tone = "plain"] of segments) {
    if (room <= 0) break;
    const text = printable(raw);
    const textWidth = displayWidth(text);
    const fits = textWidth <= room ? text : `${cut(text, room - 1)}…`;
    room -= Math.min(textWidth, room);
    out += color && tone !== "plain" ? `\x1b[${SGR[tone][0]}m${fits}\x1b[${SGR[tone][1]}m` : fits;
  }
  return out.trimEnd();
}

/** The columns a line made by `line` takes on screen: its colours take none. */
export function lineWidth(text: string): number {
  return displayWidth(text.replace(COLOURS, ""));
}

const COLOURS = /\x1b\[\d+m/g;

/**
 * Text from elsewhere (the service, a model's project name, a goal) as text
 * a terminal shows rather than obeys: line breaks and tabs become spaces,
 * other control characters (escape sequences, bells) and the bidi controls
 * (which would reverse what follows them) U+FFFD. What the CLI
 * writes of its own (colours, cursor moves) never passes through here.
 */
export function printable(text: string): string {
  return shown(text, " ");
}

/** Running text from elsewhere (a model's answer) as `printable`, but keeping its line breaks and tabs. */
export function printableText(text: string): string {
  return shown(text, undefined);
}

/** Control and bidi characters as U+FFFD, except line breaks and tabs: each `breaks` when given; else `\n` and `\t` kept, and `\r` U+FFFD too. */
function shown(text: string, breaks: " " | undefined): string {
  return text.replace(CONTROLS, (character) => {
    if (character === "\n" || character === "\t") return breaks ?? character;
    return character === "\r" && breaks ? breaks : "\uFFFD";
  });
}

const CONTROLS = new RegExp(String.raw`[\u0000-\u001f${DEL_AND_C1}${BIDI_CONTROLS}]`, "g");

/**
 * The columns a terminal gives `text`. A line cut by anything else (code
 * points, UTF-16 units) wraps on a narrow window when it holds CJK or emoji,
 * and a repaint that counted it as one row then climbs one row too few.
 * Where terminals disagree (an emoji sequence they may or may not join), the
 * larger count is taken: a line cut a column short is harmless, a wrapped one is not.
 */
export function displayWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  let width = 0;
  for (const { segment } of GRAPHEMES.segment(text)) width += graphemeWidth(segment);
  return width;
}

/** The longest start of `text` no wider than `width` columns, never splitting a character from its marks. */
function cut(text: string, width: number): string {
  let taken = 0;
  let end = 0;
  for (const { segment, index } of GRAPHEMES.segment(text)) {
    taken += graphemeWidth(segment);
    if (taken > width) break;
    end = index + segment.length;
  }
  return text.slice(0, end);
}

const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
// Combining and enclosing marks, format characters (zero-width space and joiner, variation selectors) and controls.
const NO_WIDTH = /[\p{Mn}\p{Me}\p{Cf}\p{Cc}]/u;
const EMOJI = /\p{Emoji_Presentation}/u;
const REGIONAL_INDICATOR = /\p{Regional_Indicator}/u;
// What asks for an emoji's two columns in a sequence: VS16 (❤️), a keycap (1️⃣), a flag's letters (🇯🇵).
const EMOJI_SEQUENCE = /[\uFE0F\u20E3\p{Regional_Indicator}]/u;

/**
 * East Asian Wide and Fullwidth blocks (Unicode's EastAsianWidth.txt, W and
 * F, with unassigned gaps inside a block taken as wide too); emoji are found
 * by their Unicode property instead.
 */
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], // Hangul Jamo leading consonants
  [0x2329, 0x232a], // angle brackets
  [0x2e80, 0x303e], // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
  [0x3041, 0x33ff], // kana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed and compatibility CJK
  [0x3400, 0x4dbf], // CJK extension A
  [0x4e00, 0xa4cf], // CJK unified ideographs, Yi
  [0xa960, 0xa97f], // Hangul Jamo extended A
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe10, 0xfe19], // vertical forms
  [0xfe30, 0xfe6f], // CJK compatibility forms, small form variants
  [0xff00, 0xff60], // fullwidth forms
  [0xffe0, 0xffe6], // fullwidth signs
  [0x16fe0, 0x16fff], // ideographic symbols
  [0x17000, 0x18cff], // Tangut, Khitan
  [0x18d00, 0x18d8f], // Tangut supplement
  [0x1aff0, 0x1b2ff], // kana extended and supplement, Nushu
  [0x1f200, 0x1f265], // enclosed ideographic supplement
  [0x20000, 0x3fffd], // CJK extensions B and on
];

function graphemeWidth(grapheme: string): number {
  let width = 0;
  for (const char of grapheme) width += charWidth(char);
  // Two columns where the terminal draws the sequence as one emoji, the sum of its parts where it does not.
  return EMOJI_SEQUENCE.test(grapheme) ? Math.max(width, 2) : width;
}

function charWidth(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (code >= 0x20 && code < 0x7f) return 1;
  // Hangul vowels and trailing consonants join the leading consonant's two columns.
  if (NO_WIDTH.test(char) || (code >= 0x1160 && code <= 0x11ff)) return 0;
  // A flag's letters: one column each, two for the pair (above).
  if (REGIONAL_INDICATOR.test(char)) return 1;
  if (EMOJI.test(char)) return 2;
  return WIDE.some(([from, to]) => code >= from && code <= to) ? 2 : 1;
}
