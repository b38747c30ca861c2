import { errorMessage, isSignedOut } from "./api.js";
import { h, showError } from "./dom.js";
import type { ViewContext } from "./view.js";

/** What a confirmation asks: a question, what follows from it, and the word on the button that does it. */
export interface Confirmation {
  title: string;
  body: string;
  confirmLabel: string;
}

/**
 * A native modal dialog that asks before something that cannot be undone
 * (revoking a key, cancelling or deleting a plan): focus is trapped and
 * Escape cancels, without any script of ours. A failure stays in the dialog.
 */
export class ConfirmDialog {
  readonly element: HTMLDialogElement;
  readonly #title = h("h2", { id: "confirm-title" });
  readonly #body = h("p", { id: "confirm-body" });
  readonly #error = h("p", { class: "form-error", role: "alert", hidden: true });
  readonly #cancel = h("button", { type: "button", class: "button ghost" }, "Keep it");
  readonly #confirm = h("button", { type: "button", class: "button danger" });
  readonly #context: ViewContext;
  #action: (() => Promise<HTMLElement | undefined>) | undefined;
  #returnFocus: HTMLElement | undefined;

  constructor(context: ViewContext) {
    this.#context = context;
    this.element = h(
      "dialog",
      { class: "dialog", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-body" },
      this.#title,
      this.#body,
      this.#error,
      h("div", { class: "actions end" }, this.#cancel, this.#confirm),
    );
    this.#cancel.addEventListener("click", () => this.element.close());
    this.element.addEventListener("close", () => {
      if (this.#returnFocus?.isConnected) this.#returnFocus.focus();
    });
    this.#confirm.addEventListener("click", () => this.#run());
  }

  /**
   * Asks `question`; `run` does it once confirmed, and may answer where focus
   * goes next (when `opener` went with what was removed). Focus goes back to
   * `opener` if the dialog is dismissed.
   */
  open(question: Confirmation, run: () => Promise<HTMLElement | undefined>, opener: HTMLElement): void {
    this.#action = run;
    this.#returnFocus = opener;
    this.#title.textContent = question.title;
    this.#body.textContent = question.body;
    this.#confirm.textContent = question.confirmLabel;
    showError(this.#error, undefined);
    this.element.showModal();
    this.#cancel.focus();
  }

  async #run(): Promise<void> {
    if (!this.#action) return;
    this.#confirm.disabled = this.#cancel.disabled = true;
    try {
      // Focus moves once the dialog has closed: the browser puts it back on the opener as it closes.
      this.#returnFocus = (await this.#action()) ?? this.#returnFocus;
      this.element.close();
    } catch (caught) {
      if (isSignedOut(caught)) {
        this.element.close();
        return this.#context.signedOut();
      }
      showError(this.#error, errorMessage(caught));
    } finally {
      this.#confirm.disabled = this.#cancel.disabled = false;
    }
  }
}
