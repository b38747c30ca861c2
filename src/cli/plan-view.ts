import type { Plan, Stage } from "../client/zero-client.js";
import { line, type Segment, type Terminal, type Tone } from "./terminal.js";

/** How a plan is drawn: Unicode and colours on a terminal, plain ASCII elsewhere. */
export interface PlanStyle {
  ansi: boolean;
  color: boolean;
  columns: number;
  /** Spinner frame for running stages (advanced by the live view). */
  frame?: number;
  /** Resolves the service's relative URLs (`/preview/…`) to ones a person can open. */
  baseUrl?: string;
}

export const BAR_WIDTH = 30;
const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const STATE_WIDTH = "awaiting_approval".length;

/** `[██████░░░░]  40%`, or `[######----]  40%` without a terminal. */
export function progressBar(percent: number, width: number, ascii: boolean): string {
  const clamped = Math.max(0, Math.min(100, Math.round(percent)));
  const filled = Math.round((clamped / 100) * width);
  const [on, off] = ascii ? ["#", "-"] : ["█", "░"];
  return `[${on.repeat(filled)}${off.repeat(width - filled)}] ${String(clamped).padStart(3)}%`;
}

export function toneOf(state: string): Tone {
  switch (state) {
    case "succeeded":
      return "green";
    case "failed":
    case "interrupted":
      return "red";
    case "awaiting_approval":
      return "yellow";
    case "running":
      return "cyan";
    default:
      return "dim";
  }
}

function icon(state: string, frame: number): string {
  switch (state) {
    case "succeeded":
      return "✓";
    case "failed":
      return "✗";
    case "awaiting_approval":
      return "◆";
    case "running":
      return SPINNER[frame % SPINNER.length]!;
    default:
      return "·";
  }
}

/** `plan pln_…  website  "goal"` */
export function headerLine(plan: Plan, style: PlanStyle): string {
  return line([["plan ", "dim"], [plan.id, "bold"], [`  ${plan.outcome}  `, "dim"], [JSON.stringify(plan.goal)]], style.columns, style.color);
}

/** The plan's bar, percentage and status. */
export function barLine(plan: Plan, style: PlanStyle): string {
  return line([[progressBar(plan.progress, BAR_WIDTH, !style.ansi)], ["  "], [plan.status, toneOf(plan.status)]], style.columns, style.color);
}

/**
 * One stage: state, attempts, how far a running stage has got (the bar counts
 * only finished stages, so this is what moves during a long one) and, when it
 * failed, its error.
 */
export function stageLine(stage: Stage, style: PlanStyle): string {
  const segments: Segment[] = [["  "]];
  if (style.ansi) segments.push([`${icon(stage.state, style.frame ?? 0)} `, toneOf(stage.state)]);
  segments.push([stage.id.padEnd(11)], [stage.state.padEnd(STATE_WIDTH), toneOf(stage.state)]);
  if (stage.attempts > 0) segments.push([`  attempt ${stage.attempts}`, "dim"]);
  if (stage.state === "running" && stage.progress > 0) segments.push([`  ${stage.progress}%`, "cyan"]);
  if (stage.error) segments.push([`  ${stage.error.type}: ${stage.error.message}`, "red"]);
  return line(segments, style.columns, style.color);
}

/** The whole plan: header, bar, a line per stage, and what is known about the result. */
export function planLines(plan: Plan, style: PlanStyle): string[] {
  const lines = [headerLine(plan, style), barLine(plan, style), ...plan.stages.map((stage) => stageLine(stage, style))];
  lines.push(...detailLines(plan, style));
  return lines;
}

/** Project, warning and URLs, once the plan has them. */
export function detailLines(plan: Plan, style: PlanStyle): string[] {
  const lines: string[] = [];
  const add = (label: string, value: string, tone: Tone = "plain") =>
    lines.push(
      line(
        [
          [`  ${label.padEnd(11)}`, "dim"],
          [value, tone],
        ],
        style.columns,
        style.color,
      ),
    );
  if (plan.project) add("project", `${plan.project.name} (${plan.project.slug})`);
  if (plan.warning) add("warning", plan.warning, "yellow");
  if (plan.previewUrl) add("preview", absoluteUrl(plan.previewUrl, style.baseUrl));
  if (plan.publishedUrl) add("published", absoluteUrl(plan.publishedUrl, style.baseUrl), "green");
  return lines;
}

/** The stage that holds the plan up: waiting at the gate, failed, or interrupted. */
export function blockingStage(plan: Plan): Stage | undefined {
  return plan.stages.find((s) => s.state === "awaiting_approval" || s.state === "failed");
}

export function absoluteUrl(url: string, baseUrl: string | undefined): string {
  if (!baseUrl) return url;
  try {
    return new URL(url, `${baseUrl}/`).href;
  } catch {
    return url;
  }
}

/** Draws a frame that is repainted in place (LivePlanView), with the style a terminal allows: each line cut to the window's width. */
export function liveStyleFor(terminal: Terminal, baseUrl?: string): PlanStyle {
  return {
    ansi: terminal.ansi,
    color: terminal.color,
    get columns() {
      return terminal.columns;
    },
    baseUrl,
  };
}

/** Draws lines printed once (`show`, `cancel`): nothing repaints them, so nothing is cut; the terminal wraps a long one. */
export function printStyleFor(terminal: Terminal, baseUrl?: string): PlanStyle {
  return { ansi: terminal.ansi, color: terminal.color, columns: Number.POSITIVE_INFINITY, baseUrl };
}
