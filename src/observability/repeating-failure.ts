import type { Logger } from "./logger.js";

/**
 * The log of a step that runs on every poll and fails on every poll while
 * something outside is away (the database, mostly): the first failure with
 * its error, then at most one line per `everyMs` with how many more there
 * were, and one line when the step works again. An outage is a few lines,
 * not a stack trace twice a second.
 */
export class RepeatingFailure {
  readonly #log: Logger;
  readonly #step: string;
  readonly #everyMs: number;
  readonly #now: () => number;
  #failures = 0;
  #unlogged = 0;
  #loggedAt = 0;

  constructor(log: Logger, step: string, options: { everyMs?: number; now?: () => number } = {}) {
    this.#log = log;
    this.#step = step;
    this.#everyMs = options.everyMs ?? 30_000;
    this.#now = options.now ?? (() => performance.now());
  }

  failed(error: unknown): void {
    this.#failures++;
    const now = this.#now();
    if (this.#failures === 1) {
      this.#log.warn({ err: error }, `${this.#step} failed`);
      this.#loggedAt = now;
      return;
    }
    this.#unlogged++;
    if (now - this.#loggedAt < this.#everyMs) return;
    const message = error instanceof Error ? error.message : String(error);
    this.#log.warn({ failures: this.#unlogged, error: message }, `${this.#step} still failing`);
    this.#unlogged = 0;
    this.#loggedAt = now;
  }

  succeeded(): void {
    if (this.#failures === 0) return;
    this.#log.info({ failures: this.#failures }, `${this.#step} works again`);
    this.#failures = 0;
    this.#unlogged = 0;
  }
}
