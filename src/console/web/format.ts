import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 24 * 3600],
  ["month", 30 * 24 * 3600],
  ["week", 7 * 24 * 3600],
  ["day", 24 * 3600],
  ["hour", 3600],
  ["minute", 60],
];

/** "3 minutes ago"; under a minute is "just now". */
export function relativeTime(date: Date, now = Date.now()): string {
  const seconds = Math.round((date.getTime() - now) / 1000);
  for (const [unit, size] of STEPS) {
    if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
  }
  return "just now";
}

/** A `<time>` element: relative text, exact date in `datetime` and the tooltip. */
export function timeElement(timestamp: Timestamp | undefined, fallback = "—"): HTMLElement {
  if (!timestamp) {
    const span = document.createElement("span");
    span.className = "muted";
    span.textContent = fallback;
    return span;
  }
  const date = timestampDate(timestamp);
  const time = document.createElement("time");
  time.dateTime = date.toISOString();
  time.title = absolute.format(date);
  time.textContent = relativeTime(date);
  return time;
}

/** Brings every relative time on the page up to date; the shell calls it on a timer so "just now" ages. */
export function refreshRelativeTimes(root: ParentNode): void {
  const now = Date.now();
  for (const time of Array.from(root.querySelectorAll<HTMLTimeElement>("time[datetime]"))) {
    time.textContent = relativeTime(new Date(time.dateTime), now);
  }
}
