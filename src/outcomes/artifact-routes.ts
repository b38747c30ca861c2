import { createHash } from "node:crypto";
import { addVary, CompressedBodies, endCompressed, sendStored, worthCompressing, type ContentCoding } from "../server/compression.js";
import { ServiceError, toServiceError } from "../server/errors.js";
import { clientGone } from "../server/request-info.js";
import { attachmentDisposition } from "../server/content-disposition.js";
import { sendError, type NodeRequest, type NodeResponse, type RestHandler, type RestRouter } from "../server/rest.js";
import { isValidKey, withSignal, type ArtifactStore } from "./artifact-store.js";
import { slugOwner } from "./projects.js";
import { decodedOrAsSent } from "../strings.js";

/** The three public trees of built artifacts, by URL prefix. */
export const ARTIFACT_MOUNTS = ["preview", "sites", "books"] as const;
export type ArtifactMount = (typeof ARTIFACT_MOUNTS)[number];

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  xhtml: "application/xhtml+xml; charset=utf-8",
  css: "text/css; charset=utf-8",
  epub: "application/epub+zip",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  svg: "image/svg+xml",
  ico: "image/x-icon",
  txt: "text/plain; charset=utf-8",
  // The sitemap declares its own encoding, as XML does.
  xml: "application/xml",
  json: "application/json",
  webmanifest: "application/manifest+json",
};

/**
 * The policy on every generated document. Generated content is untrusted:
 * `sandbox` disables scripts, forms, popups and plugins, so even markup that
 * slipped past the renderer cannot run script as this service, and
 * `default-src 'none'` loads nothing but the site's own styles and pictures.
 * `allow-same-origin` keeps the page's origin: with an opaque one, a browser
 * gives each page a cache of its own, so every page fetched the site's
 * stylesheet and pictures again; with no script to run there, the origin
 * gives the page nothing more. Books and previews keep `allow-downloads` so a
 * book reader's EPUB link works (an ebook's preview is its reader; a
 * preview's mount does not say which outcome it shows, and a site has no
 * download to allow); nothing else is relaxed.
 */
export function contentSecurityPolicy(mount: ArtifactMount): string {
  const sandbox = mount === "sites" ? "sandbox allow-same-origin" : "sandbox allow-same-origin allow-downloads";
  return `${sandbox}; default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'`;
}

/** What a plan shows of its artifacts (`shownArtifacts` in the plan repository): the names of the previews it built and whether it is published; undefined once deleted. */
export type PlanArtifactsShown = (planId: string) => Promise<{ previews: readonly string[]; published: boolean } | undefined>;

/**
 * Serves `/preview/{planId}/…`, `/sites/{slug}/…` and `/books/{slug}/…` from
 * the store, each only while its plan shows it. The files alone do not say
 * so: a build or publish whose lease a cancel or a delete took away may still
 * write some after the plan stopped showing them, and a delete's sweep may
 * run before those writes land (or its instance stop before its second one).
 */
export function registerArtifactRoutes(router: RestRouter, store: ArtifactStore, shown: PlanArtifactsShown): void {
  for (const mount of ARTIFACT_MOUNTS) router.addPrefix(`/${mount}/`, answeringUnavailable(mount, artifactHandler(store, mount, shown)));
}

/** True while the plan behind `/{mount}/{name}/` shows it: a preview (`{planId}` or `{planId}-r{n}`) it lists, its site or book once published. */
async function isShown(store: ArtifactStore, shown: PlanArtifactsShown, mount: ArtifactMount, name: string): Promise<boolean> {
  if (mount === "preview") {
    const plan = await shown(name.replace(/-r\d+$/, ""));
    return plan?.previews.includes(name) === true;
  }
  const owner = isValidKey(name) ? await slugOwner(store, name) : undefined;
  return owner !== undefined && (await shown(owner))?.published === true;
}

