import { equals } from "@bufbuild/protobuf";
import { PlanSchema, type Plan } from "../../../gen/zero/v1/execution_pb.js";
import { h, showError } from "./dom.js";
import { planCard, shortGoal, type PlanActions } from "./execution-card.js";
import { statusLabel } from "./labels.js";
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
  /** True once an older page was shown: a refresh of the newest then leaves the cards below them alone. */
  pagedBack = false;
  readonly #plans = new Map<string, Plan>();
  readonly #cards = new Map<string, HTMLElement>();
  readonly #context: ViewContext;
  readonly #actions: PlanActions;
  #loaded = false;

  constructor(context: ViewContext, actions: PlanActions) {
    this.#context = context;
    this.#actions = actions;
  }

  ids(): string[] {
    return [...this.#plans.keys()];
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
    keepTyped(old, card);
    this.#cards.set(plan.id, card);
    if (old) old.replaceWith(card);
    else list.insertBefore(card, list.children[index ?? 0] ?? null);
    if (index !== undefined && list.children[index] !== card) list.insertBefore(card, list.children[index] ?? null);
    if (focusKey) card.querySelector<HTMLElement>(`[data-focus-key="${focusKey}"]`)?.focus();
    if (previous && previous.status !== plan.status) this.#context.announce(`${shortGoal(plan)}: ${statusLabel(plan.status)}`);
    if (this.#loaded) this.#drawEmpty();
  }

  remove(id: string): void {
    this.#plans.delete(id);
    this.#cards.get(id)?.remove();
    this.#cards.delete(id);
  }

  /** Shows a message in a plan's card, under its actions (until the card is next redrawn). */
  showCardError(id: string, message: string): void {
    const slot = this.#cards.get(id)?.querySelector<HTMLElement>("[data-plan-error]");
    if (slot) showError(slot, message);
  }

  /** Says what became of a plan whose card was removed. */
  showNotice(message: string): void {
    this.notice.textContent = message;
    this.notice.hidden = false;
  }

  /** A plan's title, made focusable: where focus goes when the control that had it went with a redraw. */
  cardHeading(id: string): HTMLElement | undefined {
    const heading = this.#cards.get(id)?.querySelector<HTMLElement>("h3") ?? undefined;
    heading?.setAttribute("tabindex", "-1");
    return heading;
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

  #drawEmpty(): void {
    this.status.hidden = this.#plans.size > 0;
    this.status.textContent = this.#plans.size > 0 ? "" : "No executions yet. Describe a goal above to start one.";
  }
}

/** Text typed into a card's fields (feedback at the gate) survives the card being redrawn. */
function keepTyped(old: HTMLElement | undefined, card: HTMLElement): void {
  for (const field of Array.from(old?.querySelectorAll("textarea") ?? [])) {
    const twin = card.querySelector<HTMLTextAreaElement>(`textarea[name="${field.name}"]`);
    if (twin && field.value !== "") twin.value = field.value;
  }
}
