import { describe, expect, it } from "vitest";
import { parseSseBatches, type SseEvent } from "../../src/chat/sse-parser.js";

/** What each step of the parser gave, for reads of `pieces`. */
async function batches(pieces: (string | Buffer)[]): Promise<SseEvent[][]> {
  const out = [];
  for await (const batch of parseSseBatches(
    (async function* () {
      yield* pieces;
    })(),
  )) {
    out.push(batch);
  }
  return out;
}

async function events(pieces: (string | Buffer)[]): Promise<SseEvent[]> {
  return (await batches(pieces)).flat();
}

describe("parseSseBatches", () => {
  it("gives the events one read completes in one step, and a read that completes none gives no step", async () => {
    expect(await batches(['data: {"a":1}\n\ndata: {"b":2}\n\ndata: {"c"', ":3}\n", "\n"])).toEqual([
      [
        { event: undefined, data: '{"a":1}' },
        { event: undefined, data: '{"b":2}' },
      ],
      [{ event: undefined, data: '{"c":3}' }],
    ]);
  });

  it("yields each event once its blank line arrives, across arbitrary splits", async () => {
    const text = 'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      expect(await events([text.slice(0, cut), text.slice(cut)])).toEqual([
        { event: undefined, data: '{"a":1}' },
        { event: undefined, data: '{"b":2}' },
        { event: undefined, data: "[DONE]" },
      ]);
    }
  });

  it("keeps a multi-byte character split between two reads intact", async () => {
    const bytes = Buffer.from('data: {"t":"héllo 🌍"}\n\n');
    const split = bytes.indexOf(0xf0) + 2;
    expect(await events([bytes.subarray(0, split), bytes.subarray(split)])).toEqual([{ event: undefined, data: '{"t":"héllo 🌍"}' }]);
  });

  it("handles CRLF, comments, event names, multi-line data and a last event without its blank line", async () => {
    expect(await events([': keep-alive\r\n\r\nevent: error\r\ndata: {"x":\r\ndata: 1}\r\n\r\ndata:[DONE]'])).toEqual([
      { event: "error", data: '{"x":\n1}' },
      { event: undefined, data: "[DONE]" },
    ]);
  });
});
