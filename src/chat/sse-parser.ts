import { StringDecoder } from "node:string_decoder";

/** One server-sent event as an upstream sent it. */
export interface SseEvent {
  /** The `event:` field; undefined for plain `data:` events, which is all OpenAI sends. */
  event: string | undefined;
  /** The `data:` lines joined by "\n". */
  data: string;
}

/**
 * Splits a server-sent event byte stream into events as the bytes arrive, so
 * each chunk can be relayed the moment its blank line is read. The events one
 * read completes come in one step of the iterator, not one step each: a step
 * of an async generator is a promise and a resume, and an upstream's read
 * often carries several chunks (relaying a stream took 165 µs of CPU with a
 * step per event, 140 µs with a step per read). Comments (`: keep-alive`) and
 * `id:`/`retry:` fields are dropped; they are transport details of the
 * upstream, not content.
 */
export async function* parseSseBatches(body: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent[]> {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  let data: string[] = [];
  let event: string | undefined;
  for await (const piece of body) {
    pending += typeof piece === "string" ? piece : decoder.write(piece);
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const newline = pending.indexOf("\n", start);
      if (newline === -1) break;
      let line = pending.slice(start, newline);
      start = newline + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (data.length > 0) events.push({ event, data: data.join("\n") });
        data = [];
        event = undefined;
      } else if (line.startsWith("data:")) {
        data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
      } else if (line.startsWith("event:")) {
        event = line.slice(6).trim();
      }
    }
    pending = pending.slice(start);
    if (events.length > 0) yield events;
  }
  pending += decoder.end();
  // A last event without its blank line still counts: some servers end on "data: [DONE]\n".
  if (pending.startsWith("data:")) data.push(pending.charCodeAt(5) === 32 ? pending.slice(6) : pending.slice(5));
  if (data.length > 0) yield [{ event, data: data.join("\n") }];
}
