import type { ApiKey } from "../../../gen/zero/v1/console_pb.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { timeElement } from "./format.js";
import type { ConfirmDialog } from "./confirm-dialog.js";
import type { ViewContext } from "./view.js";

/** The "Your keys" table, with a Revoke button on each active key. */
export class KeyList {
  readonly title = h("h2", { id: "keys-title", tabindex: "-1" }, "Your keys");
  readonly status = h("p", { class: "muted empty", role: "status" }, "Loading keys…");
  readonly #tbody = h("tbody");
  readonly table = keysTable(this.#tbody);
  readonly #context: ViewContext;
  readonly #dialog: ConfirmDialog;
  #stopped = false;

  constructor(context: ViewContext, dialog: ConfirmDialog) {
    this.#context = context;
    this.#dialog = dialog;
  }

  async refresh(): Promise<void> {
    try {
      const response = await consoleApi.listApiKeys({});
      if (this.#stopped) return;
      this.#draw([...response.apiKeys].sort(activeThenNewest));
    } catch (error) {
      if (isSignedOut(error)) return this.#context.signedOut();
      this.status.hidden = false;
      this.status.textContent = `Could not load your keys: ${errorMessage(error)}`;
    }
  }

  stop(): void {
    this.#stopped = true;
  }

  #draw(keys: ApiKey[]): void {
    replaceChildren(this.#tbody, ...keys.map((key) => keyRow(key, (button) => this.#confirmRevoke(key, button))));
    this.table.hidden = keys.length === 0;
    this.status.hidden = keys.length > 0;
    this.status.textContent = keys.length === 0 ? "No keys yet. Create one above to call the API from a program." : "";
  }

  #confirmRevoke(key: ApiKey, opener: HTMLButtonElement): void {
    this.#dialog.open(
      {
        title: `Revoke “${key.name}”?`,
        body: `Programs using ${key.prefix}… will be refused from their next request. This cannot be undone.`,
        confirmLabel: "Revoke key",
      },
      async () => {
        await consoleApi.revokeApiKey({ id: key.id });
        this.#context.announce(`Key ${key.name} revoked. Requests with it are refused from now on.`);
        await this.refresh();
        // The row's button is gone; keep focus on the list rather than lose it to the page body.
        return this.title;
      },
      opener,
    );
  }
}

/** Active keys first, then newest first. */
function activeThenNewest(a: ApiKey, b: ApiKey): number {
  return Number(a.revokedAt !== undefined) - Number(b.revokedAt !== undefined) || Number((b.createdAt?.seconds ?? 0n) - (a.createdAt?.seconds ?? 0n));
}

function keysTable(tbody: HTMLTableSectionElement): HTMLTableElement {
  return h(
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
}

function keyRow(key: ApiKey, onRevoke: (button: HTMLButtonElement) => void): HTMLTableRowElement {
  const revoked = key.revokedAt !== undefined;
  const revoke = h("button", { type: "button", class: "button danger small", "aria-label": `Revoke key ${key.name}` }, "Revoke");
  revoke.addEventListener("click", () => onRevoke(revoke));
  return h(
    "tr",
    { class: revoked ? "revoked" : undefined, "data-key-id": key.id },
    h("td", { "data-label": "Name" }, h("span", { class: "key-name", dir: "auto" }, key.name)),
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
