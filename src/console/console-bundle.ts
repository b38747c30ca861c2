import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { compressAsync, type ContentCoding, type StoredBody } from "../server/compression.js";

/** One built file of the Console, served from memory. */
export interface ConsoleAsset extends StoredBody {
  /** URL path, with a content hash so it can be cached for good. */
  path: string;
  /** The body in each coding, compressed once when the bundle is built. */
  encoded: Record<ContentCoding, Buffer>;
}

/** The Console's whole front end: one script and one stylesheet. */
export interface ConsoleBundle {
  script: ConsoleAsset;
  style: ConsoleAsset;
}

/** Where the Console's assets are served; also the prefix the routes own. */
export const CONSOLE_ASSETS_PATH = "/console/assets/";

// Through the package's own name, so the path is the same from the sources and from the built `dist/main.js`.
const WEB_DIR = path.join(path.dirname(fileURLToPath(import.meta.resolve("project-zero/package.json"))), "src/console/web");

let cached: Promise<ConsoleBundle> | undefined;

/**
 * Bundles `web/main.ts` and `web/console.css` with esbuild, in
 * memory, once per process, and compresses each once in every coding
 * (brotli and gzip at their best: a few hundred milliseconds, off the event
 * loop). Built on first use rather than by `npm run
 * build`: tests and the CLI run the TypeScript sources directly, so this is
 * one path for all of them, and processes that never serve the Console (most
 * tests, workers) never pay for it. A failed build is not cached, so the
 * next request tries again.
 */
export function consoleBundle(): Promise<ConsoleBundle> {
  cached ??= buildConsoleBundle().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

async function buildConsoleBundle(): Promise<ConsoleBundle> {
  const { build } = await import("esbuild");
  const result = await build({
    // Two entries, one output each: the stylesheet is not imported from the script, so tsc needs no CSS typings.
    entryPoints: [path.join(WEB_DIR, "main.ts"), path.join(WEB_DIR, "console.css")],
    bundle: true,
    write: false,
    outdir: "/console-out",
    format: "iife",
    platform: "browser",
    target: ["chrome111", "firefox115", "safari16.4", "edge111"],
    minify: true,
    legalComments: "none",
    charset: "utf8",
    logLevel: "silent",
  });
  const script = result.outputFiles.find((file) => file.path.endsWith(".js"));
  const style = result.outputFiles.find((file) => file.path.endsWith(".css"));
  if (!script || !style) throw new Error("the Console bundle is missing its script or stylesheet");
  return {
    script: await asset(".js", "text/javascript; charset=utf-8", Buffer.from(script.contents)),
    style: await asset(".css", "text/css; charset=utf-8", Buffer.from(style.contents)),
  };
}

async function asset(extension: ".js" | ".css", contentType: string, body: Buffer): Promise<ConsoleAsset> {
  const hash = createHash("sha256").update(body).digest("base64url").slice(0, 12);
  const [br, gzip] = await Promise.all([compressAsync(body, "br", "build"), compressAsync(body, "gzip", "build")]);
  return { path: `${CONSOLE_ASSETS_PATH}console-${hash}${extension}`, contentType, body, etag: `"${hash}"`, encoded: { br, gzip } };
}

/**
 * Which of the bundle's assets a path names under any build, this one's or
 * another version's (`console-{hash}.js` or `.css`, as `asset` names them);
 * undefined for any other path.
 */
export function consoleAssetKind(pathname: string): keyof ConsoleBundle | undefined {
  const match = /^\/console\/assets\/console-[\w-]{12}\.(js|css)$/.exec(pathname);
  if (!match) return undefined;
  return match[1] === "js" ? "script" : "style";
}
