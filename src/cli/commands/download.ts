import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";

/**
 * `download <id> [-o file]`: the plan's newest build, a site as a zip or a
 * book as its EPUB, saved under the name the service suggests (or `-o`;
 * `-o -` writes it to stdout). The file appears whole or not at all: it is
 * written beside its final name and renamed once complete.
 */
export async function downloadCommand(ctx: CliContext, args: { id: string; output: string | undefined }): Promise<ExitCode> {
  const abort = new AbortController();
  const stopListening = ctx.io.onInterrupt(() => abort.abort());
  try {
    const file = await ctx.client().executions.download(args.id, { signal: abort.signal });
    const body = Readable.fromWeb(file.body as NodeReadableStream<Uint8Array>);
    if (args.output === "-") {
      await pipeline(body, ctx.io.stdout);
      return ExitCode.ok;
    }
    const target = path.resolve(args.output ?? file.filename);
    const partial = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString("hex")}.part`);
    try {
      await pipeline(body, createWriteStream(partial, { flags: "wx" }));
      await rename(partial, target);
    } finally {
      await rm(partial, { force: true });
    }
    const bytes = (await stat(target)).size;
    if (ctx.json) ctx.emit({ file: target, bytes, contentType: file.contentType });
    else ctx.say(`Saved ${path.relative(process.cwd(), target) || target} (${bytes.toLocaleString("en")} bytes, ${file.contentType})`);
    return ExitCode.ok;
  } catch (error) {
    return ctx.fail(error);
  } finally {
    stopListening();
  }
}
