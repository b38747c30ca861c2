import { h } from "./dom.js";
import { newKeyForm } from "./key-form.js";
import { KeyList } from "./key-list.js";
import { changePasswordSection } from "./password-form.js";
import { ConfirmDialog } from "./confirm-dialog.js";
import { pageHeading, type ViewContext } from "./view.js";

/** API keys: create one (secret shown once), list them, revoke; and the account's password. */
export function renderKeys(main: HTMLElement, context: ViewContext): () => void {
  const dialog = new ConfirmDialog(context);
  const list = new KeyList(context, dialog);
  const create = newKeyForm(context, () => list.refresh());
  main.append(
    pageHeading(
      "API keys",
      h(
        "span",
        {},
        "Programs call project-zero with an API key, sent in the ",
        h("code", {}, "Authorization: Bearer zk_…"),
        " header. A key can do only what its scopes allow, and you can revoke it at any time.",
      ),
    ),
    h("section", { class: "card", "aria-labelledby": "create-key-title" }, h("h2", { id: "create-key-title" }, "Create a key"), create.form),
    create.secretPanel,
    h("section", { class: "card", "aria-labelledby": "keys-title" }, list.title, list.status, h("div", { class: "table-wrap" }, list.table)),
    changePasswordSection(context),
    dialog.element,
  );
  void list.refresh();

  return () => {
    list.stop();
    dialog.element.close();
  };
}
