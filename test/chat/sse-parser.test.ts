import { describe, expect, it } from "vitest";
import { parseSse } from "../../src/chat/sse-parser.js";

async function events(pieces: (string | Buffer)[]) {
  const out = [];
  for await (const event of parseSse(
    (async function* () {
      yield* pieces;
    })(),
  )) {
    out.push(event);
  }
  return out;
}

describe("parseSse", () => {
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
