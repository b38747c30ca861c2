import { SCOPE_SUMMARIES, SCOPES } from "../../api/scopes.js";
import type { ApiKey } from "../../../gen/zero/v1/console_pb.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { h, replaceChildren, setBusy, showError } from "./dom.js";
import { timeElement } from "./format.js";
import { pageHeading, type ViewContext } from "./view.js";

const SCOPE_CHOICES = SCOPES.map((id) => ({ id, summary: SCOPE_SUMMARIES[id] }));

/** API keys: create one (secret shown once), list them, revoke. */
export function renderKeys(main: HTMLElement, context: ViewContext): () => void {
  let keys: ApiKey[] = [];
  let stopped = false;

  // --- create ---
  const name = h("input", { id: "key-name", name: "name", required: true, maxlength: 100, autocomplete: "off", placeholder: "e.g. Deploy pipeline", "aria-describedby": "key-name-hint" });
  const scopeBoxes = SCOPE_CHOICES.map((scope) =>
    h("input", { type: "checkbox", name: "scopes", value: scope.id, id: `scope-${scope.id}`, checked: scope.id === "read", "aria-describedby": `scope-${scope.id}-hint` }),
  );
  const createError = h("p", { class: "form-error", role: "alert", hidden: true });
  const createButton = h("button", { type: "submit", class: "button primary" }, "Create key");
  const createForm = h(
    "form",
    { class: "key-form", "aria-labelledby": "create-key-title" },
    h(
      "div",
      { class: "field" },
      h("label", { for: "key-name" }, "Name"),
      name,
      h("p", { class: "hint", id: "key-name-hint" }, "So you can tell your keys apart later."),
    ),
    h(
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
    ),
    createError,
    h("div", { class: "actions" }, createButton),
  );

  // --- the new secret, shown once ---
  const secretPanel = h("section", { class: "card secret-card", "aria-labelledby": "secret-title", hidden: true });

  createForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(createError, undefined);
    const scopes = scopeBoxes.filter((box) => box.checked).map((box) => box.value);
    if (!name.value.trim()) {
      showError(createError, "Give the key a name.");
      name.focus();
      return;
    }
    if (scopes.length === 0) {
      showError(createError, "Choose at least one scope.");
      scopeBoxes[0]?.focus();
      return;
    }
    setBusy(createForm, true);
    try {
      const created = await consoleApi.createApiKey({ name: name.value.trim(), scopes });
      createForm.reset();
      showSecret(created.secret, created.apiKey);
      context.announce(`Key ${created.apiKey?.name ?? ""} created. Copy it now: you will not see it again.`);
      await refresh();
    } catch (error) {
      if (isSignedOut(error)) return context.signedOut();
      showError(createError, errorMessage(error));
    } finally {
      setBusy(createForm, false);
    }
  });

  function showSecret(secret: string, key: ApiKey | undefined): void {
    const field = h("input", { id: "new-secret", class: "secret", readonly: true, value: secret, spellcheck: "false", autocomplete: "off", "aria-describedby": "secret-warning" });
    const copyButton = h("button", { type: "button", class: "button" }, "Copy");
    const copyStatus = h("span", { class: "copy-status", role: "status" });
    copyButton.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(secret);
      } catch {
        // The async clipboard needs a secure context; the older command still works on plain http.
        if (!document.execCommand("copy")) {
          copyStatus.textContent = "Select the key and copy it by hand.";
          return;
        }
      }
      copyButton.textContent = "Copied";
      copyStatus.textContent = "Copied to the clipboard.";
    });
    const done = h("button", { type: "button", class: "button ghost" }, "Done, I have saved it");
    done.addEventListener("click", () => {
      // Drop the secret from the page as soon as the person is done with it.
      replaceChildren(secretPanel);
      secretPanel.hidden = true;
      name.focus();
    });
    replaceChildren(
      secretPanel,
      h("h2", { id: "secret-title", tabindex: "-1" }, `Copy your new key${key ? ` “${key.name}”` : ""}`),
      h(
        "p",
        { id: "secret-warning", class: "warning" },
        h("strong", {}, "You will not see it again."),
        " Store it somewhere safe, such as a secret manager. If you lose it, revoke it and create another.",
      ),
      h("div", { class: "secret-row" }, h("label", { for: "new-secret", class: "sr-only" }, "New API key"), field, copyButton),
      h("div", { class: "actions" }, done, copyStatus),
    );
    secretPanel.hidden = false;
    secretPanel.querySelector<HTMLElement>("h2")?.focus();
    field.select();
  }

  // --- list ---
  const tbody = h("tbody");
  const listStatus = h("p", { class: "muted empty", role: "status" }, "Loading keys…");
  const table = h(
    "table",
    { class: "keys-table", hidden: true },
    h("caption", { class: "sr-only" }, "Your API keys"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Name", "Key", "Scopes", "Created", "Last used", "Status"].map((label) => h("th", { scope: "col" }, label)),
        h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")),
      ),
    ),
    tbody,
  );

  const keysTitle = h("h2", { id: "keys-title", tabindex: "-1" }, "Your keys");
  const dialog = revokeDialog();

  function row(key: ApiKey): HTMLTableRowElement {
    const revoked = key.revokedAt !== undefined;
    const revoke = h("button", { type: "button", class: "button danger small", "aria-label": `Revoke key ${key.name}` }, "Revoke");
    revoke.addEventListener("click", () => confirmRevoke(key, revoke));
    return h(
      "tr",
      { class: revoked ? "revoked" : undefined, "data-key-id": key.id },
      h("td", { "data-label": "Name" }, h("span", { class: "key-name" }, key.name)),
      h("td", { "data-label": "Key" }, h("code", { class: "prefix" }, `${key.prefix}…`)),
      h("td", { "data-label": "Scopes" }, h("span", { class: "chips" }, ...key.scopes.map((s) => h("span", { class: "chip" }, s)))),
      h("td", { "data-label": "Created" }, timeElement(key.createdAt)),
      h("td", { "data-label": "Last used" }, timeElement(key.lastUsedAt, "Never")),
      h(
        "td",
        { "data-label": "Status" },
        revoked ? h("span", { class: "badge badge-muted" }, "Revoked ", timeElement(key.revokedAt)) : h("span", { class: "badge badge-ok" }, "Active"),
      ),
      h("td", { class: "row-actions" }, revoked ? null : revoke),
    );
  }

  function draw(): void {
    replaceChildren(tbody, ...keys.map(row));
    table.hidden = keys.length === 0;
    listStatus.hidden = keys.length > 0;
    listStatus.textContent = keys.length === 0 ? "No keys yet. Create one above to call the API from a program." : "";
  }

  async function refresh(): Promise<void> {
    try {
      const response = await consoleApi.listApiKeys({});
      if (stopped) return;
      // Active keys first, then newest first.
      keys = [...response.apiKeys].sort(
        (a, b) => Number(a.revokedAt !== undefined) - Number(b.revokedAt !== undefined) || Number((b.createdAt?.seconds ?? 0n) - (a.createdAt?.seconds ?? 0n)),
      );
      draw();
    } catch (error) {
      if (isSignedOut(error)) return context.signedOut();
      listStatus.hidden = false;
      listStatus.textContent = `Could not load your keys: ${errorMessage(error)}`;
    }
  }

  function confirmRevoke(key: ApiKey, opener: HTMLButtonElement): void {
    dialog.open(key, async () => {
      await consoleApi.revokeApiKey({ id: key.id });
      context.announce(`Key ${key.name} revoked. Requests with it are refused from now on.`);
      await refresh();
      // The row's button is gone; keep focus on the list rather than lose it to the page body.
      keysTitle.focus();
    }, opener);
  }

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
    h("section", { class: "card", "aria-labelledby": "create-key-title" }, h("h2", { id: "create-key-title" }, "Create a key"), createForm),
    secretPanel,
    h("section", { class: "card", "aria-labelledby": "keys-title" }, keysTitle, listStatus, h("div", { class: "table-wrap" }, table)),
    dialog.element,
  );
  void refresh();

  return () => {
    stopped = true;
    dialog.element.close();
  };

  /** A native modal dialog: focus is trapped and Escape cancels, without any script of ours. */
  function revokeDialog() {
    const title = h("h2", { id: "revoke-title" });
    const body = h("p", { id: "revoke-body" });
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const cancel = h("button", { type: "button", class: "button ghost" }, "Cancel");
    const confirm = h("button", { type: "button", class: "button danger" }, "Revoke key");
    const element = h(
      "dialog",
      { class: "dialog", "aria-labelledby": "revoke-title", "aria-describedby": "revoke-body" },
      title,
      body,
      error,
      h("div", { class: "actions end" }, cancel, confirm),
    );
    let action: (() => Promise<void>) | undefined;
    let returnFocus: HTMLElement | undefined;
    cancel.addEventListener("click", () => element.close());
    element.addEventListener("close", () => {
      if (returnFocus?.isConnected) returnFocus.focus();
    });
    confirm.addEventListener("click", async () => {
      if (!action) return;
      confirm.disabled = cancel.disabled = true;
      try {
        await action();
        returnFocus = undefined;
        element.close();
      } catch (caught) {
        if (isSignedOut(caught)) {
          element.close();
          return context.signedOut();
        }
        showError(error, errorMessage(caught));
      } finally {
        confirm.disabled = cancel.disabled = false;
      }
    });
    return {
      element,
      open(key: ApiKey, run: () => Promise<void>, opener: HTMLElement) {
        action = run;
        returnFocus = opener;
        title.textContent = `Revoke “${key.name}”?`;
        body.textContent = `Programs using ${key.prefix}… will be refused from their next request. This cannot be undone.`;
        showError(error, undefined);
        element.showModal();
        cancel.focus();
      },
    };
  }
}