function artifactHandler(everyRequest: ArtifactStore, mount: ArtifactMount, shown: PlanArtifactsShown): RestHandler {
  return async ({ req, res, url, hangUp }) => {
    // A client that hangs up stops the store's requests for it.
    const store = withSignal(everyRequest, hangUp);
    res.setHeader("content-security-policy", contentSecurityPolicy(mount));
    res.setHeader("x-content-type-options", "nosniff");
    res.setHeader("referrer-policy", "no-referrer");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return sendError(res, new ServiceError("method_not_allowed", `use GET or HEAD on /${mount}/`));
    }
    const notFound = (page = PLAIN_NOT_FOUND[mount]): void => sendErrorPage(req, res, new ServiceError("not_found", "no such page"), page);
    // The raw path, not the parsed URL: URL parsing resolves `..`, and a path that needed resolving is refused, not followed.
    const raw = (req.url ?? "").split("?")[0]!;
    if (!raw.startsWith(`/${mount}/`)) return notFound();
    // Decoded, and composed as slugs are: a client may send "й" as "и" and a combining breve.
    const segments = raw
      .slice(mount.length + 2)
      .split("/")
      .map((segment) => decodedOrAsSent(segment).normalize("NFC"));
    const site = segments[0];
    if (site === undefined || site === "") return notFound();
    // `/sites/bakery` → `/sites/bakery/`, so the site's relative links resolve under it.
    if (segments.length === 1) {
      if (!isValidKey(site)) return notFound();
      res.statusCode = 308;
      res.setHeader("location", `/${mount}/${encodeURIComponent(site)}/${url.search}`);
      res.end();
      return;
    }
    if (segments.at(-1) === "") segments[segments.length - 1] = "index.html";
    const key = [mount, ...segments].join("/");
    if (!(await isShown(store, shown, mount, site))) return notFound();
    const body = isValidKey(key) ? await store.get(key) : undefined;
    // A visitor's mistyped address under a site gets the site's own page; an unknown or deleted site, the plain one.
    if (!body) return notFound(await siteNotFoundPage(store, mount, site));

    const name = segments.at(-1)!;
    const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
    // A strong validator from the bytes: a republished site changes it, an unchanged one answers 304.
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    const contentType = CONTENT_TYPES[ext] ?? "application/octet-stream";
    if (ext === "epub") res.setHeader("content-disposition", attachmentDisposition(name));
    const cacheControl = mount === "preview" ? "no-cache" : "public, max-age=60";
    const encoded = worthCompressing(contentType, body.byteLength) ? (coding: ContentCoding) => compressed.get(etag, body, coding) : undefined;
    sendStored(req, res, { contentType, body, etag }, cacheControl, encoded, {
      notSatisfiable() {
        res.removeHeader("content-disposition");
        const error = new ServiceError("invalid_request", `the range starts past the end of the file (${body.byteLength} bytes)`, { status: 416 });
        sendErrorPage(req, res, error, RANGE_NOT_SATISFIABLE_PAGES[mount]);
      },
    });
  };
}

/** Compressed pages, stylesheets and pictures, shared by every mount: the same bytes have the same ETag wherever they are. */
const compressed = new CompressedBodies(16 * 1024 * 1024);

/**
 * `handler`, answering 503 when the store or the database is away (or the
 * server shuts down): nothing here is broken, and the page will be back. A
 * person's browser gets a page saying so, a client that asked for JSON the
 * API's `unavailable`; neither says what is behind the site.
 */
function answeringUnavailable(mount: ArtifactMount, handler: RestHandler): RestHandler {
  return async (exchange) => {
    try {
      await handler(exchange);
    } catch (error) {
      if (clientGone(exchange.hangUp)) return;
      if (toServiceError(error).type !== "unavailable") throw error;
      const { req, res } = exchange;
      res.setHeader("retry-after", "1");
      sendErrorPage(req, res, new ServiceError("unavailable", `this ${NOUNS[mount]} cannot be served right now; try again shortly`), UNAVAILABLE_PAGES[mount]);
    }
  };
}

