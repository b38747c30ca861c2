import type { Account } from "../../../gen/zero/v1/console_pb.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { h } from "./dom.js";
import { BASE, PAGES, type Page } from "./router.js";

/** What the header's Sign out button needs from the shell. */
export interface ShellActions {
  announce(message: string): void;
  /** The session is over: forget the account and show sign-in, saying `message`. */
  endSession(message: string): void;
}

/** The top bar of every signed-in page: brand, page tabs, the account and Sign out. */
export function shellHeader(signedIn: Account, current: Page, actions: ShellActions): HTMLElement {
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
      h("div", { class: "account" }, h("span", { class: "account-email", title: signedIn.email }, signedIn.email), signOutButton(signedIn, actions)),
    ),
  );
}

function signOutButton(signedIn: Account, actions: ShellActions): HTMLButtonElement {
  const signOut = h("button", { type: "button", class: "button ghost small", title: `Signed in as ${signedIn.email}` }, "Sign out");
  signOut.addEventListener("click", async () => {
    signOut.disabled = true;
    try {
      await consoleApi.signOut({});
    } catch (error) {
      // A session that already ended is signed out all the same.
      if (!isSignedOut(error)) {
        signOut.disabled = false;
        actions.announce(errorMessage(error));
        return;
      }
    }
    actions.endSession("Signed out");
  });
  return signOut;
}
