interface Waiting<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/** Told of each statement once it is answered or failed: the items it carried and the seconds it took. */
export type StatementObserver = (items: number, seconds: number) => void;

export interface StatementBatcherOptions {
  /** Statements running at once; items beyond them wait and go together in the next. */
  maxInFlight?: number;
  /** Most items in one statement. */
  maxBatch?: number;
  observe?: StatementObserver;
}

/**
 * Group commit for one kind of write. An item is sent at once while fewer
 * than `maxInFlight` statements are running, so a lone write never waits;
 * under load, the items that arrive meanwhile go together as one statement
 * when a slot frees up: one query written, planned and answered for many
 * rows. `write` answers one result per item, in order; a failed statement
 * fails only the items it carried.
 */
export class StatementBatcher<Item, Result> {
  readonly #write: (items: Item[]) => Promise<readonly Result[]>;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  readonly #observe: StatementObserver | undefined;
  #waiting: Waiting<Item, Result>[] = [];
  #inFlight = 0;
  /** Statements sent so far (tests check that concurrent writes share them). */
  statements = 0;

  constructor(write: (items: Item[]) => Promise<readonly Result[]>, options: StatementBatcherOptions = {}) {
    this.#write = write;
    this.#maxInFlight = options.maxInFlight ?? 4;
    this.#maxBatch = options.maxBatch ?? 64;
    this.#observe = options.observe;
  }

  submit(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#send();
    });
  }

  #send(): void {
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      // The oldest waiting items; the others keep their place.
      const batch = this.#waiting.splice(0, this.#maxBatch);
      this.#inFlight++;
      this.statements++;
      const started = performance.now();
      this.#write(batch.map((w) => w.item))
        .then(
          (results) => {
            for (const [i, w] of batch.entries()) w.resolve(results[i]!);
          },
          (error: unknown) => {
            for (const w of batch) w.reject(error);
          },
        )
        .finally(() => {
          this.#observe?.(batch.length, (performance.now() - started) / 1000);
          this.#inFlight--;
          this.#send();
        });
    }
  }
}
