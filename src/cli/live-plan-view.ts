import type { Plan, Stage } from "../client/zero-client.js";
import { barLine, detailLines, headerLine, planLines, stageLine, type PlanStyle } from "./plan-view.js";
import { lineWidth, type Terminal } from "./terminal.js";

const SPIN_MS = 100;

/**
 * A plan as it changes. On a terminal the frame (header, bar, a line per
 * stage) is redrawn in place, cut to the window's height while it moves (a
 * repaint cannot climb above the top row) and left whole once it rests;
 * elsewhere (a pipe, a log file) only what changed is printed, a line at a
 * time, so the output reads as a log.
 */
export class LivePlanView {
  readonly #terminal: Terminal;
  readonly #style: PlanStyle;
  #last: Plan | undefined;
  /** The columns each line of the frame on screen took when drawn, to count the rows to move back over when repainting. */
  #drawn: number[] = [];
  /** The window's width when the frame on screen was drawn. */
  #drawnColumns = 0;
  #frame = 0;
  #spinner: ReturnType<typeof setInterval> | undefined;
  #stopListening: (() => void) | undefined;

  constructor(terminal: Terminal, style: PlanStyle) {
    this.#terminal = terminal;
    this.#style = style;
  }

  update(plan: Plan): void {
    if (this.#terminal.ansi) {
      this.#last = plan;
      this.#stopListening ??= this.#terminal.onResize?.(() => this.#repaint());
      this.#repaint();
      this.#spin(plan.stages.some((s) => s.state === "running"));
      return;
    }
    const lines = this.#last ? changedLines(this.#last, plan, this.#style) : planLines(plan, this.#style);
    this.#last = plan;
    for (const text of lines) this.#terminal.write(`${text}\n`);
  }

  /**
   * Leaves the current frame on screen as it is (the plan rested, or the
   * caller stopped following), so whatever is printed next goes below it.
   */
  settle(): void {
    this.#spin(false);
    this.#stopListening?.();
    this.#stopListening = undefined;
    if (this.#terminal.ansi && this.#last) this.#repaint({ whole: true });
    this.#drawn = [];
  }

  #repaint({ whole = false } = {}): void {
    if (!this.#last) return;
    const { columns, rows } = this.#terminal;
    const style = { ...this.#style, frame: this.#frame };
    // The cursor rests on the row below the frame, so the frame may take every row but that one.
    const lines = whole ? planLines(this.#last, style) : fittedFrame(this.#last, style, rows - 1);
    // Up to the frame's first row, then each line cleared and drawn again, then whatever is left below cleared.
    // Clearing the screen from its top row instead would make tmux keep a copy of it in the scrollback at each
    // repaint. But once the window's width has changed, the rows the old frame takes are unknown: some terminals
    // rewrap its lines and others cut them, and a repaint that ran between the resize and the process learning of
    // it climbed by the old width's count and left part of the old frame above the new. So then the whole screen
    // is cleared, once, and the frame drawn from its top.
    const resized = this.#drawn.length > 0 && columns !== this.#drawnColumns;
    const climb = Math.min(rowsTaken(this.#drawn, columns), rows - 1);
    const back = resized ? "\x1b[H\x1b[2J" : climb > 0 ? `\x1b[${climb}F` : "";
    this.#terminal.write(`${back}${lines.map((text) => `\x1b[2K${text}\n`).join("")}\x1b[0J`);
    this.#drawn = lines.map(lineWidth);
    this.#drawnColumns = columns;
  }

  #spin(on: boolean): void {
    if (on && !this.#spinner) {
      this.#spinner = setInterval(() => {
        this.#frame++;
        this.#repaint();
      }, SPIN_MS);
      // The spinner alone must never keep the process alive.
      this.#spinner.unref();
    } else if (!on && this.#spinner) {
      clearInterval(this.#spinner);
      this.#spinner = undefined;
    }
  }
}

/**
 * The frame in at most `room` lines, in their order. Where the window is too
 * short for all of it, what moves is kept first: the bar, then the stages
 * (nearest the one under way first), then the frame's last line, the
 * header, and the other details from the newest.
 */
export function fittedFrame(plan: Plan, style: PlanStyle, room: number): string[] {
  const lines = planLines(plan, style);
  if (lines.length <= room) return lines;
  // planLines: the header, the bar, a line per stage, then the details.
  const [header, bar, firstStage, firstDetail] = [0, 1, 2, 2 + plan.stages.length];
  const unfinished = plan.stages.findIndex((stage) => stage.state !== "succeeded");
  const current = firstStage + (unfinished === -1 ? plan.stages.length - 1 : unfinished);
  const stages = plan.stages.map((_, index) => firstStage + index).sort((a, b) => Math.abs(a - current) - Math.abs(b - current));
  const details = lines
    .map((_, index) => index)
    .slice(firstDetail)
    .reverse();
  const byUse = [...new Set([bar, ...stages, lines.length - 1, header, ...details])];
  const kept = new Set(byUse.slice(0, Math.max(0, room)));
  return lines.filter((_, index) => kept.has(index));
}

/** The rows lines of these widths take on a window `columns` wide, each wrapped onto as many as it needs. */
function rowsTaken(widths: readonly number[], columns: number): number {
  return widths.reduce((rows, width) => rows + Math.max(1, Math.ceil(width / columns)), 0);
}

/** What a log reader needs to know about the step from `before` to `after`. */
export function changedLines(before: Plan, after: Plan, style: PlanStyle): string[] {
  const lines: string[] = [];
  const old = new Map(before.stages.map((s) => [s.id, s]));
  for (const stage of after.stages) {
    const previous = old.get(stage.id);
    if (!previous || stageChanged(previous, stage)) lines.push(stageLine(stage, style));
  }
  if (before.progress !== after.progress || before.status !== after.status) lines.push(barLine(after, style));
  const shown = new Set(detailLines(before, style));
  lines.push(...detailLines(after, style).filter((text) => !shown.has(text)));
  if (before.id !== after.id) lines.unshift(headerLine(after, style));
  return lines;
}

function stageChanged(a: Stage, b: Stage): boolean {
  return (
    a.state !== b.state || a.attempts !== b.attempts || a.progress !== b.progress || a.error?.type !== b.error?.type || a.error?.message !== b.error?.message
  );
}
