import { toJson } from "@bufbuild/protobuf";
import { ChatCompletionChunkSchema, chunkText, type ChatMessageInput } from "../../client/zero-client.js";
import type { CliContext } from "../context.js";
import { ExitCode } from "../exit-codes.js";
import { printableText } from "../terminal.js";

/** `chat "<prompt>"`: streams the answer, each token as soon as it arrives. */
export async function chatCommand(ctx: CliContext, args: { prompt: string; system: string | undefined }): Promise<ExitCode> {
  const messages: ChatMessageInput[] = [];
  if (args.system) messages.push({ role: "system", content: args.system });
  messages.push({ role: "user", content: args.prompt });
  const stop = new AbortController();
  const stopListening = ctx.io.onInterrupt(() => stop.abort());
  let endsWithNewline = true;
  try {
    for await (const chunk of ctx.client().chat.stream({ messages }, { signal: stop.signal })) {
      if (ctx.json) {
        ctx.emit(toJson(ChatCompletionChunkSchema, chunk));
        continue;
      }
      // A model's words are shown, never obeyed as terminal control.
      const text = printableText(chunkText(chunk));
      if (text === "") continue;
      ctx.out.write(text);
      endsWithNewline = text.endsWith("\n");
    }
    if (!endsWithNewline) ctx.out.write("\n");
    return ExitCode.ok;
  } catch (error) {
    if (!endsWithNewline) ctx.out.write("\n");
    if (stop.signal.aborted) return ExitCode.interrupted;
    return ctx.fail(error);
  } finally {
    stopListening();
  }
}
