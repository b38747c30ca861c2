import type { Account } from "../../../gen/zero/v1/console_pb.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { renderAuth, type AuthMode } from "./auth-view.js";
import { h, replaceChildren } from "./dom.js";
import { renderExecutions } from "./executions-view.js";
import { refreshRelativeTimes } from "./format.js";
import { renderKeys } from "./keys-view.js";
import type { View, ViewContext } from "./view.js";
import { withoutTrailingSlashes } from "../../strings.js";

const BASE = "/console";

interface Page {
  path: string;
  label: string;
  view: View;
}

const PAGES: readonly Page[] = [
  { path: `${BASE}/executions`, label: "Executions", view: renderExecutions },
  { path: `${BASE}/keys`, label: "API keys", view: renderKeys },
];
const AUTH_PATHS: Record<string, AuthMode> = { [`${BASE}/sign-in`]: "sign-in", [`${BASE}/sign-up`]: "sign-up" };

const root = document.getElementById("app") ?? document.body.appendChild(h("div", { id: "app" }));
const announcer = h("div", { class: "sr-only", "aria-live": "polite", "aria-atomic": "true" });
document.body.append(announcer);

let account: Account | undefined;
let leaveView: (() => void) | undefined;
let firstRender = true;
/** The page asked for before signing in, to return to afterwards. */
let afterSignIn: string | undefined;

function announce(message: string): void {
  // Clearing first makes a repeated message be read again.
  announcer.textContent = "";
  window.setTimeout(() => (announcer.textContent = message), 30);
}

function currentPath(): string {
  const path = withoutTrailingSlashes(window.location.pathname);
  return path === "" ? "/" : path;
}

function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (path !== window.location.pathname) {
    if (options.replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
  }
  render();
}

function render(): void {
  leaveView?.();
  leaveView = undefined;
  const path = currentPath();
  if (!account) {
    const mode = AUTH_PATHS[path] ?? "sign-in";
    if (!(path in AUTH_PATHS)) {
      afterSignIn = PAGES.some((p) => p.path === path) ? path : afterSignIn;
      history.replaceState(null, "", `${BASE}/sign-in`);
    }
    document.title = `${mode === "sign-in" ? "Sign in" : "Create account"} · project-zero Console`;
    renderAuth(root, mode, {
      onSignedIn(signedIn) {
        account = signedIn;
        announce(`Signed in as ${signedIn.email}`);
        const next = afterSignIn ?? PAGES[0]!.path;
        afterSignIn = undefined;
        navigate(next, { replace: true });
      },
    });
    focusHeading();
    return;
  }
  const page = PAGES.find((p) => p.path === path);
  if (!page) {
    navigate(PAGES[0]!.path, { replace: true });
    return;
  }
  document.title = `${page.label} · project-zero Console`;
  const main = h("main", { id: "main", class: "page", tabindex: "-1" });
  replaceChildren(root, shellHeader(account, page), main);
  const context: ViewContext = {
    account,
    announce,
    signedOut: () => {
      account = undefined;
      announce("Your session has ended. Sign in again.");
      navigate(`${BASE}/sign-in`, { replace: true });
    },
  };
  leaveView = page.view(main, context) ?? undefined;
  focusHeading();
}

/** After a route change, focus moves to the new page's heading so screen readers start there. */
function focusHeading(): void {
  if (firstRender) {
    firstRender = false;
    return;
  }
  root.querySelector<HTMLElement>("h1")?.focus();
}

function shellHeader(signedIn: Account, current: Page): HTMLElement {
  const signOut = h("button", { type: "button", class: "button ghost small", title: `Signed in as ${signedIn.email}` }, "Sign out");
  signOut.addEventListener("click", async () => {
    signOut.disabled = true;
    try {
      await consoleApi.signOut({});
    } catch (error) {
      // A session that already ended is signed out all the same.
      if (!isSignedOut(error)) {
        signOut.disabled = false;
        announce(errorMessage(error));
        return;
      }
    }
    account = undefined;
    announce("Signed out");
    navigate(`${BASE}/sign-in`, { replace: true });
  });
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
      h("a", { class: "brand", href: `${BASE}/`, "data-nav": true }, h("img", { src: `${BASE}/assets/icon.svg`, alt: "", width: 28, height: 28 }), h("span", {}, "project-zero"), h("span", { class: "brand-sub" }, "Console")),
      nav,
      h("div", { class: "account" }, h("span", { class: "account-email", title: signedIn.email }, signedIn.email), signOut),
    ),
  );
}

// In-app links change the view without a reload; modified clicks keep their usual meaning.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target instanceof Element ? event.target.closest<HTMLAnchorElement>("a[data-nav]") : null;
  if (!link) return;
  event.preventDefault();
  navigate(withoutTrailingSlashes(new URL(link.href).pathname) || "/");
});
window.addEventListener("popstate", render);
window.setInterval(() => refreshRelativeTimes(document), 30_000);

async function boot(): Promise<void> {
  try {
    account = (await consoleApi.getSession({})).account;
  } catch (error) {
    if (!isSignedOut(error)) {
      replaceChildren(
        root,
        h("main", { id: "main", class: "boot", tabindex: "-1" }, h("p", { class: "form-error", role: "alert" }, `The Console could not start: ${errorMessage(error)}`)),
      );
      return;
    }
    account = undefined;
  }
  render();
}

void boot();
