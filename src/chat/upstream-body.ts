import type { Dispatcher } from "undici";

/** Past this many unread bytes the upstream is paused until the relay catches up. */
const HIGH_WATER_BYTES = 256 * 1024;

/**
 * The body of an upstream's answer as undici's dispatch handler delivers it:
 * chunks pushed as they arrive, read once, either whole (`text`) or as they
 * come (`read`, for SSE). This replaces undici's `request()` body
 * stream on the hottest path of the gateway: a Readable and its promises per
 * answer cost a third of the upstream client's CPU.
 */
export class UpstreamBody {
  readonly #controller: Dispatcher.DispatchController;
  #chunks: Buffer[] = [];
  #unread = 0;
  #ended = false;
  #error: Error | undefined;
  /** Set while the reader waits for the next chunk, the end or a failure. */
  #wake: (() => void) | undefined;
  /** Set once the rest of the body is no longer wanted. */
  #ignoring = false;
  /** Set when read whole: nothing to pace, so the upstream is never paused. */
  #readingWhole = false;

  constructor(controller: Dispatcher.DispatchController) {
    this.#controller = controller;
  }

  /** True once the upstream finished sending it. */
  get ended(): boolean {
    return this.#ended;
  }

  /** The whole body as UTF-8. */
  async text(): Promise<string> {
    this.#readingWhole = true;
    if (this.#controller.paused) this.#controller.resume();
    while (!this.#ended) {
      if (this.#error) throw this.#error;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    const text = this.#chunks.length === 1 ? this.#chunks[0]!.toString("utf8") : Buffer.concat(this.#chunks).toString("utf8");
    this.#chunks = [];
    return text;
  }

  /**
   * The chunks that arrived since the last read, all of them, waiting for at
   * least one; undefined once the body has ended. A failure is thrown after
   * the chunks that came before it. Reading in batches rather than through an
   * async iterator spares a promise and a resume per chunk on the stream path.
   */
  async read(): Promise<Buffer[] | undefined> {
    for (;;) {
      if (this.#chunks.length > 0) {
        const chunks = this.#chunks;
        this.#chunks = [];
        this.#unread = 0;
        if (this.#controller.paused) this.#controller.resume();
        return chunks;
      }
      if (this.#error) throw this.#error;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** The rest is not wanted, but the exchange may finish so its connection is kept for the next request. */
  ignoreRest(): void {
    this.#ignoring = true;
    this.#chunks = [];
    this.#unread = 0;
    if (this.#controller.paused) this.#controller.resume();
  }

  /** Ends the exchange now (its connection is closed), unless it already finished. */
  abort(): void {
    if (this.#ended || this.#error) return;
    this.#ignoring = true;
    this.#controller.abort(new Error("the relay stopped reading"));
  }

  // Called by the dispatch handler.

  push(chunk: Buffer): void {
    if (this.#ignoring) return;
    this.#chunks.push(chunk);
    this.#unread += chunk.length;
    if (!this.#readingWhole && this.#unread > HIGH_WATER_BYTES && !this.#controller.paused) this.#controller.pause();
    this.#notify();
  }

  end(): void {
    this.#ended = true;
    this.#notify();
  }

  fail(error: Error): void {
    this.#error = error;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
