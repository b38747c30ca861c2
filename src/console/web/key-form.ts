import { KEY_NAME_MAX_LENGTH } from "../../api/limits.js";
import { SCOPE_SUMMARIES, SCOPES } from "../../api/scopes.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { h, setBusy, showError } from "./dom.js";
import { secretPanel, showSecret } from "./key-secret.js";
import type { ViewContext } from "./view.js";

const SCOPE_CHOICES = SCOPES.map((id) => ({ id, summary: SCOPE_SUMMARIES[id] }));

/** The "Create a key" form's controls, and the panel where the new secret appears. */
export interface KeyForm {
  form: HTMLFormElement;
  name: HTMLInputElement;
  scopeBoxes: HTMLInputElement[];
  error: HTMLElement;
  secretPanel: HTMLElement;
}

/** Creates a key and shows its secret once; `onCreated` runs after, to list the new key. */
export function newKeyForm(context: ViewContext, onCreated: () => Promise<void>): KeyForm {
  const create = keyForm();
  create.form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await submitKey(create, context, onCreated);
  });
  return create;
}

function keyForm(): KeyForm {
  const name = h("input", {
    id: "key-name",
    name: "name",
    required: true,
    dir: "auto",
    // No maxlength: it counts UTF-16 units (an emoji is two), the service counts characters; checked on submit.
    autocomplete: "off",
    placeholder: "e.g. Deploy pipeline",
    "aria-describedby": "key-name-hint",
  });
  const scopeBoxes = SCOPE_CHOICES.map((scope) =>
    h("input", {
      type: "checkbox",
      name: "scopes",
      value: scope.id,
      id: `scope-${scope.id}`,
      checked: scope.id === "read",
      "aria-describedby": `scope-${scope.id}-hint`,
    }),
  );
  const error = h("p", { class: "form-error", id: "key-error", role: "alert", hidden: true });
  const form = h(
    "form",
    { class: "key-form", "aria-labelledby": "create-key-title" },
    h(
      "div",
      { class: "field" },
      h("label", { for: "key-name" }, "Name"),
      name,
      h("p", { class: "hint", id: "key-name-hint" }, "So you can tell your keys apart later."),
    ),
    scopeFieldset(scopeBoxes),
    error,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "button primary" }, "Create key")),
  );
  return { form, name, scopeBoxes, error, secretPanel: secretPanel() };
}

function scopeFieldset(scopeBoxes: HTMLInputElement[]): HTMLFieldSetElement {
  return h(
    "fieldset",
    { class: "scopes" },
    h("legend", {}, "Scopes"),
    ...SCOPE_CHOICES.map((scope, i) =>
      h(
        "label",
        { class: "check", for: `scope-${scope.id}` },
        scopeBoxes[i],
        h("span", {}, h("span", { class: "scope-name" }, scope.id), h("span", { class: "hint", id: `scope-${scope.id}-hint` }, scope.summary)),
      ),
    ),
  );
}

async function submitKey(create: KeyForm, context: ViewContext, onCreated: () => Promise<void>): Promise<void> {
  const { form, name, scopeBoxes, error } = create;
  showError(error, undefined);
  const scopes = scopeBoxes.filter((box) => box.checked).map((box) => box.value);
  const nameLength = [...name.value.trim()].length;
  if (nameLength === 0 || nameLength > KEY_NAME_MAX_LENGTH) {
    showError(error, nameLength === 0 ? "Give the key a name." : `The name can be at most ${KEY_NAME_MAX_LENGTH} characters (it has ${nameLength}).`, name);
    name.focus();
    return;
  }
  if (scopes.length === 0) {
    showError(error, "Choose at least one scope.", ...scopeBoxes);
    scopeBoxes[0]?.focus();
    return;
  }
  setBusy(form, true);
  try {
    const created = await consoleApi.createApiKey({ name: name.value.trim(), scopes });
    form.reset();
    showSecret(create.secretPanel, created.secret, created.apiKey, () => name.focus());
    context.announce(`Key ${created.apiKey?.name ?? ""} created. Copy it now: you will not see it again.`);
    await onCreated();
  } catch (caught) {
    if (isSignedOut(caught)) return context.signedOut();
    showError(error, errorMessage(caught));
    // An answer lost on the way back may be a key made all the same: list what there is, so it can be seen and revoked.
    await onCreated().catch(() => undefined);
  } finally {
    setBusy(form, false);
  }
}
