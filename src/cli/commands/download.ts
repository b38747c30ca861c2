import { randomBytes } from "node:crypto";
import { mkdir, open, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { once } from "node:events";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { printable } from "../terminal.js";

/**
 * `download <id> [-o file]`: the plan's newest build, a site as a zip or a
 * book as its EPUB, saved under the name the service suggests (or `-o`;
 * `-o dir/` puts it under the suggested name in that directory, made if need
 * be; `-o -` writes it to stdout). The file appears whole or not at all: it
 * is written beside its final name and renamed once complete.
 */
export async function downloadCommand(ctx: CliContext, args: { id: string; output: string | undefined }): Promise<ExitCode> {
  const abort = new AbortController();
  const stopListening = ctx.io.onInterrupt(() => abort.abort());
  try {
    const client = ctx.client();
    const file = await ctx.answerWithin(abort.signal, (signal) => client.executions.download(args.id, { signal }));
    const body = Readable.fromWeb(file.body as NodeReadableStream<Uint8Array>);
    if (args.output === "-") {
      // Copied rather than piped: a pipeline ends stdout, and destroys it when the download fails, so the
      // exit's flush then met a closed pipe (141 for a reader that had read it all) or the failure went unhandled.
      const out = ctx.io.stdout;
      for await (const piece of body) {
        if (!out.write(piece)) await once(out, "drain");
      }
      return ExitCode.ok;
    }
    // A trailing slash names a directory (made if need be), never a file; the file in it is still the service's name.
    const directory = args.output?.endsWith("/") || args.output?.endsWith(path.sep) ? args.output : undefined;
    const named = directory !== undefined ? path.join(directory, file.filename) : (args.output ?? file.filename);
    const target = path.resolve(named);
    // The suggested name is the service's choice; replacing a file is the user's, by naming it with -o.
    if (args.output === undefined || directory !== undefined) {
      if (await exists(target)) {
        ctx.report("invalid_request", `${named} already exists; pass -o ${named} to replace it, or -o another name`);
        return ExitCode.usage;
      }
    }
    try {
      if (directory !== undefined) {
        await mkdir(directory, { recursive: true }).catch((error: unknown) => {
          throw new CannotWrite(error);
        });
      }
      await saveWhole(body, target);
    } catch (error) {
      if (!(error instanceof CannotWrite)) throw error;
      // The user's own path and what is wrong with it; the plan and the service are fine, so not 1.
      ctx.report("invalid_request", `cannot write ${named}: ${error.reason}`);
      return ExitCode.usage;
    }
    const bytes = (await stat(target)).size;
    if (ctx.json) ctx.emit({ file: target, bytes, contentType: file.contentType });
    else ctx.say(printable(`Saved ${path.relative(process.cwd(), target) || target} (${bytes.toLocaleString("en")} bytes, ${file.contentType})`));
    return ExitCode.ok;
  } catch (error) {
    return ctx.fail(error);
  } finally {
    stopListening();
  }
}

function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** The file system refused the file at `-o`; `reason` says why in words, without the temporary name. */
class CannotWrite extends Error {
  readonly reason: string;
  constructor(cause: unknown) {
    super("cannot write the download", { cause });
    const code = (cause as NodeJS.ErrnoException).code ?? "";
    this.reason = REASONS[code] ?? (code || "the file system refused it");
  }
}

/** Why a file cannot be written, for the errors a bad or full `-o` path gives. */
const REASONS: Record<string, string> = {
  ENOENT: "no such directory",
  ENOTDIR: "a part of the path is not a directory",
  EISDIR: "it is a directory",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EROFS: "read-only file system",
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  ENAMETOOLONG: "the name is too long",
};

/**
 * Streams `body` into `target` through a hidden file beside it, renamed once
 * complete, and removes that file whatever happens. What the file system
 * refuses rejects as CannotWrite; a failed download rejects as it was.
 */
async function saveWhole(body: Readable, target: string): Promise<void> {
  const partial = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString("hex")}.part`);
  const handle = await open(partial, "wx").catch((error: unknown) => {
    throw new CannotWrite(error);
  });
  try {
    const out = handle.createWriteStream();
    // A download that fails destroys `out` with its own error, which is then no refusal of the file system's.
    let failedToRead: unknown;
    let refused: unknown;
    body.once("error", (error) => (failedToRead = error));
    out.once("error", (error) => (refused = error));
    await pipeline(body, out).catch((error: unknown) => {
      throw error === refused && error !== failedToRead ? new CannotWrite(error) : error;
    });
    await rename(partial, target).catch((error: unknown) => {
      throw new CannotWrite(error);
    });
  } finally {
    await rm(partial, { force: true });
  }
}
