import type { Account } from "../../../gen/zero/v1/console_pb.js";

/** What a signed-in view gets from the shell. */
export interface ViewContext {
  account: Account;
  /** Reads a short message out through the page's polite live region. */
  announce(message: string): void;
  /** The session ended (signed out elsewhere, expired): back to sign-in. */
  signedOut(): void;
}

/** Renders into `main`; returns what to stop (timers, streams) when the view is left. */
export type View = (main: HTMLElement, context: ViewContext) => (() => void) | undefined;

/** The page heading, focusable so route changes can move focus to it. */
export function pageHeading(title: string, lede?: string | Node): HTMLElement {
  const head = document.createElement("div");
  head.className = "page-head";
  const h1 = document.createElement("h1");
  h1.tabIndex = -1;
  h1.textContent = title;
  head.append(h1);
  if (lede) {
    const p = document.createElement("p");
    p.className = "lede";
    p.append(lede);
    head.append(p);
  }
  return head;
}
