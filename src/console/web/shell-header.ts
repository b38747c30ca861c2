import type { Account } from "../../../gen/zero/v1/console_pb.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { h, showError } from "./dom.js";
import { BASE, PAGES, type Page } from "./router.js";
import { forgetDrafts } from "./drafts.js";

/** What the header's Sign out button needs from the shell. */
export interface ShellActions {
  /** The session is over: forget the account and show sign-in, saying `message`. */
  endSession(message: string): void;
}

/**
 * The bar's height, in `--topbar-height` on the root element, for the
 * stylesheet's `scroll-padding-top`: the bar is sticky, and a control the
 * keyboard focuses (or a link jumps to) must scroll into view below it, not
 * under it. Measured, because the bar grows: two rows on a phone, a sign-out
 * error under it, larger text.
 */
const barHeight =
  typeof ResizeObserver === "function"
    ? new ResizeObserver((entries) => {
        const bar = entries.at(-1)?.target;
        if (bar instanceof HTMLElement) document.documentElement.style.setProperty("--topbar-height", `${bar.offsetHeight}px`);
      })
    : undefined;

/** The top bar of every signed-in page: brand, page tabs, the account and Sign out. */
export function shellHeader(signedIn: Account, current: Page, actions: ShellActions): HTMLElement {
  const header = topBar(signedIn, current, actions);
  barHeight?.disconnect();
  barHeight?.observe(header);
  return header;
}

function topBar(signedIn: Account, current: Page, actions: ShellActions): HTMLElement {
  const error = h("p", { class: "form-error topbar-error", role: "alert", hidden: true });
  const nav = h(
    "nav",
    { class: "tabs", "aria-label": "Console" },
    ...PAGES.map((p) => h("a", { href: p.path, "data-nav": true, "aria-current": p === current ? "page" : undefined }, p.label)),
  );
  return h(
    "header",
    { class: "topbar" },
    h(
      "div",
      { class: "topbar-inner" },
      h(
        "a",
        { class: "brand", href: `${BASE}/`, "data-nav": true },
        h("img", { src: `${BASE}/assets/icon.svg`, alt: "", width: 28, height: 28 }),
        h("span", {}, "project-zero"),
        h("span", { class: "brand-sub" }, "Console"),
      ),
      nav,
      h("div", { class: "account" }, h("span", { class: "account-email", title: signedIn.email }, signedIn.email), signOutButton(signedIn, actions, error)),
    ),
    error,
  );
}

/** Sign out; a failure (the service unreachable) is shown in `error`, under the bar, and the person stays signed in. */
function signOutButton(signedIn: Account, actions: ShellActions, error: HTMLElement): HTMLButtonElement {
  const signOut = h("button", { type: "button", class: "button ghost small", title: `Signed in as ${signedIn.email}` }, "Sign out");
  signOut.addEventListener("click", async () => {
    signOut.disabled = true;
    showError(error, undefined);
    try {
      await consoleApi.signOut({});
    } catch (caught) {
      // A session that already ended is signed out all the same.
      if (!isSignedOut(caught)) {
        signOut.disabled = false;
        showError(error, `Could not sign out. ${errorMessage(caught)}`);
        signOut.focus();
        return;
      }
    }
    forgetDrafts();
    actions.endSession("You have signed out.");
  });
  return signOut;
}
