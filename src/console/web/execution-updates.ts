import { LIST_LIMIT } from "../../api/limits.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Plan } from "../../../gen/zero/v1/execution_pb.js";
import { READ_TIMEOUT, errorMessage, executionsApi, isNotFound, isSignedOut, isUnimplemented } from "./api.js";
import type { ExecutionList } from "./execution-list.js";
import type { ViewContext } from "./view.js";

/**
 * Browsers open at most six HTTP/1.1 connections per origin, shared by all
 * the tabs of the Console, and each WatchExecution stream holds one until
 * its plan stops: one a visible tab, none a hidden one, so three windows
 * side by side still leave room for every other request. The rest of the
 * running plans are polled.
 */
const MAX_STREAMS = 1;
const POLL_MS = 3000;
/**
 * With nothing left to follow, the list is still read this often while the
 * page is visible: plans created, changed or deleted in another tab or
 * through the API show up without a reload.
 */
const REFRESH_MS = 5000;

/** Keeps the list current while the page is in view: a WatchExecution stream for a running plan, polling for the rest, and a slower refresh always. */
export class ExecutionUpdates {
  readonly #list: ExecutionList;
  readonly #context: ViewContext;
  readonly #onUnimplemented: () => void;
  readonly #watches: PlanWatches;
  #stopped = false;
  #pollTimer: number | undefined;
  readonly #onVisible = (): void => {
    if (document.visibilityState === "visible") void this.refresh();
    else this.schedulePoll();
  };

  /** `onUnimplemented`: this server does not run executions at all. */
  constructor(list: ExecutionList, context: ViewContext, onUnimplemented: () => void) {
    this.#list = list;
    this.#context = context;
    this.#onUnimplemented = onUnimplemented;
    this.#watches = new PlanWatches(context, {
      onPlan: (plan) => list.upsert(plan),
      onEnded: () => void this.refresh(),
    });
  }

  start(): void {
    void this.refresh();
    document.addEventListener("visibilitychange", this.#onVisible);
  }

  stop(): void {
    this.#stopped = true;
    window.clearTimeout(this.#pollTimer);
    document.removeEventListener("visibilitychange", this.#onVisible);
    this.#watches.stop();
  }

  /** Loads the list afresh, then decides what to watch and whether to poll again. */
  async refresh(): Promise<void> {
    if (this.#stopped) return;
    window.clearTimeout(this.#pollTimer);
    try {
      const response = await executionsApi.listExecutions({}, READ_TIMEOUT);
      if (this.#stopped) return;
      const older = this.#list.pagedBack ? await this.#readOlderShown(response.plans) : [];
      if (this.#stopped) return;
      this.#show(response.plans, older);
    } catch (error) {
      if (this.#stopped) return;
      if (isSignedOut(error)) return this.#context.signedOut();
      if (isUnimplemented(error)) {
        this.#list.showProblem("This server does not run executions yet.");
        this.#onUnimplemented();
        return;
      }
      this.#list.showProblem(`Could not load executions: ${errorMessage(error)}`);
    }
    this.schedulePoll();
  }

  /**
   * Reads again soon while some running plan is not followed by a stream,
   * else at the slower pace. A hidden page neither reads nor holds streams
   * (their connections are for the tabs in view); it reads afresh when shown.
   */
  schedulePoll(): void {
    window.clearTimeout(this.#pollTimer);
    if (this.#stopped) return;
    if (document.visibilityState !== "visible") {
      this.#watches.closeAll();
      return;
    }
    const running = this.#list.plans().filter(isLive);
    this.#watches.sync(running);
    const unwatched = running.some((p) => !this.#watches.has(p.id));
    this.#pollTimer = window.setTimeout(() => void this.refresh(), unwatched ? POLL_MS : REFRESH_MS);
  }

  /**
   * Reads one plan afresh, after an action found it other than its card
   * said: the card is redrawn, or removed when the plan is gone. Answers the
   * plan, or undefined when it no longer exists; other failures are thrown.
   */
  async reread(id: string): Promise<Plan | undefined> {
    try {
      const { plan } = await executionsApi.getExecution({ id }, READ_TIMEOUT);
      if (plan) this.#list.upsert(plan);
      this.schedulePoll();
      return plan;
    } catch (error) {
      if (!isNotFound(error)) throw error;
      this.forget(id);
      return undefined;
    }
  }

  /** A plan that no longer exists: its card and its stream go. */
  forget(id: string): void {
    this.#list.remove(id);
    this.#watches.unwatch(id);
  }

  /**
   * Once older pages are shown, a refresh reads on past the newest page, a
   * page at a time, as far back as the oldest plan shown: a plan missing from
   * all of it was deleted elsewhere, not moved down. Answers what it read, or
   * undefined when that failed (removals below the newest page wait for the
   * next refresh).
   */
  async #readOlderShown(newest: Plan[]): Promise<Plan[] | undefined> {
    const shown = this.#list.plans().map(createdMs);
    if (shown.length === 0) return [];
    const oldest = Math.min(...shown);
    const read: Plan[] = [];
    let page = newest;
    try {
      // Plans come newest first: a page ending before the oldest shown was created holds the last of them.
      while (page.length >= LIST_LIMIT && createdMs(page.at(-1)!) >= oldest) {
        ({ plans: page } = await executionsApi.listExecutions({ before: page.at(-1)!.id }, READ_TIMEOUT));
        if (this.#stopped) return undefined;
        read.push(...page);
      }
    } catch (error) {
      if (isSignedOut(error)) throw error;
      return undefined;
    }
    return read;
  }

  /** `older`: the plans read past the newest page (pagedBack), or undefined when they could not be. */
  #show(plans: Plan[], older: Plan[] | undefined): void {
    const fresh = new Set(plans.map((p) => p.id));
    const below = new Set(older?.map((p) => p.id));
    for (const id of this.#list.ids()) {
      if (fresh.has(id) || below.has(id)) continue;
      // Not read this time: keep it unless it is known to be gone.
      if (this.#list.pagedBack && older === undefined) continue;
      this.forget(id);
    }
    // Newest first, as the service orders them.
    for (const [index, plan] of plans.entries()) this.#list.upsert(plan, index);
    // The older pages shown are brought up to date in place; plans not shown there are not added.
    for (const plan of older ?? []) if (this.#list.has(plan.id)) this.#list.upsert(plan);
    if (!this.#list.pagedBack) this.#list.olderButton.hidden = plans.length < LIST_LIMIT;
    this.#list.loaded();
    this.#list.serviceAnswered();
  }
}

/** One WatchExecution stream per followed plan, at most MAX_STREAMS at once. */
class PlanWatches {
  readonly #streams = new Map<string, AbortController>();
  readonly #context: ViewContext;
  readonly #handlers: { onPlan(plan: Plan): void; onEnded(): void };
  #unsupported = false;
  /** After a stream fails, polling alone for a while, so a failing server is not hammered with reconnects. */
  #pausedUntil = 0;
  #stopped = false;

  constructor(context: ViewContext, handlers: { onPlan(plan: Plan): void; onEnded(): void }) {
    this.#context = context;
    this.#handlers = handlers;
  }

  has(id: string): boolean {
    return this.#streams.has(id);
  }

  /** Opens streams for running plans not yet followed, while there is room. */
  sync(running: Plan[]): void {
    if (this.#unsupported || Date.now() < this.#pausedUntil) return;
    for (const plan of running) {
      if (this.#streams.size >= MAX_STREAMS) break;
      if (!this.#streams.has(plan.id)) void this.#watch(plan.id);
    }
  }

  unwatch(id: string): void {
    this.#streams.get(id)?.abort();
    this.#streams.delete(id);
  }

  /** Ends every stream; `sync` opens them again. */
  closeAll(): void {
    for (const controller of this.#streams.values()) controller.abort();
    this.#streams.clear();
  }

  stop(): void {
    this.#stopped = true;
    this.closeAll();
  }

  async #watch(id: string): Promise<void> {
    const controller = new AbortController();
    this.#streams.set(id, controller);
    try {
      for await (const update of executionsApi.watchExecution({ id }, { signal: controller.signal })) {
        if (update.plan) this.#handlers.onPlan(update.plan);
      }
    } catch (error) {
      if (controller.signal.aborted || this.#stopped) return;
      if (isSignedOut(error)) return this.#context.signedOut();
      if (isUnimplemented(error)) this.#unsupported = true;
      // A plan deleted while followed ends its watch with not_found: the catch-up below drops it, with no pause.
      else if (!isNotFound(error)) this.#pausedUntil = Date.now() + 3 * POLL_MS;
    } finally {
      if (this.#streams.get(id) === controller) this.#streams.delete(id);
    }
    // The stream ended (the plan stopped at the gate, ended, or the server let go): catch up and re-plan.
    if (!this.#stopped) this.#handlers.onEnded();
  }
}

function createdMs(plan: Plan): number {
  return plan.createdAt ? timestampMs(plan.createdAt) : 0;
}

function isLive(plan: Plan): boolean {
  return plan.status === "running";
}
