import { describe, expect, it } from "vitest";
import { SseParser, type SseEvent } from "../../src/chat/sse-parser.js";
import { AnswerTooLargeError } from "../../src/chat/upstream-body.js";

/** The events each read of `pieces` completed (reads that completed none left out), then those the end gave. */
function batches(pieces: (string | Buffer)[]): SseEvent[][] {
  const parser = new SseParser();
  return [...pieces.map((piece) => parser.feed(piece)), parser.end()].filter((batch) => batch.length > 0);
}

function events(pieces: (string | Buffer)[]): SseEvent[] {
  return batches(pieces).flat();
}

describe("SseParser", () => {
  it("gives the events one read completes together, and a read that completes none gives none", () => {
    expect(batches(['data: {"a":1}\n\ndata: {"b":2}\n\ndata: {"c"', ":3}\n", "\n"])).toEqual([
      [
        { event: undefined, data: '{"a":1}' },
        { event: undefined, data: '{"b":2}' },
      ],
      [{ event: undefined, data: '{"c":3}' }],
    ]);
  });

  it("yields each event once its blank line arrives, across arbitrary splits", () => {
    const text = 'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      expect(events([text.slice(0, cut), text.slice(cut)])).toEqual([
        { event: undefined, data: '{"a":1}' },
        { event: undefined, data: '{"b":2}' },
        { event: undefined, data: "[DONE]" },
      ]);
    }
  });

  it("keeps a multi-byte character split between two reads intact", () => {
    const bytes = Buffer.from('data: {"t":"héllo 🌍"}\n\n');
    const split = bytes.indexOf(0xf0) + 2;
    expect(events([bytes.subarray(0, split), bytes.subarray(split)])).toEqual([{ event: undefined, data: '{"t":"héllo 🌍"}' }]);
  });

  it("handles CRLF, comments, event names, multi-line data and a last event without its blank line", () => {
    expect(events([': keep-alive\r\n\r\nevent: error\r\ndata: {"x":\r\ndata: 1}\r\n\r\ndata:[DONE]'])).toEqual([
      { event: "error", data: '{"x":\n1}' },
      { event: undefined, data: "[DONE]" },
    ]);
  });

  // Found by a review of misbehaving upstreams: the SSE format lets a line end with CR alone, as with CRLF or LF.
  it("ends lines at a lone CR too, across arbitrary splits, a CRLF split between reads still one line end", () => {
    for (const text of ['data: {"a":1}\r\rdata: {"b":2}\r\r: c\rdata: [DONE]\r\r', 'data: {"a":1}\r\n\rdata: {"b":2}\n\r\n: c\rdata: [DONE]\r\n\r\n']) {
      for (let cut = 1; cut < text.length; cut++) {
        expect(events([text.slice(0, cut), text.slice(cut)]), JSON.stringify([text.slice(0, cut), text.slice(cut)])).toEqual([
          { event: undefined, data: '{"a":1}' },
          { event: undefined, data: '{"b":2}' },
          { event: undefined, data: "[DONE]" },
        ]);
      }
    }
    expect(events(['data: {"a":1}\r'])).toEqual([{ event: undefined, data: '{"a":1}' }]);
  });

  it("refuses an event past its cap, whether one line that never ends or many data lines without their blank line", () => {
    const endless = new SseParser(100);
    expect(endless.feed(`data: ${"x".repeat(60)}`)).toEqual([]);
    expect(() => endless.feed("x".repeat(60))).toThrow(AnswerTooLargeError);

    const unended = new SseParser(100);
    for (let i = 0; i < 4; i++) unended.feed(`data: ${"y".repeat(20)}\n`);
    expect(() => unended.feed(`data: ${"y".repeat(30)}\n`)).toThrow(AnswerTooLargeError);

    // Up to the cap an event is whole, and the next starts from nothing.
    const bounded = new SseParser(100);
    for (let i = 0; i < 5; i++) expect(bounded.feed(`data: ${"z".repeat(50)}\n\n`)).toEqual([{ event: undefined, data: "z".repeat(50) }]);
  });
});
