import type { Dispatcher } from "undici";

/** Past this many unread bytes the upstream is paused until the relay catches up. */
const HIGH_WATER_BYTES = 256 * 1024;

/**
 * The most of an answer read whole: twice the largest request a client may
 * send (16 MiB), far past any completion or batch of embeddings, and short of
 * what one answer could do to the instance's memory.
 */
export const MAX_WHOLE_BODY_BYTES = 32 * 1024 * 1024;

/** A body read whole was still arriving at its deadline (an upstream sending a byte now and then, never done). */
export class AnswerDeadlineError extends Error {
  constructor() {
    super("the answer was not complete by its deadline");
  }
}

/**
 * A body read as it comes brought nothing of the answer by its deadline: an
 * upstream that keeps the connection busy with SSE comments or empty chunks
 * (a queue's keep-alives) and never starts.
 */
export class AnswerNotStartedError extends Error {
  constructor() {
    super("no part of the answer came by its deadline");
  }
}

/** A body read whole grew past MAX_WHOLE_BODY_BYTES. */
export class AnswerTooLargeError extends Error {
  constructor() {
    super(`the answer is larger than ${MAX_WHOLE_BODY_BYTES} bytes`);
  }
}

/**
 * The body of an upstream's answer as undici's dispatch handler delivers it:
 * chunks pushed as they arrive, read once, either whole (`text`) or as they
 * come (`read`, for SSE). This replaces undici's `request()` body
 * stream on the hottest path of the gateway: a Readable and its promises per
 * answer cost a third of the upstream client's CPU.
 */
export class UpstreamBody {
  readonly #controller: Dispatcher.DispatchController;
  /** When a body read whole must be complete (a performance.now() time); reading as it comes (a stream) has no deadline. */
  readonly #wholeBy: number;
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
  /** Read as it comes: set once the reader found part of the answer (`answering`); until then the deadline holds. */
  #answering = false;
  #notStartedTimer: NodeJS.Timeout | undefined;

  constructor(controller: Dispatcher.DispatchController, wholeBy = Number.POSITIVE_INFINITY) {
    this.#controller = controller;
    this.#wholeBy = wholeBy;
  }

  /** True once the upstream finished sending it. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * The whole body as UTF-8. Throws AnswerDeadlineError when it is not
   * complete by its deadline, and AnswerTooLargeError past
   * MAX_WHOLE_BODY_BYTES; either ends the exchange.
   */
  async text(): Promise<string> {
    this.#readingWhole = true;
    if (this.#controller.paused) this.#controller.resume();
    const deadline =
      this.#ended || this.#wholeBy === Number.POSITIVE_INFINITY
        ? undefined
        : setTimeout(() => this.#stop(new AnswerDeadlineError()), Math.max(0, this.#wholeBy - performance.now()));
    try {
      while (!this.#ended) {
        if (this.#error) throw this.#error;
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    } finally {
      clearTimeout(deadline);
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
   * Until the reader calls `answering`, a wait past the body's deadline fails
   * with AnswerNotStartedError and ends the exchange.
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
      if (!this.#answering && this.#notStartedTimer === undefined && this.#wholeBy !== Number.POSITIVE_INFINITY) {
        this.#notStartedTimer = setTimeout(() => this.#stop(new AnswerNotStartedError()), Math.max(0, this.#wholeBy - performance.now()));
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** The reader found part of the answer in what it read: from here on the stream may take as long as its tokens flow. */
  answering(): void {
    if (this.#answering) return;
    this.#answering = true;
    clearTimeout(this.#notStartedTimer);
  }

  /** The rest is not wanted, but the exchange may finish so its connection is kept for the next request. */
  ignoreRest(): void {
    clearTimeout(this.#notStartedTimer);
    this.#ignoring = true;
    this.#chunks = [];
    this.#unread = 0;
    if (this.#controller.paused) this.#controller.resume();
  }

  /** Ends the exchange now (its connection is closed), unless it already finished. */
  abort(): void {
    clearTimeout(this.#notStartedTimer);
    if (this.#ended || this.#error) return;
    this.#ignoring = true;
    this.#controller.abort(new Error("the relay stopped reading"));
  }

  // Called by the dispatch handler.

  push(chunk: Buffer): void {
    if (this.#ignoring) return;
    this.#chunks.push(chunk);
    this.#unread += chunk.length;
    if (this.#readingWhole && this.#unread > MAX_WHOLE_BODY_BYTES) {
      this.#stop(new AnswerTooLargeError());
      return;
    }
    if (!this.#readingWhole && this.#unread > HIGH_WATER_BYTES && !this.#controller.paused) this.#controller.pause();
    this.#notify();
  }

  end(): void {
    clearTimeout(this.#notStartedTimer);
    this.#ended = true;
    this.#notify();
  }

  fail(error: Error): void {
    clearTimeout(this.#notStartedTimer);
    // After #stop, undici reports the abort it asked for: the first reason stands.
    this.#error ??= error;
    this.#notify();
  }

  /** Fails the read with `error` and ends the exchange (its connection is closed). */
  #stop(error: Error): void {
    if (this.#ended || this.#error) return;
    this.#error = error;
    this.#ignoring = true;
    this.#chunks = [];
    this.#unread = 0;
    this.#controller.abort(error);
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
