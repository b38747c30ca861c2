import { equals } from "@bufbuild/protobuf";
import { PlanSchema, type Plan } from "../../../gen/zero/v1/execution_pb.js";
import { newestDraft } from "../../api/plans.js";
import { saysServiceAway } from "./api.js";
import { h, showError } from "./dom.js";
import { planCard, shortGoal, type PlanActions } from "./execution-card.js";
import { statusLabel } from "./labels.js";
import { forgetHistory } from "./plan-history.js";
import type { ViewContext } from "./view.js";

/** The "Recent executions" list: one card per plan, newest first, each updated in place. */
export class ExecutionList {
  readonly title = h("h2", { id: "executions-title", tabindex: "-1" }, "Recent executions");
  readonly status = h("p", { class: "muted empty", role: "status" }, "Loading executions…");
  /** A short word about what happened to a plan whose card is gone (deleted elsewhere). */
  readonly notice = h("p", { class: "notice list-notice", role: "status", hidden: true });
  readonly element = h("ol", { class: "executions", "aria-labelledby": "executions-title" });
  /** Pages back past the newest plans, ten at a time. */
  readonly olderButton = h("button", { type: "button", class: "button small", hidden: true }, "Show older executions");
  /** True once an older page was shown: a refresh then reads on past the newest page as far as the cards shown go. */
  pagedBack = false;
  readonly #plans = new Map<string, Plan>();
  readonly #cards = new Map<string, HTMLElement>();
  readonly #context: ViewContext;
  readonly #actions: PlanActions;
  /** Why an action on a plan was not done, said again on each redraw of its card while the plan is in one of `statuses`, until the person acts on it. */
  readonly #explained = new Map<string, { message: string; statuses: ReadonlySet<string> }>();
  /** What was typed into a card's fields that its redrawn card had no place for (no feedback box while a draft is written), by plan, then field name. */
  readonly #typed = new Map<string, Map<string, string>>();
  #loaded = false;

