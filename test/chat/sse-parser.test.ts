import { describe, expect, it } from "vitest";
import { SseParser, type SseEvent } from "../../src/chat/sse-parser.js";

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
});
