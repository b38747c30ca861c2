import type { GetCapabilitiesResponse } from "../../../gen/zero/v1/capabilities_pb.js";
import type { Plan } from "../../../gen/zero/v1/execution_pb.js";
import { GOAL_MAX_LENGTH, GOAL_MIN_LENGTH } from "../../api/limits.js";
import { errorMessage, executionsApi, isSignedOut } from "./api.js";
import { h, setBusy, showError } from "./dom.js";
import { outcomeLabel } from "./labels.js";
import type { ViewContext } from "./view.js";
import { goalDraft, keepGoalDraft } from "./drafts.js";

interface GoalLimits {
  min: number;
  max: number;
}

/** The start form's controls, and the goal limits it checks (the server's, once the capabilities arrive). */
export interface StartForm {
  form: HTMLFormElement;
  goal: HTMLTextAreaElement;
  goalHint: HTMLElement;
  outcome: HTMLSelectElement;
  error: HTMLElement;
  limits: GoalLimits;
}

/** The "Start an execution" form; `onStarted` runs once the service has created the plan. */
export function newExecutionForm(context: ViewContext, onStarted: (plan: Plan | undefined) => Promise<void>): StartForm {
  const start = startForm({ min: GOAL_MIN_LENGTH, max: GOAL_MAX_LENGTH });
  // What was typed and not started survives the session ending, a reload or a visit to another page, in this tab.
  start.goal.value = goalDraft();
  start.goal.addEventListener("input", () => keepGoalDraft(start.goal.value));
  // Enter makes a new line in the goal; Ctrl+Enter (⌘+Enter) starts the execution, as in most editors.
  start.goal.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      start.form.requestSubmit();
    }
  });
  start.form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await submitStart(start, context, onStarted);
  });
  return start;
}

/** Narrows the form to what this server allows: its goal limits, and only the outcomes it can make. */
export function applyCapabilities(start: StartForm, caps: GetCapabilitiesResponse): void {
  if (caps.limits && caps.limits.goalMaxLength > 0) {
    start.limits = { min: caps.limits.goalMinLength, max: caps.limits.goalMaxLength };
    start.goalHint.textContent = goalHint(start.limits);
  }
  const { outcome } = start;
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

function startForm(limits: GoalLimits): StartForm {
  const goal = h("textarea", {
    id: "goal",
    name: "goal",
    rows: 3,
    required: true,
    // People write in their own language: right to left when it is.
    dir: "auto",
    // No minlength / maxlength: they count UTF-16 units (an emoji is two), the service counts characters; checked on submit.
    "aria-describedby": "goal-hint",
  });
  const goalHintElement = h("p", { class: "hint", id: "goal-hint" }, goalHint(limits));
  const outcome = h(
    "select",
    { id: "outcome", name: "outcome" },
    h("option", { value: "website", selected: true }, "Website"),
    h("option", { value: "ebook" }, "Ebook"),
  );
  const error = h("p", { class: "form-error", id: "goal-error", role: "alert", hidden: true });
  const form = h(
    "form",
    { class: "start-form", "aria-labelledby": "start-title" },
    h("div", { class: "field grow" }, h("label", { for: "goal" }, "Goal"), goal, goalHintElement),
    h("div", { class: "field" }, h("label", { for: "outcome" }, "Outcome"), outcome),
    error,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "button primary" }, "Start execution")),
  );
  return { form, goal, goalHint: goalHintElement, outcome, error, limits };
}

/** The create last sent without an answer, and the Idempotency-Key it went with. */
let pendingCreate: { request: string; key: string } | undefined;

/**
 * The key a create goes with: the one its last try had when the person sends
 * the same goal again after no answer came (the connection dropped after the
 * service took it), so the retry gives back that plan rather than a second
 * one; a new key for anything else.
 */
function idempotencyKeyFor(request: { goal: string; outcome: string }): string {
  const text = JSON.stringify(request);
  if (pendingCreate?.request !== text) pendingCreate = { request: text, key: randomKey() };
  return pendingCreate.key;
}

/** 128 random bits in hex (crypto.randomUUID needs a secure context; a Console on plain http has none). */
function randomKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function goalHint(limits: GoalLimits): string {
  return `Describe what you want in plain language, ${limits.min} to ${limits.max} characters. Ctrl+Enter starts it.`;
}

async function submitStart(start: StartForm, context: ViewContext, onStarted: (plan: Plan | undefined) => Promise<void>): Promise<void> {
  showError(start.error, undefined);
  const text = start.goal.value.trim();
  const length = [...text].length;
  const { min, max } = start.limits;
  if (length < min || length > max) {
    showError(start.error, `The goal must be ${min} to ${max} characters (it has ${length}).`, start.goal);
    start.goal.focus();
    return;
  }
  setBusy(start.form, true);
  try {
    const request = { goal: text, outcome: start.outcome.value };
    const response = await executionsApi.createExecution(request, { headers: { "idempotency-key": idempotencyKeyFor(request) } });
    start.form.reset();
    keepGoalDraft("");
    pendingCreate = undefined;
    await onStarted(response.plan);
  } catch (error) {
    if (isSignedOut(error)) return context.signedOut();
    showError(start.error, errorMessage(error));
  } finally {
    // Back in the goal, started or not: ready for the next one, or to fix this one.
    setBusy(start.form, false, start.goal);
  }
}
