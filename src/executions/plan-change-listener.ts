import type { Store } from "../db/database.js";
import { PLAN_CHANGED_CHANNEL } from "./plan-repository.js";
import type { Logger } from "../observability/logger.js";

/**
 * Tells watchers on this instance that a plan changed, whichever instance
 * changed it: every plan write NOTIFYs its id. One LISTEN per instance, taken
 * when the first watcher arrives, so instances nobody watches pay nothing.
 * Delivery is best effort; watchers poll as well.
 */
export class PlanChangeListener {
  readonly #store: Store;
  readonly #log: Logger;
  readonly #subscribers = new Map<string, Set<() => void>>();
  #listening: Promise<(() => Promise<void>) | undefined> | undefined;
  #stopped = false;

  constructor(store: Store, logger: Logger) {
    this.#store = store;
    this.#log = logger;
  }

  /** Calls `onChange` whenever plan `planId` changes, until the returned function is called. */
  async subscribe(planId: string, onChange: () => void): Promise<() => void> {
    const set = this.#subscribers.get(planId) ?? new Set();
    set.add(onChange);
    this.#subscribers.set(planId, set);
    if (!this.#stopped) {
      this.#listening ??= this.#store
        .listen(PLAN_CHANGED_CHANNEL, (id) => {
          for (const notify of this.#subscribers.get(id) ?? []) notify();
        })
        .catch((error: unknown) => {
          this.#log.warn({ err: error }, "cannot listen for plan changes; watchers poll");
          this.#listening = undefined;
          return undefined;
        });
      await this.#listening;
    }
    return () => {
      set.delete(onChange);
      if (set.size === 0 && this.#subscribers.get(planId) === set) this.#subscribers.delete(planId);
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const unlisten = await this.#listening;
    this.#listening = undefined;
    await unlisten?.().catch(() => {});
  }
}
