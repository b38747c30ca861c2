import type { ApiKey } from "../../../gen/zero/v1/console_pb.js";
import { errorMessage, isSignedOut } from "./api.js";
import { h, showError } from "./dom.js";
import type { ViewContext } from "./view.js";

/** A native modal dialog: focus is trapped and Escape cancels, without any script of ours. */
export class RevokeDialog {
  readonly element: HTMLDialogElement;
  readonly #title = h("h2", { id: "revoke-title" });
  readonly #body = h("p", { id: "revoke-body" });
  readonly #error = h("p", { class: "form-error", role: "alert", hidden: true });
  readonly #cancel = h("button", { type: "button", class: "button ghost" }, "Cancel");
  readonly #confirm = h("button", { type: "button", class: "button danger" }, "Revoke key");
  readonly #context: ViewContext;
  #action: (() => Promise<void>) | undefined;
  #returnFocus: HTMLElement | undefined;

  constructor(context: ViewContext) {
    this.#context = context;
    this.element = h(
      "dialog",
      { class: "dialog", "aria-labelledby": "revoke-title", "aria-describedby": "revoke-body" },
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

  /** Asks to revoke `key`; `run` revokes it once confirmed. Focus goes back to `opener` if the dialog is cancelled. */
  open(key: ApiKey, run: () => Promise<void>, opener: HTMLElement): void {
    this.#action = run;
    this.#returnFocus = opener;
    this.#title.textContent = `Revoke “${key.name}”?`;
    this.#body.textContent = `Programs using ${key.prefix}… will be refused from their next request. This cannot be undone.`;
    showError(this.#error, undefined);
    this.element.showModal();
    this.#cancel.focus();
  }

  async #run(): Promise<void> {
    if (!this.#action) return;
    this.#confirm.disabled = this.#cancel.disabled = true;
    try {
      await this.#action();
      this.#returnFocus = undefined;
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
