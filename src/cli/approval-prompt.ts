import { createInterface } from "node:readline/promises";
import type { WritableOutput } from "./terminal.js";

export type Answer = "yes" | "no" | "interrupted";

/**
 * Asks a yes/no question on the terminal. Ctrl-C while it waits comes as
 * readline's own SIGINT (the terminal is in raw mode then), not the
 * process's, so it is caught here and answered as "interrupted".
 */
export async function askYesNo(question: string, streams: { input: NodeJS.ReadableStream; output: WritableOutput & NodeJS.WritableStream }): Promise<Answer> {
  const rl = createInterface({ input: streams.input, output: streams.output, terminal: true });
  const aborted = new AbortController();
  let interrupted = false;
  rl.on("SIGINT", () => {
    interrupted = true;
    aborted.abort();
  });
  // Ctrl-D (end of input) is a "no": nobody is there to say yes.
  rl.on("close", () => aborted.abort());
  try {
    const reply = await rl.question(question, { signal: aborted.signal });
    return /^\s*y(es)?\s*$/i.test(reply) ? "yes" : "no";
  } catch {
    if (interrupted) streams.output.write("\n");
    return interrupted ? "interrupted" : "no";
  } finally {
    rl.close();
  }
}
