/** Where the CLI writes, and what that place can show. */
export interface Terminal {
  write(text: string): void;
  /** True when output goes to a terminal that understands ANSI: repaint in place, Unicode bar. */
  ansi: boolean;
  /** Colours too (ANSI, and `NO_COLOR` unset). */
  color: boolean;
  /** Visible width; long lines are cut to it so a repaint can count its lines. */
  columns: number;
}

export interface WritableOutput {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Decides, once, how to draw on `stream` (https://no-color.org, `TERM=dumb`). */
export function terminalFor(stream: WritableOutput, env: Record<string, string | undefined>): Terminal {
  const ansi = stream.isTTY === true && env.TERM !== "dumb";
  return {
    write: (text) => void stream.write(text),
    ansi,
    color: ansi && (env.NO_COLOR ?? "") === "",
    // Read at each use: a resized window must not make a repaint miscount its wrapped lines.
    get columns() {
      return ansi && stream.columns ? stream.columns : 100;
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

/** Joins segments into one line no wider than `width` visible characters, coloured when `color`. */
export function line(segments: readonly Segment[], width: number, color: boolean): string {
  let room = width;
  let out = "";
  for (const [text, tone = "plain"] of segments) {
    if (room <= 0) break;
    const chars = [...text];
    const fits = chars.length <= room ? text : `${chars.slice(0, Math.max(0, room - 1)).join("")}…`;
    room -= Math.min(chars.length, room);
    out += color && tone !== "plain" ? `\x1b[${SGR[tone][0]}m${fits}\x1b[${SGR[tone][1]}m` : fits;
  }
  return out.trimEnd();
}
