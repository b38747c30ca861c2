import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Plan, PlanEvent } from "../../../gen/zero/v1/execution_pb.js";
import { errorMessage, executionsApi, isNotFound } from "./api.js";
import { append, h, showError } from "./dom.js";
import { eventLabel } from "./labels.js";

const clock = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** Histories that are open, by plan: a card redrawn by a live update takes its plan's over, open and as it was, and it reads what is new. */
const openHistories = new Map<string, PlanHistory>();

/**
 * A plan's history as a disclosure: closed, it costs nothing; opened, it
 * reads GetExecutionHistory and lists each event with its time, stage and
 * attempt, how long a finished stage ran, and a failure's error.
 */
class PlanHistory {
  readonly details: HTMLDetailsElement;
  /** Called when the plan no longer exists; the latest card's. */
  onGone: () => void;
  readonly #planId: string;
  /** "Loading…" until the first answer, or "Nothing has happened yet." */
  readonly #status = h("p", { class: "muted" });
  /** Why the history could not be read; what was shown stays. */
  readonly #error = h("p", { class: "form-error", role: "alert", hidden: true });
  /** Events are only ever added to a plan's history: new ones are appended, and only they are read out. */
  readonly #timeline = h("ol", { class: "timeline", "aria-live": "polite", "aria-relevant": "additions", hidden: true });
  /** When each stage attempt shown started, for the duration of its end. */
  readonly #startedAt = new Map<string, Date>();
  #shown = 0;
  #loaded = false;

  constructor(planId: string, onGone: () => void) {
    this.#planId = planId;
    this.onGone = onGone;
    this.details = h(
      "details",
      { class: "history" },
      h("summary", { "data-focus-key": "history" }, "History"),
      h("div", { class: "history-body" }, this.#status, this.#error, this.#timeline),
    );
    this.details.addEventListener("toggle", () => {
      if (this.details.open) {
        openHistories.set(planId, this);
        void this.refresh();
      } else {
        openHistories.delete(planId);
      }
    });
  }

  /** Reads the history again and adds what is new; "Loading…" only until the first answer. */
  async refresh(): Promise<void> {
    if (!this.#loaded) {
      this.#say("Loading…");
      showError(this.#error, undefined);
    }
    try {
      const { events } = await executionsApi.getExecutionHistory({ id: this.#planId });
      this.#loaded = true;
      // Answers can overtake each other: an older one is a prefix of what is shown, and adds nothing.
      append(this.#timeline, ...events.slice(this.#shown).map((event) => this.#item(event)));
      this.#shown = Math.max(this.#shown, events.length);
      this.#timeline.hidden = this.#shown === 0;
      this.#say(this.#shown === 0 ? "Nothing has happened yet." : undefined);
      showError(this.#error, undefined);
    } catch (error) {
      // Deleted elsewhere: the card goes, with one message from the list rather than an error here.
      if (isNotFound(error)) {
        openHistories.delete(this.#planId);
        return this.onGone();
      }
      if (!this.#loaded) this.#say(undefined);
      showError(this.#error, errorMessage(error));
    }
  }

  #say(message: string | undefined): void {
    this.#status.textContent = message ?? "";
    this.#status.hidden = message === undefined;
  }

  #item(event: PlanEvent): HTMLElement {
    const at = event.at ? timestampDate(event.at) : undefined;
    const key = `${event.stage}/${event.attempt}`;
    if (event.type === "stage_started" && at) this.#startedAt.set(key, at);
    const began = this.#startedAt.get(key);
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
      typeof event.detail?.feedback === "string" ? h("q", { class: "event-feedback", dir: "auto" }, event.detail.feedback) : null,
    );
  }
}

/** The history disclosure for a plan's card. `onGone`: the plan no longer exists. */
export function historyDisclosure(plan: Plan, onGone: () => void): HTMLElement {
  const open = openHistories.get(plan.id);
  if (!open) return new PlanHistory(plan.id, onGone).details;
  open.onGone = onGone;
  void open.refresh();
  return open.details;
}

/** The plan's card is gone for good (deleted): its history is not kept for a redraw. */
export function forgetHistory(planId: string): void {
  openHistories.delete(planId);
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
