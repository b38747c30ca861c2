import type { Plan, Stage } from "../client/zero-client.js";
import { barLine, detailLines, headerLine, planLines, stageLine, type PlanStyle } from "./plan-view.js";
import type { Terminal } from "./terminal.js";

const SPIN_MS = 100;

/**
 * A plan as it changes. On a terminal the frame (header, bar, a line per
 * stage) is redrawn in place; elsewhere (a pipe, a log file) only what
 * changed is printed, a line at a time, so the output reads as a log.
 */
export class LivePlanView {
  readonly #terminal: Terminal;
  readonly #style: PlanStyle;
  #last: Plan | undefined;
  /** Lines of the current frame on screen, to move back over when repainting. */
  #drawn = 0;
  #frame = 0;
  #spinner: ReturnType<typeof setInterval> | undefined;

  constructor(terminal: Terminal, style: PlanStyle) {
    this.#terminal = terminal;
    this.#style = style;
  }

  update(plan: Plan): void {
    if (this.#terminal.ansi) {
      this.#last = plan;
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
    if (this.#terminal.ansi && this.#last) this.#repaint();
    this.#drawn = 0;
  }

  #repaint(): void {
    if (!this.#last) return;
    const lines = planLines(this.#last, { ...this.#style, frame: this.#frame });
    // Up to the frame's first line, clear to the end of the screen, draw it again.
    const back = this.#drawn > 0 ? `\x1b[${this.#drawn}F\x1b[0J` : "";
    this.#terminal.write(`${back}${lines.join("\n")}\n`);
    this.#drawn = lines.length;
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
