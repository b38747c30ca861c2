import type { ApiKey } from "../../../gen/zero/v1/console_pb.js";
import { h, replaceChildren } from "./dom.js";

/** Where a new key's secret is shown, once; hidden until there is one. */
export function secretPanel(): HTMLElement {
  return h("section", { class: "card secret-card", "aria-labelledby": "secret-title", hidden: true });
}

/** Shows `secret` in `panel` until the person says they have saved it; `onDone` runs once it is gone. */
export function showSecret(panel: HTMLElement, secret: string, key: ApiKey | undefined, onDone: () => void): void {
  const field = h("input", {
    id: "new-secret",
    class: "secret",
    readonly: true,
    value: secret,
    spellcheck: "false",
    autocomplete: "off",
    "aria-describedby": "secret-warning",
  });
  const copy = copyControls(field, secret);
  const done = h("button", { type: "button", class: "button ghost" }, "Done, I have saved it");
  done.addEventListener("click", () => {
    // Drop the secret from the page as soon as the person is done with it.
    replaceChildren(panel);
    panel.hidden = true;
    onDone();
  });
  replaceChildren(
    panel,
    h("h2", { id: "secret-title", tabindex: "-1" }, `Copy your new key${key ? ` “${key.name}”` : ""}`),
    h(
      "p",
      { id: "secret-warning", class: "warning" },
      h("strong", {}, "You will not see it again."),
      " Store it somewhere safe, such as a secret manager. If you lose it, revoke it and create another.",
    ),
    h("div", { class: "secret-row" }, h("label", { for: "new-secret", class: "sr-only" }, "New API key"), field, copy.button),
    h("div", { class: "actions" }, done, copy.status),
  );
  panel.hidden = false;
  panel.querySelector<HTMLElement>("h2")?.focus();
  field.select();
}

/** The Copy button, and the status line that says whether it worked. */
function copyControls(field: HTMLInputElement, secret: string): { button: HTMLButtonElement; status: HTMLElement } {
  const button = h("button", { type: "button", class: "button" }, "Copy");
  const status = h("span", { class: "copy-status", role: "status" });
  button.addEventListener("click", async () => {
    field.select();
    try {
      await navigator.clipboard.writeText(secret);
    } catch {
      // The async clipboard needs a secure context; the older command still works on plain http.
      if (!document.execCommand("copy")) {
        status.textContent = "Select the key and copy it by hand.";
        return;
      }
    }
    button.textContent = "Copied";
    status.textContent = "Copied to the clipboard.";
  });
  return { button, status };
}
