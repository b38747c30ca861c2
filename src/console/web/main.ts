import type { Account } from "../../../gen/zero/v1/console_pb.js";
import { consoleApi, errorMessage, isSignedOut } from "./api.js";
import { renderAuth } from "./auth-view.js";
import { h, replaceChildren } from "./dom.js";
import { refreshRelativeTimes } from "./format.js";
import { AUTH_PATHS, BASE, currentPath, followInAppLinks, PAGES, setPath } from "./router.js";
import { shellHeader } from "./shell-header.js";
import type { ViewContext } from "./view.js";

const root = document.getElementById("app") ?? document.body.appendChild(h("div", { id: "app" }));
const announcer = h("div", { class: "sr-only", "aria-live": "polite", "aria-atomic": "true" });
document.body.append(announcer);

let account: Account | undefined;
let leaveView: (() => void) | undefined;
let firstRender = true;
/** The page asked for before signing in, to return to afterwards. */
let afterSignIn: string | undefined;
/** Why the sign-in screen is shown, said on it once (e.g. the session ended elsewhere). */
let signInNotice: string | undefined;

function announce(message: string): void {
  // Clearing first makes a repeated message be read again.
  announcer.textContent = "";
  window.setTimeout(() => (announcer.textContent = message), 30);
}

function navigate(path: string, options: { replace?: boolean } = {}): void {
  setPath(path, options.replace);
  render();
}

/** Back to sign-in, saying `message` there; `comeBack`: the session ended by itself, so signing in returns to this page. */
function endSession(message: string, comeBack = false): void {
  const here = currentPath();
  if (comeBack && PAGES.some((p) => p.path === here)) afterSignIn = here;
  account = undefined;
  signInNotice = message;
  announce(message);
  navigate(`${BASE}/sign-in`, { replace: true });
}

function render(): void {
  leaveView?.();
  leaveView = undefined;
  const path = currentPath();
  if (account) renderPage(path, account);
  else renderSignIn(path);
}

function renderSignIn(path: string): void {
  const mode = AUTH_PATHS[path] ?? "sign-in";
  if (!(path in AUTH_PATHS)) {
    afterSignIn = PAGES.some((p) => p.path === path) ? path : afterSignIn;
    history.replaceState(null, "", `${BASE}/sign-in`);
  }
  document.title = `${mode === "sign-in" ? "Sign in" : "Create account"} · project-zero Console`;
  const notice = signInNotice;
  signInNotice = undefined;
  renderAuth(root, mode, notice, {
    onSignedIn(signedIn) {
      account = signedIn;
      announce(`Signed in as ${signedIn.email}`);
      const next = afterSignIn ?? PAGES[0]!.path;
      afterSignIn = undefined;
      navigate(next, { replace: true });
    },
  });
  focusHeading();
}

function renderPage(path: string, signedIn: Account): void {
  const page = PAGES.find((p) => p.path === path);
  if (!page) {
    navigate(PAGES[0]!.path, { replace: true });
    return;
  }
  document.title = `${page.label} · project-zero Console`;
  const main = h("main", { id: "main", class: "page", tabindex: "-1" });
  replaceChildren(root, shellHeader(signedIn, page, { endSession }), main);
  const context: ViewContext = { account: signedIn, announce, signedOut: () => endSession("Your session has ended. Sign in again.", true) };
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

async function boot(): Promise<void> {
  try {
    account = (await consoleApi.getSession({})).account;
  } catch (error) {
    if (!isSignedOut(error)) {
      replaceChildren(
        root,
        h(
          "main",
          { id: "main", class: "boot", tabindex: "-1" },
          h("p", { class: "form-error", role: "alert" }, `The Console could not start: ${errorMessage(error)}`),
        ),
      );
      return;
    }
    account = undefined;
  }
  render();
}

followInAppLinks(navigate);
window.addEventListener("popstate", render);
window.setInterval(() => refreshRelativeTimes(document), 30_000);
void boot();
