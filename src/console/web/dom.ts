/** Attribute values: `true` sets an empty attribute, `false` / `undefined` leave it out. */
export type AttrValue = string | number | boolean | undefined;
export type Child = Node | string | false | null | undefined;

/**
 * Builds an element. Attributes go through setAttribute and text through
 * text nodes, so nothing from the server is ever parsed as HTML; listeners are
 * attached with addEventListener because inline handlers are barred by the CSP.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, AttrValue> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === false || child === null || child === undefined) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replaces an element's children. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** The fields each error slot marks invalid, so that clearing the slot clears them. */
const fieldsInError = new WeakMap<HTMLElement, readonly HTMLElement[]>();

/**
 * Shows a message in a form's error slot (role="alert", so it is read out), or hides the slot. The `fields`
 * it is about are marked invalid and described by it (the slot needs an id) while it shows; the next call
 * for the slot, with a message or without, takes that back first.
 */
export function showError(slot: HTMLElement, message: string | undefined, ...fields: HTMLElement[]): void {
  slot.textContent = message ?? "";
  slot.hidden = !message;
  for (const field of fieldsInError.get(slot) ?? []) {
    field.removeAttribute("aria-invalid");
    setDescribedBy(
      field,
      descriptions(field).filter((id) => id !== slot.id),
    );
  }
  fieldsInError.delete(slot);
  if (!message || fields.length === 0) return;
  for (const field of fields) {
    field.setAttribute("aria-invalid", "true");
    setDescribedBy(field, [...descriptions(field), slot.id]);
  }
  fieldsInError.set(slot, fields);
}

/** The ids in an element's aria-describedby, in order. */
function descriptions(element: HTMLElement): string[] {
  return (element.getAttribute("aria-describedby") ?? "").split(/\s+/).filter((id) => id !== "");
}

function setDescribedBy(element: HTMLElement, ids: readonly string[]): void {
  if (ids.length === 0) element.removeAttribute("aria-describedby");
  else element.setAttribute("aria-describedby", ids.join(" "));
}

/** Where focus was when a form went busy: disabling the focused control drops focus to the page body. */
const focusBeforeBusy = new WeakMap<HTMLFormElement, HTMLElement>();

/**
 * Disables a form's controls while a request runs, and marks it busy for
 * assistive tech. Afterwards focus goes back to `returnFocus`, or to the
 * control that had it, unless the person has moved it elsewhere meanwhile.
 */
export function setBusy(form: HTMLFormElement, busy: boolean, returnFocus?: HTMLElement): void {
  const focused = document.activeElement;
  if (busy && focused instanceof HTMLElement && form.contains(focused)) focusBeforeBusy.set(form, focused);
  form.setAttribute("aria-busy", String(busy));
  for (const element of Array.from(form.elements)) {
    if (
      element instanceof HTMLButtonElement ||
      element instanceof HTMLInputElement ||
      element instanceof HTMLTextAreaElement ||
      element instanceof HTMLSelectElement
    ) {
      element.disabled = busy;
    }
  }
  if (busy) return;
  const target = returnFocus ?? focusBeforeBusy.get(form);
  focusBeforeBusy.delete(form);
  if (target?.isConnected && focusIsLost()) target.focus();
}

/** True when nothing has focus but the page itself, as after the focused control was disabled or removed. */
export function focusIsLost(): boolean {
  return document.activeElement === null || document.activeElement === document.body;
}
