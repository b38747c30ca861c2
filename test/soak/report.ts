import { KINDS, type Sample } from "./traffic.js";

/** One invariant the soak verifies; any `ok: false` makes the run exit 1. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** `type×count` pairs, most frequent first. */
export function countBy(samples: Sample[], key: (s: Sample) => string): string {
  const counts = new Map<string, number>();
  for (const s of samples) counts.set(key(s), (counts.get(key(s)) ?? 0) + 1);
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k}×${n}`)
    .join(", ");
}

/** Requests, errors by type and latency per kind, for the samples of some phases. */
export function loadTable(samples: Sample[], seconds: number): string {
  const rows: string[][] = [];
  for (const kind of KINDS) {
    const of = samples.filter((s) => s.kind === kind);
    if (of.length === 0) continue;
    rows.push(row(kind, of, seconds));
  }
  rows.push(row("all", samples, seconds));
  return table(["kind", "requests", "req/s", "ok", "errors (by type)", "p50 ms", "p99 ms"], rows);
}

function row(label: string, of: Sample[], seconds: number): string[] {
  const ok = of.filter((s) => s.result === "ok");
  const errors = of.filter((s) => s.result !== "ok");
  const ms = ok.map((s) => s.ms);
  return [
    label,
    String(of.length),
    seconds > 0 ? (of.length / seconds).toFixed(1) : "-",
    String(ok.length),
    errors.length === 0 ? "0" : `${errors.length}: ${countBy(errors, (s) => s.errorType ?? "?")}`,
    fmt(percentile(ms, 50)),
    fmt(percentile(ms, 99)),
  ];
}

function fmt(ms: number): string {
  return Number.isNaN(ms) ? "-" : ms < 10 ? ms.toFixed(1) : ms.toFixed(0);
}

/** A plain-text table with a header rule; cells wrap at 90 characters. */
export function table(headers: string[], rows: string[][]): string {
  const wrapped = rows.map((r) => r.map((cell) => wrap(cell, 90)));
  const widths = headers.map((h, i) => Math.max(h.length, ...wrapped.map((r) => Math.max(...(r[i] ?? [""]).map((l) => l.length)))));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  const out = [line(headers), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`];
  for (const r of wrapped) {
    const height = Math.max(...r.map((c) => c.length));
    for (let i = 0; i < height; i++) out.push(line(r.map((c) => c[i] ?? "")));
  }
  return out.join("\n");
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let current = "";
  for (const word of text.split(" ")) {
    if (current && current.length + word.length + 1 > width) {
      lines.push(current);
      current = word;
    } else current = current ? `${current} ${word}` : word;
  }
  lines.push(current);
  return lines;
}

export function checksTable(checks: Check[]): string {
  return table(
    ["check", "result", "figures"],
    checks.map((c) => [c.name, c.ok ? "PASS" : "FAIL", c.detail]),
  );
}
