import { createHash } from "node:crypto";
import type { Logger } from "../observability/logger.js";
import { ServiceError } from "../server/errors.js";
import { sendStored } from "../server/compression.js";
import { sendError, type NodeResponse, type RestRouter } from "../server/rest.js";
import { consoleAssetKind, consoleBundle, CONSOLE_ASSETS_PATH, type ConsoleBundle } from "./console-bundle.js";

export interface ConsoleRoutesOptions {
  /** The service's public URL: `https` adds Strict-Transport-Security. */
  publicUrl: string;
  logger: Logger;
}

/**
 * The Console's policy: only our own script, stylesheet and images, fetches
 * only to this origin, no framing, no inline code of any kind.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** Set on every Console response, whatever its status. */
export function consoleSecurityHeaders(publicUrl: string): Record<string, string> {
  return {
    "content-security-policy": CONSOLE_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    ...(publicUrl.startsWith("https:") ? { "strict-transport-security": "max-age=31536000" } : {}),
  };
}

const ICON_PATH = `${CONSOLE_ASSETS_PATH}icon.svg`;
const ICON = Buffer.from(
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#3446c9"/>` +
    `<path d="M10 10h12L10 22h12" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>`,
);

/**
 * `/console…`: the single page of the Console and its assets; `/` sends a
 * person there. Every path under `/console/` that is not an asset gets the
 * same page, whose script picks the view from the path.
 */
export function consoleRoutes(router: RestRouter, options: ConsoleRoutesOptions): void {
  const headers = consoleSecurityHeaders(options.publicUrl);

  router.add("GET", "/", ({ res }) => {
    setHeaders(res, headers);
    res.statusCode = 302;
    res.setHeader("location", "/console/");
    res.setHeader("cache-control", "no-store");
    res.end();
  });

  router.addPrefix("/console", async ({ req, res, url }) => {
    setHeaders(res, headers);
    const pathname = url.pathname;
    if (pathname !== "/console" && !pathname.startsWith("/console/")) {
      throw new ServiceError("not_found", `no route for ${req.method} ${pathname}`);
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      throw new ServiceError("method_not_allowed", `use GET on ${pathname}`);
    }
    if (pathname === ICON_PATH) {
      sendStored(req, res, { contentType: "image/svg+xml", body: ICON, etag: etagOf(ICON) }, "public, max-age=86400");
      return;
    }
    let bundle: ConsoleBundle;
    try {
      bundle = await consoleBundle();
    } catch (error) {
      options.logger.error({ err: error }, "the Console bundle failed to build");
      sendError(res, new ServiceError("unavailable", "the Console is unavailable: its bundle failed to build"));
      return;
    }
    if (pathname.startsWith(CONSOLE_ASSETS_PATH)) {
      const kind = consoleAssetKind(pathname);
      if (!kind) throw new ServiceError("not_found", `no Console asset at ${pathname}`);
      const asset = bundle[kind];
      // Another version's name, from a page another instance served during a rolling upgrade: this version's
      // asset of that kind is the nearest there is, and not to be kept under that name for good.
      const cacheControl = asset.path === pathname ? "public, max-age=31536000, immutable" : "no-cache";
      sendStored(req, res, asset, cacheControl, (coding) => asset.encoded[coding]);
      return;
    }
    const page = Buffer.from(pageHtml(bundle));
    // The page names the hashed assets, so it must be revalidated on each visit.
    sendStored(req, res, { contentType: "text/html; charset=utf-8", body: page, etag: etagOf(page) }, "no-cache");
  });
}

function pageHtml(bundle: ConsoleBundle): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Console · project-zero</title>
<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">
<link rel="stylesheet" href="${bundle.style.path}">
<script src="${bundle.script.path}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<div id="app"><main id="main" class="boot" tabindex="-1"><p class="muted">Loading the Console…</p></main></div>
<noscript><p class="noscript">The Console needs JavaScript. The HTTP API works without it.</p></noscript>
</body>
</html>
`;
}

function setHeaders(res: NodeResponse, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

function etagOf(body: Buffer): string {
  return `"${createHash("sha256").update(body).digest("base64url").slice(0, 12)}"`;
}
