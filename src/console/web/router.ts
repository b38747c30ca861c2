import type { AuthMode } from "./auth-view.js";
import { renderExecutions } from "./executions-view.js";
import { renderKeys } from "./keys-view.js";
import type { View } from "./view.js";
import { withoutTrailingSlashes } from "../../strings.js";

export const BASE = "/console";

export interface Page {
  path: string;
  label: string;
  view: View;
}

export const PAGES: readonly Page[] = [
  { path: `${BASE}/executions`, label: "Executions", view: renderExecutions },
  { path: `${BASE}/keys`, label: "API keys", view: renderKeys },
];
export const AUTH_PATHS: Record<string, AuthMode> = { [`${BASE}/sign-in`]: "sign-in", [`${BASE}/sign-up`]: "sign-up" };

export function currentPath(): string {
  const path = withoutTrailingSlashes(window.location.pathname);
  return path === "" ? "/" : path;
}

/** Points the address bar at `path`, as a new history entry unless `replace`. */
export function setPath(path: string, replace: boolean | undefined): void {
  if (path === window.location.pathname) return;
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
}

/** In-app links change the view without a reload; modified clicks keep their usual meaning. */
export function followInAppLinks(navigate: (path: string) => void): void {
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = event.target instanceof Element ? event.target.closest<HTMLAnchorElement>("a[data-nav]") : null;
    if (!link) return;
    event.preventDefault();
    navigate(withoutTrailingSlashes(new URL(link.href).pathname) || "/");
  });
}