  constructor(context: ViewContext, actions: PlanActions) {
    this.#context = context;
    // Approving, resuming or asking for a draft is the person acting on what the card said: it need not be said again.
    const acted = (plan: Plan, error: HTMLElement): void => {
      this.#explained.delete(plan.id);
      error.setAttribute("role", "alert");
    };
    this.#actions = {
      ...actions,
      approve: (plan, gateId, button, error) => {
        acted(plan, error);
        actions.approve(plan, gateId, button, error);
      },
      resume: (plan, button, error) => {
        acted(plan, error);
        actions.resume(plan, button, error);
      },
      revise: (plan, feedback, form, error) => {
        acted(plan, error);
        actions.revise(plan, feedback, form, error);
      },
    };
  }

  ids(): string[] {
    return [...this.#plans.keys()];
  }

  has(id: string): boolean {
    return this.#plans.has(id);
  }

  plans(): Plan[] {
    return [...this.#plans.values()];
  }

  /** Adds or updates one plan's card in place, keeping focus where it was. */
  upsert(plan: Plan, index?: number): void {
    const previous = this.#plans.get(plan.id);
    this.#plans.set(plan.id, plan);
    const old = this.#cards.get(plan.id);
    const list = this.element;
    // The list is read again every few seconds: a plan that did not change keeps its card, and what is typed in it.
    if (old && previous && equals(PlanSchema, previous, plan)) {
      if (index !== undefined && list.children[index] !== old) list.insertBefore(old, list.children[index] ?? null);
      return;
    }
    const focusKey = old?.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.focusKey : undefined;
    const card = planCard(plan, this.#actions);
    this.#keepTyped(plan, previous, old, card);
    this.#explainAgain(plan, card);
    this.#cards.set(plan.id, card);
    if (old) old.replaceWith(card);
    else list.insertBefore(card, list.children[index ?? 0] ?? null);
    if (index !== undefined && list.children[index] !== card) list.insertBefore(card, list.children[index] ?? null);
    if (focusKey) card.querySelector<HTMLElement>(`[data-focus-key="${focusKey}"]`)?.focus();
    if (previous && previous.status !== plan.status) this.#context.announce(`${shortGoal(plan)}: ${statusLabel(plan.status)}`);
    if (this.#loaded) this.#drawEmpty();
  }

  remove(id: string): void {
    forgetHistory(id);
    this.#explained.delete(id);
    this.#typed.delete(id);
    this.#plans.delete(id);
    this.#cards.get(id)?.remove();
    this.#cards.delete(id);
  }

  /**
   * Shows a message in a plan's card, under its actions (read out at once).
   * It goes with the next redraw of the card, unless `keepWhile` names
   * statuses: then it is shown again on every redraw while the plan is in one
   * of them, until the person approves, resumes or asks for a draft.
   */
  showCardError(id: string, message: string, keepWhile: readonly string[] = []): void {
    if (keepWhile.length > 0) this.#explained.set(id, { message, statuses: new Set(keepWhile) });
    const slot = this.#cards.get(id)?.querySelector<HTMLElement>("[data-plan-error]");
    if (slot) showError(slot, message);
  }

  /**
   * The service answered a read: a card's word that it could not be reached
   * (an action that failed meanwhile) no longer holds, and goes. What else a
   * card says (a refusal, why an action was not done) stays.
   */
  serviceAnswered(): void {
    for (const card of this.#cards.values()) {
      const slot = card.querySelector<HTMLElement>("[data-plan-error]");
      if (slot && saysServiceAway(slot.textContent ?? "")) showError(slot, undefined);
    }
  }

  /** The feedback typed at the gate was sent for a new draft: it is not put back in the next gate's box. */
  feedbackSent(id: string): void {
    this.#typed.get(id)?.delete("feedback");
    const field = this.#cards.get(id)?.querySelector<HTMLTextAreaElement>('textarea[name="feedback"]');
    if (field) field.value = "";
  }

  /** Says what became of a plan whose card was removed. */
  showNotice(message: string): void {
    this.notice.textContent = message;
    this.notice.hidden = false;
  }

  /** A plan's title (focusable, and kept focused across redraws): where focus goes when the control that had it went with a redraw. */
  cardHeading(id: string): HTMLElement | undefined {
    return this.#cards.get(id)?.querySelector<HTMLElement>("h3") ?? undefined;
  }

  /** The oldest plan shown, where the next older page starts. */
  oldestId(): string | undefined {
    return this.element.lastElementChild?.getAttribute("data-plan-id") ?? undefined;
  }

  /** Adds an older page below the cards; the button stays while a full page came back. */
  appendOlder(plans: Plan[], full: boolean): void {
    this.pagedBack = true;
    for (const plan of plans) if (!this.#plans.has(plan.id)) this.upsert(plan, this.element.children.length);
    this.olderButton.hidden = !full;
  }

  /** The whole list has arrived once: from now on an empty list says so. */
  loaded(): void {
    this.#loaded = true;
    this.#drawEmpty();
  }

  /** Shows why the list could not load, in place of it. */
  showProblem(message: string): void {
    this.status.hidden = false;
    this.status.textContent = message;
  }

  /**
   * Text typed into a card's fields (feedback at the gate) survives the card
   * being redrawn: copied into the new card, or, when it has no such field
   * (the plan left the gate for a while), kept until a card with it returns.
   * Feedback that a new revision carries was sent, though its answer may
   * have been lost on the way (then `feedbackSent` never ran): it goes.
   */
  #keepTyped(plan: Plan, previous: Plan | undefined, old: HTMLElement | undefined, card: HTMLElement): void {
    const id = plan.id;
    const typed = this.#typed.get(id) ?? new Map<string, string>();
    for (const field of Array.from(old?.querySelectorAll("textarea") ?? [])) {
      if (field.value !== "") typed.set(field.name, field.value);
      else typed.delete(field.name);
    }
    const revisedSince = previous && newestDraft(plan) > newestDraft(previous);
    if (revisedSince && typed.get("feedback")?.trim() === plan.revisions.at(-1)?.feedback) typed.delete("feedback");
    for (const [name, value] of typed) {
      const twin = card.querySelector<HTMLTextAreaElement>(`textarea[name="${name}"]`);
      if (!twin) continue;
      twin.value = value;
      typed.delete(name);
    }
    if (typed.size > 0) this.#typed.set(id, typed);
    else this.#typed.delete(id);
  }

  /** A message kept for a plan (`showCardError` with `keepWhile`), on its redrawn card; already read out once, so not as an alert again. */
  #explainAgain(plan: Plan, card: HTMLElement): void {
    const said = this.#explained.get(plan.id);
    if (!said) return;
    if (!said.statuses.has(plan.status)) {
      this.#explained.delete(plan.id);
      return;
    }
    const slot = card.querySelector<HTMLElement>("[data-plan-error]");
    if (!slot) return;
    slot.setAttribute("role", "status");
    showError(slot, said.message);
  }

  #drawEmpty(): void {
    this.status.hidden = this.#plans.size > 0;
    this.status.textContent = this.#plans.size > 0 ? "" : "No executions yet. Describe a goal above to start one.";
  }
}
