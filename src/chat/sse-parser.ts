import { StringDecoder } from "node:string_decoder";
import { AnswerTooLargeError, MAX_WHOLE_BODY_BYTES } from "./upstream-body.js";

/** One server-sent event as an upstream sent it. */
export interface SseEvent {
  /** The `event:` field; undefined for plain `data:` events, which is all OpenAI sends. */
  event: string | undefined;
  /** The `data:` lines joined by "\n". */
  data: string;
}

/**
 * Splits a server-sent event byte stream into events as the bytes arrive, so
 * each chunk can be relayed the moment its blank line is read: `feed` takes
 * what one read brought and gives the events it completed, all together.
 * It is a plain object, not an async generator over the body: a generator
 * step costs a promise and a resume per read, and the relay above it already
 * pays one (relaying a stream took 165 µs of CPU with a step per event, 140 µs
 * with a step per read). Comments (`: keep-alive`) and `id:`/`retry:` fields
 * are dropped; they are transport details of the upstream, not content.
 *
 * An event is held until its blank line, so what one event may hold is
 * bounded as a whole answer read at once is (AnswerTooLargeError): an
 * upstream whose line never ends cannot grow the instance's memory.
 */
export class SseParser {
  readonly #decoder = new StringDecoder("utf8");
  /** The line not yet ended, in the pieces it came in: joined only once its end arrives, not copied at every read. */
  #pending: string[] = [];
  #pendingLength = 0;
  #data: string[] = [];
  /** The characters of the event being gathered: its data lines so far and the line not yet ended. */
  #held = 0;
  #event: string | undefined;
  /** A read ended in CR: whether it ends a line alone or begins a CRLF, the next read tells. */
  #crHeld = false;
  readonly #maxEventChars: number;

  constructor(maxEventChars = MAX_WHOLE_BODY_BYTES) {
    this.#maxEventChars = maxEventChars;
  }

  /** The events that `piece` completes, in order; often none. Throws AnswerTooLargeError for an event past the cap. */
  feed(piece: Buffer | string): SseEvent[] {
    const text = this.#withLineFeeds(typeof piece === "string" ? piece : this.#decoder.write(piece));
    const events: SseEvent[] = [];
    // Only the new text can end a line.
    if (!text.includes("\n")) {
      this.#pending.push(text);
      this.#pendingLength += text.length;
      if (this.#held + this.#pendingLength > this.#maxEventChars) throw new AnswerTooLargeError();
      return events;
    }
    const pending = this.#pending.length === 0 ? text : this.#pending.join("") + text;
    let start = 0;
    for (;;) {
      const newline = pending.indexOf("\n", start);
      if (newline === -1) break;
      const line = pending.slice(start, newline);
      start = newline + 1;
      if (line === "") {
        this.#dispatch(events);
      } else if (line.startsWith("data:")) {
        const data = dataOf(line);
        this.#held += data.length;
        this.#data.push(data);
      } else if (line.startsWith("event:")) {
        this.#event = line.slice(6).trim();
      }
    }
    const rest = pending.slice(start);
    this.#pending = rest === "" ? [] : [rest];
    this.#pendingLength = rest.length;
    if (this.#held + this.#pendingLength > this.#maxEventChars) throw new AnswerTooLargeError();
    return events;
  }

  /** The body ended: a last event without its blank line still counts (some servers end on "data: [DONE]\n"). */
  end(): SseEvent[] {
    const pending = this.#pending.join("") + this.#decoder.end();
    this.#pending = [];
    this.#pendingLength = 0;
    if (pending.startsWith("data:")) this.#data.push(dataOf(pending));
    const events: SseEvent[] = [];
    this.#dispatch(events);
    return events;
  }

  /** `text` with its line ends (CRLF, or CR alone, which the SSE format allows too) as LF. */
  #withLineFeeds(text: string): string {
    let lines = text;
    if (this.#crHeld) {
      this.#crHeld = false;
      lines = `\r${lines}`;
    }
    // OpenAI and most providers send LF alone: the common case costs one search.
    if (!lines.includes("\r")) return lines;
    if (lines.endsWith("\r")) {
      this.#crHeld = true;
      lines = lines.slice(0, -1);
    }
    return lines.replace(CR_LINE_ENDS, "\n");
  }

  /** A blank line: the event gathered so far, if it has data, and a fresh start. */
  #dispatch(events: SseEvent[]): void {
    if (this.#data.length > 0) events.push({ event: this.#event, data: this.#data.join("\n") });
    this.#data = [];
    this.#held = 0;
    this.#event = undefined;
  }
}

const CR_LINE_ENDS = /\r\n?/g;

/** A `data:` line's value: one leading space is part of the field syntax, not the data. */
function dataOf(line: string): string {
  return line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
}
