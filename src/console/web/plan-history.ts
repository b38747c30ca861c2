import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Plan, PlanEvent } from "../../../gen/zero/v1/execution_pb.js";
import { errorMessage, executionsApi, isNotFound } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { eventLabel } from "./labels.js";

/** Plans whose history is open, so a card redrawn by a live update keeps it open. */
const openHistories = new Set<string>();

const clock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/**
 * A plan's history as a disclosure: closed, it costs nothing; opened, it
 * reads GetExecutionHistory and lists each event with its time, stage and
 * attempt, how long a finished stage ran, and a failure's error.
 * `onGone`: the plan no longer exists.
 */
export function historyDisclosure(plan: Plan, onGone: () => void): HTMLElement {
  const list = h("div", { class: "history-body", "aria-live": "polite" });
  const details = h("details", { class: "history", "data-focus-key": "history", open: openHistories.has(plan.id) }, h("summary", {}, "History"), list);
  const load = async () => {
    replaceChildren(list, h("p", { class: "muted" }, "Loading…"));
    try {
      const { events } = await executionsApi.getExecutionHistory({ id: plan.id });
      replaceChildren(list, timeline(events));
    } catch (error) {
      // Deleted elsewhere: the card goes, with one message from the list rather than an error here.
      if (isNotFound(error)) return onGone();
      replaceChildren(list, h("p", { class: "form-error", role: "alert" }, errorMessage(error)));
    }
  };
  details.addEventListener("toggle", () => {
    if (details.open) {
      openHistories.add(plan.id);
      void load();
    } else {
      openHistories.delete(plan.id);
    }
  });
  if (details.open) void load();
  return details;
}

function timeline(events: readonly PlanEvent[]): HTMLElement {
  if (events.length === 0) return h("p", { class: "muted" }, "Nothing has happened yet.");
  const startedAt = new Map<string, Date>();
  return h(
    "ol",
    { class: "timeline" },
    ...events.map((event) => {
      const at = event.at ? timestampDate(event.at) : undefined;
      const key = `${event.stage}/${event.attempt}`;
      if (event.type === "stage_started" && at) startedAt.set(key, at);
      const began = startedAt.get(key);
      const ended = event.type === "stage_succeeded" || event.type === "stage_failed" || event.type === "stage_interrupted";
      const error = errorOf(event);
      return h(
        "li",
        { class: `event event-${event.type}` },
        at ? h("time", { dateTime: at.toISOString() }, clock.format(at)) : null,
        h("span", { class: "event-type" }, eventLabel(event.type)),
        event.stage ? h("span", { class: "event-stage" }, event.stage, event.attempt ? ` · attempt ${event.attempt}` : "") : null,
        ended && began && at ? h("span", { class: "event-duration" }, duration(at.getTime() - began.getTime())) : null,
        error ? h("span", { class: "event-error" }, error) : null,
        typeof event.detail?.feedback === "string" ? h("q", { class: "event-feedback" }, event.detail.feedback) : null,
      );
    }),
  );
}

function errorOf(event: PlanEvent): string | undefined {
  const error = event.detail?.error;
  if (typeof error === "object" && error !== null && !Array.isArray(error) && typeof error.message === "string") return error.message;
  return undefined;
}

function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
