import type { GetCapabilitiesResponse } from "../../../gen/zero/v1/capabilities_pb.js";
import type { Plan } from "../../../gen/zero/v1/execution_pb.js";
import { capabilitiesApi, errorMessage, executionsApi, isSignedOut, isUnimplemented } from "./api.js";
import { h, replaceChildren, setBusy, showError } from "./dom.js";
import { timeElement } from "./format.js";
import { outcomeLabel, stageStateLabel, statusLabel } from "./labels.js";
import { pageHeading, type ViewContext } from "./view.js";

/**
 * Browsers open at most six HTTP/1.1 connections per origin, and each
 * WatchExecution stream holds one; the rest of the running plans are polled.
 */
const MAX_STREAMS = 2;
const POLL_MS = 3000;

/** Executions: start one from a goal, follow them live, approve the gate, open the results. */
export function renderExecutions(main: HTMLElement, context: ViewContext): () => void {
  const plans = new Map<string, Plan>();
  const cards = new Map<string, HTMLElement>();
  const watches = new Map<string, AbortController>();
  let watchUnsupported = false;
  /** After a stream fails, polling alone for a while, so a failing server is not hammered with reconnects. */
  let watchPausedUntil = 0;
  let stopped = false;
  let listLoaded = false;
  let pollTimer: number | undefined;
  let approvalStage = "review";
  let goalLimits = { min: 8, max: 2000 };

  // --- start ---
  const goal = h("textarea", { id: "goal", name: "goal", rows: 3, required: true, minlength: goalLimits.min, maxlength: goalLimits.max, "aria-describedby": "goal-hint" });
  const goalHint = h("p", { class: "hint", id: "goal-hint" }, `Describe what you want in plain language, ${goalLimits.min} to ${goalLimits.max} characters. Ctrl+Enter starts it.`);
  const outcome = h(
    "select",
    { id: "outcome", name: "outcome" },
    h("option", { value: "website", selected: true }, "Website"),
    h("option", { value: "ebook" }, "Ebook"),
  );
  const startError = h("p", { class: "form-error", role: "alert", hidden: true });
  const startButton = h("button", { type: "submit", class: "button primary" }, "Start execution");
  const startForm = h(
    "form",
    { class: "start-form", "aria-labelledby": "start-title" },
    h("div", { class: "field grow" }, h("label", { for: "goal" }, "Goal"), goal, goalHint),
    h("div", { class: "field" }, h("label", { for: "outcome" }, "Outcome"), outcome),
    startError,
    h("div", { class: "actions" }, startButton),
  );
  // Enter makes a new line in the goal; Ctrl+Enter (⌘+Enter) starts the execution, as in most editors.
  goal.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      startForm.requestSubmit();
    }
  });
  startForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(startError, undefined);
    const text = goal.value.trim();
    const length = [...text].length;
    if (length < goalLimits.min || length > goalLimits.max) {
      showError(startError, `The goal must be ${goalLimits.min} to ${goalLimits.max} characters (it has ${length}).`);
      goal.focus();
      return;
    }
    setBusy(startForm, true);
    try {
      const response = await executionsApi.createExecution({ goal: text, outcome: outcome.value });
      startForm.reset();
      if (response.plan) {
        upsert(response.plan);
        context.announce(`Execution started: ${response.plan.goal}`);
      }
      await refreshList();
    } catch (error) {
      if (isSignedOut(error)) return context.signedOut();
      showError(startError, errorMessage(error));
    } finally {
      setBusy(startForm, false);
    }
  });

  // --- list ---
  const listTitle = h("h2", { id: "executions-title", tabindex: "-1" }, "Recent executions");
  const listStatus = h("p", { class: "muted empty", role: "status" }, "Loading executions…");
  const list = h("ol", { class: "executions", "aria-labelledby": "executions-title" });

  main.append(
    pageHeading("Executions", "Describe a goal; project-zero plans it, writes and builds it, and waits for your approval before it publishes."),
    h("section", { class: "card", "aria-labelledby": "start-title" }, h("h2", { id: "start-title" }, "Start an execution"), startForm),
    h("section", { class: "card", "aria-labelledby": "executions-title" }, listTitle, listStatus, list),
  );

  void loadCapabilities();
  void refreshList();
  const onVisible = () => {
    if (document.visibilityState === "visible") void refreshList();
  };
  document.addEventListener("visibilitychange", onVisible);

  return () => {
    stopped = true;
    window.clearTimeout(pollTimer);
    document.removeEventListener("visibilitychange", onVisible);
    for (const controller of watches.values()) controller.abort();
    watches.clear();
  };

  async function loadCapabilities(): Promise<void> {
    let caps: GetCapabilitiesResponse;
    try {
      caps = await capabilitiesApi.getCapabilities({});
    } catch {
      return; // The defaults above match the documented limits.
    }
    if (caps.limits && caps.limits.goalMaxLength > 0) {
      goalLimits = { min: caps.limits.goalMinLength, max: caps.limits.goalMaxLength };
      goal.minLength = goalLimits.min;
      goal.maxLength = goalLimits.max;
      goalHint.textContent = `Describe what you want in plain language, ${goalLimits.min} to ${goalLimits.max} characters. Ctrl+Enter starts it.`;
    }
    approvalStage = caps.outcomes.find((o) => o.approvalStage)?.approvalStage ?? approvalStage;
    for (const option of Array.from(outcome.options)) {
      const known = caps.outcomes.find((o) => o.id === option.value);
      const unavailable = caps.unavailable.includes(option.value) || (known !== undefined && !known.available);
      option.disabled = unavailable;
      option.textContent = `${outcomeLabel(option.value)}${unavailable ? " (not available here)" : ""}`;
    }
    if (outcome.selectedOptions[0]?.disabled) {
      const firstAvailable = Array.from(outcome.options).find((o) => !o.disabled);
      if (firstAvailable) outcome.value = firstAvailable.value;
    }
  }

  async function refreshList(): Promise<void> {
    if (stopped) return;
    window.clearTimeout(pollTimer);
    try {
      const response = await executionsApi.listExecutions({});
      if (stopped) return;
      const fresh = new Set(response.plans.map((p) => p.id));
      for (const id of [...plans.keys()]) {
        if (!fresh.has(id)) {
          plans.delete(id);
          cards.get(id)?.remove();
          cards.delete(id);
          watches.get(id)?.abort();
          watches.delete(id);
        }
      }
      // Newest first, as the service orders them.
      response.plans.forEach((plan, index) => upsert(plan, index));
      listLoaded = true;
      drawEmpty();
    } catch (error) {
      if (stopped) return;
      if (isSignedOut(error)) return context.signedOut();
      listStatus.hidden = false;
      if (isUnimplemented(error)) {
        listStatus.textContent = "This server does not run executions yet.";
        setBusy(startForm, true);
        return;
      }
      listStatus.textContent = `Could not load executions: ${errorMessage(error)}`;
    }
    schedulePoll();
  }

  function drawEmpty(): void {
    listStatus.hidden = plans.size > 0;
    listStatus.textContent = plans.size > 0 ? "" : "No executions yet. Describe a goal above to start one.";
  }

  /** Polls only while some running plan is not followed by a stream. */
  function schedulePoll(): void {
    window.clearTimeout(pollTimer);
    if (stopped) return;
    const running = [...plans.values()].filter(isLive);
    syncWatches(running);
    const unwatched = running.some((p) => !watches.has(p.id));
    if (unwatched && document.visibilityState === "visible") pollTimer = window.setTimeout(() => void refreshList(), POLL_MS);
  }

  function syncWatches(running: Plan[]): void {
    if (watchUnsupported || Date.now() < watchPausedUntil) return;
    for (const plan of running) {
      if (watches.size >= MAX_STREAMS) break;
      if (!watches.has(plan.id)) void watch(plan.id);
    }
  }

  async function watch(id: string): Promise<void> {
    const controller = new AbortController();
    watches.set(id, controller);
    try {
      for await (const update of executionsApi.watchExecution({ id }, { signal: controller.signal })) {
        if (update.plan) upsert(update.plan);
      }
    } catch (error) {
      if (controller.signal.aborted || stopped) return;
      if (isSignedOut(error)) return context.signedOut();
      if (isUnimplemented(error)) watchUnsupported = true;
      else watchPausedUntil = Date.now() + 3 * POLL_MS;
    } finally {
      if (watches.get(id) === controller) watches.delete(id);
    }
    // The stream ended (the plan stopped at the gate, ended, or the server let go): catch up and re-plan.
    if (!stopped) void refreshList();
  }

  /** Adds or updates one plan's card in place, keeping focus where it was. */
  function upsert(plan: Plan, index?: number): void {
    const previous = plans.get(plan.id);
    plans.set(plan.id, plan);
    const old = cards.get(plan.id);
    const focusKey = old?.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.focusKey : undefined;
    const card = planCard(plan);
    cards.set(plan.id, card);
    if (old) old.replaceWith(card);
    else list.insertBefore(card, list.children[index ?? 0] ?? null);
    if (index !== undefined && list.children[index] !== card) list.insertBefore(card, list.children[index] ?? null);
    if (focusKey) card.querySelector<HTMLElement>(`[data-focus-key="${focusKey}"]`)?.focus();
    if (previous && previous.status !== plan.status) context.announce(`${shortGoal(plan)}: ${statusLabel(plan.status)}`);
    if (listLoaded) drawEmpty();
  }

  function planCard(plan: Plan): HTMLElement {
    const titleId = `plan-${plan.id}-title`;
    const progressId = `plan-${plan.id}-progress`;
    const title = plan.project?.name || shortGoal(plan);
    const failedStage = plan.stages.find((s) => s.state === "failed");
    const gate = plan.stages.find((s) => s.state === "awaiting_approval");
    return h(
      "li",
      { class: `execution status-${plan.status}`, "data-plan-id": plan.id },
      h(
        "article",
        { "aria-labelledby": titleId },
        h(
          "div",
          { class: "execution-head" },
          h("div", { class: "execution-title" }, h("h3", { id: titleId }, title), plan.project?.name ? h("p", { class: "goal" }, plan.goal) : null),
          h("span", { class: `status status-${plan.status}` }, statusLabel(plan.status)),
        ),
        h(
          "p",
          { class: "meta" },
          h("span", {}, outcomeLabel(plan.outcome)),
          h("span", {}, "Started ", timeElement(plan.createdAt)),
          h("span", {}, "Updated ", timeElement(plan.updatedAt)),
          h("code", { class: "plan-id" }, plan.id),
        ),
        h(
          "div",
          { class: "progress-row" },
          h("progress", { id: progressId, max: 100, value: plan.progress, "aria-label": `Progress of ${title}` }),
          h("span", { class: "progress-value" }, `${plan.progress}%`),
        ),
        h(
          "ol",
          { class: "stages", "aria-label": "Stages" },
          ...plan.stages.map((stage) =>
            h(
              "li",
              { class: `stage stage-${stage.state}` },
              h("span", { class: "stage-dot", "aria-hidden": "true" }),
              h("span", { class: "stage-title" }, stage.title || stage.id),
              h("span", { class: "sr-only" }, `: ${stageStateLabel(stage.state)}`),
            ),
          ),
        ),
        plan.warning ? h("p", { class: "notice notice-warn" }, plan.warning) : null,
        failedStage?.error ? h("p", { class: "notice notice-error" }, `${failedStage.title || failedStage.id} failed: ${failedStage.error.message}`) : null,
        planActions(plan, gate?.id),
      ),
    );
  }

  function planActions(plan: Plan, gateId: string | undefined): HTMLElement | null {
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const buttons: HTMLElement[] = [];
    if (plan.status === "awaiting_approval") {
      const approve = h("button", { type: "button", class: "button primary small", "data-focus-key": "approve" }, "Approve and publish");
      approve.addEventListener("click", () => resume(plan, [gateId ?? approvalStage], approve, error, "Approved"));
      buttons.push(approve);
    } else if (plan.resumable && (plan.status === "failed" || plan.status === "interrupted")) {
      const retry = h("button", { type: "button", class: "button small", "data-focus-key": "resume" }, "Resume");
      retry.addEventListener("click", () => resume(plan, [], retry, error, "Resumed"));
      buttons.push(retry);
    }
    const preview = safeUrl(plan.previewUrl);
    const published = safeUrl(plan.publishedUrl);
    if (preview) buttons.push(externalLink(preview, "Open preview", "preview"));
    if (published) buttons.push(externalLink(published, plan.outcome === "ebook" ? "Open published ebook" : "Open published site", "published"));
    if (buttons.length === 0) return null;
    return h("div", { class: "execution-actions" }, h("div", { class: "actions" }, ...buttons), error);
  }

  async function resume(plan: Plan, approve: string[], button: HTMLButtonElement, error: HTMLElement, verb: string): Promise<void> {
    button.disabled = true;
    showError(error, undefined);
    try {
      const response = await executionsApi.resumeExecution({ planId: plan.id, approve });
      if (response.plan) upsert(response.plan);
      context.announce(`${verb}: ${shortGoal(plan)}`);
      schedulePoll();
    } catch (caught) {
      if (isSignedOut(caught)) return context.signedOut();
      button.disabled = false;
      showError(error, errorMessage(caught));
    }
  }
}

function isLive(plan: Plan): boolean {
  return plan.status === "running";
}

function shortGoal(plan: Plan): string {
  const goal = plan.goal.trim();
  return goal.length > 80 ? `${goal.slice(0, 79)}…` : goal;
}

/** Only web links from the service become links: never `javascript:` or other schemes. */
function safeUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value, window.location.origin);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

function externalLink(href: string, label: string, focusKey: string): HTMLAnchorElement {
  return h(
    "a",
    { class: "button small", href, target: "_blank", rel: "noopener noreferrer", "data-focus-key": focusKey },
    label,
    h("span", { class: "sr-only" }, " (opens in a new tab)"),
    h("span", { class: "external", "aria-hidden": "true" }, " ↗"),
  );
}