/** An error at an artifact's address: a person's browser gets `page`, an API client that asked for JSON the API's error. */
function sendErrorPage(req: NodeRequest, res: NodeResponse, error: ServiceError, page: Uint8Array): void {
  addVary(res, "accept");
  if (wantsJson(req.headers.accept)) sendError(res, error);
  else sendPlainPage(req, res, error.status, page);
}

/** A page that is not a stored file (a site's 404 page, or one of ours), never cached; compressed as a stored page is when it is worth it. */
function sendPlainPage(req: NodeRequest, res: NodeResponse, status: number, page: Uint8Array): void {
  res.statusCode = status;
  res.setHeader("content-type", CONTENT_TYPES.html!);
  res.setHeader("cache-control", "no-store");
  if (worthCompressing(CONTENT_TYPES.html!, page.byteLength)) {
    endCompressed(req, res, page);
    return;
  }
  res.setHeader("content-length", page.byteLength);
  if (req.method === "HEAD") res.end();
  else (res as { end(chunk: Uint8Array): void }).end(page);
}

/** True when the client asked for JSON and not for a page: an API client, never a browser (which asks for HTML, or anything). */
function wantsJson(accept: string | string[] | undefined): boolean {
  const types = (Array.isArray(accept) ? accept.join(",") : (accept ?? "")).split(",").map((range) => range.split(";")[0]!.trim().toLowerCase());
  return types.some((type) => type === "application/json" || type.endsWith("+json")) && !types.includes("text/html");
}

const NOUNS: Record<ArtifactMount, string> = { preview: "preview", sites: "site", books: "book" };
const encoder = new TextEncoder();

/** A plain page, the same for every address under a mount, unstyled (the sandbox allows no inline style). */
function plainPages(title: string, text: (noun: string) => string): Record<ArtifactMount, Uint8Array> {
  return Object.fromEntries(
    ARTIFACT_MOUNTS.map((mount) => [
      mount,
      encoder.encode(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
</head>
<body>
<main>
<h1>${title}</h1>
<p>${text(NOUNS[mount])}</p>
</main>
</body>
</html>
`),
    ]),
  ) as Record<ArtifactMount, Uint8Array>;
}

/**
 * The page for an address that names no site, preview or book (never made,
 * mistyped, deleted): the same for every address, so it says nothing of what exists.
 */
const PLAIN_NOT_FOUND = plainPages(
  "Nothing here",
  (noun) => `There is no ${noun} at this address. Check that it is typed exactly as it was given to you; a ${noun} that was deleted is gone.`,
);

/** The page for a page the store cannot give now. */
const UNAVAILABLE_PAGES = plainPages("Not available right now", (noun) => `This ${noun} cannot be shown right now. Try again in a moment.`);

/** The page for a range past a file's end: a download resumed after the file was replaced by a shorter one. */
const RANGE_NOT_SATISFIABLE_PAGES = plainPages(
  "Part of a file past its end",
  (noun) => `The part of this ${noun}'s file that was asked for starts past its end. Download the file again from the start.`,
);

/**
 * The site's or book's generated `404.html`, with its relative links made
 * absolute under `/{mount}/{slug}/`, since it answers at any depth
 * (`/sites/x/a/b`). Undefined when the tree has none (built before it existed).
 */
async function siteNotFoundPage(store: ArtifactStore, mount: ArtifactMount, slug: string): Promise<Uint8Array | undefined> {
  const key = `${mount}/${slug}/404.html`;
  const page = isValidKey(key) ? await store.get(key) : undefined;
  if (!page) return undefined;
  const base = `/${mount}/${encodeURIComponent(slug)}/`;
  const text = new TextDecoder().decode(page).replace(/(href)="(?![#/]|[a-z][a-z0-9+.-]*:)/g, `$1="${base}`);
  return new TextEncoder().encode(text);
}
