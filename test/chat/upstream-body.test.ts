import type { Dispatcher } from "undici";
import { describe, expect, it } from "vitest";
import { UpstreamBody } from "../../src/chat/upstream-body.js";

/** What undici hands a dispatch handler, reduced to what the body uses, recording the calls. */
class RecordingController implements Dispatcher.DispatchController {
  paused = false;
  aborted = false;
  reason: Error | null = null;
  calls: string[] = [];
  pause() {
    this.paused = true;
    this.calls.push("pause");
  }
  resume() {
    this.paused = false;
    this.calls.push("resume");
  }
  abort(reason: Error) {
    this.aborted = true;
    this.reason = reason;
    this.calls.push("abort");
  }
}

const kib = (n: number, fill = "x") => Buffer.from(fill.repeat(n * 1024));

describe("an upstream answer's body", () => {
  it("is read whole, in order, from several chunks", async () => {
    const body = new UpstreamBody(new RecordingController());
    const text = body.text();
    body.push(Buffer.from('{"a":'));
    body.push(Buffer.from("1}"));
    body.end();
    expect(await text).toBe('{"a":1}');
  });

  it("relays chunks as they come and pauses the upstream while the reader is far behind", async () => {
    const controller = new RecordingController();
    const body = new UpstreamBody(controller);
    for (let i = 0; i < 5; i++) body.push(kib(64, String(i)));
    // 320 KiB unread: past the high-water mark.
    expect(controller.paused).toBe(true);
    body.end();
    const read = await body.read();
    expect(read?.map((chunk) => chunk.toString("utf8", 0, 1))).toEqual(["0", "1", "2", "3", "4"]);
    expect(await body.read()).toBeUndefined();
    expect(controller.calls).toEqual(["pause", "resume"]);
  });

  it("surfaces a failure after the chunks that came before it", async () => {
    const body = new UpstreamBody(new RecordingController());
    body.push(Buffer.from("data: 1\n\n"));
    body.fail(new Error("socket closed"));
    expect((await body.read())?.map(String)).toEqual(["data: 1\n\n"]);
    await expect(body.read()).rejects.toThrow("socket closed");
  });

  it("aborts an unfinished exchange, and leaves a finished one alone", () => {
    const unfinished = new RecordingController();
    new UpstreamBody(unfinished).abort();
    expect(unfinished.calls).toEqual(["abort"]);

    const finished = new RecordingController();
    const body = new UpstreamBody(finished);
    body.end();
    body.abort();
    expect(finished.calls).toEqual([]);
  });

  it("lets the rest through unread after ignoreRest, resuming a paused upstream", () => {
    const controller = new RecordingController();
    const body = new UpstreamBody(controller);
    body.push(kib(300));
    expect(controller.paused).toBe(true);
    body.ignoreRest();
    expect(controller.paused).toBe(false);
    body.push(kib(300));
    expect(controller.calls).toEqual(["pause", "resume"]);
  });
});
