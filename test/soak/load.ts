import { setTimeout as sleep } from "node:timers/promises";
import type { PlanLedger } from "./plan-ledger.js";
import {
  cancelPlan,
  chat,
  chatStream,
  createPlan,
  deletePlan,
  listPlans,
  readPlan,
  resumePlan,
  revisePlan,
  type Credentials,
  type Kind,
  type Sample,
  type Target,
} from "./traffic.js";

export interface LoadOptions {
  /** Requests in flight at any time. */
  concurrency: number;
  /** New plans per second across the instances (the engine must keep up for the accounting to end). */
  createsPerSecond: number;
  /** Share of ebooks among new plans. */
  ebookShare: number;
}

/**
 * Relative weights of the request kinds; a create without a token, or an
 * approve, revise, cancel or delete with no plan for it (see PlanLedger's
 * fates), becomes a read.
 */
const MIX: [Kind, number][] = [
  ["read", 23],
  ["list", 8],
  ["chat", 26],
  ["stream", 26],
  ["create", 8],
  ["approve", 5],
  ["revise", 2],
  ["cancel", 1],
  ["delete", 1],
];
/** Phases in which no plan is cancelled or deleted: the SIGKILL check follows the stages the killed instance held to their interruption. */
const NO_STOPS = new Set(["sigkill"]);
const FEEDBACK = ["Put the prices first and make the tone calmer", 'Call it "Harbour Lights" and drop the last page'];

const GOALS = [
  "a website for a harbour kayak club with guided trips for beginners",
  "a website for a neighbourhood bakery that sells sourdough and pies",
  "an ebook on growing vegetables on a small city balcony",
  "a website for a piano teacher offering lessons to adults",
];

/**
 * Keeps `concurrency` requests in flight against the live instances, in a
 * fixed mix of creates, reads, lists, approvals and chat (streamed or not),
 * until stopped. Every request becomes a Sample; the current `phase` label
 * says which part of the soak it belongs to.
 */
export class LoadGenerator {
  readonly samples: Sample[] = [];
  phase = "steady";
  #running = false;
  #workers: Promise<void>[] = [];
  #tokens = 0;
  #lastRefill = performance.now();
  #next = 0;

  constructor(
    readonly options: LoadOptions,
    /** The instances to send to now (a killed one is left out while it is down). */
    readonly targets: () => Target[],
    readonly credentials: Credentials,
    readonly ledger: PlanLedger,
  ) {}

  start(): void {
    this.#running = true;
    this.#workers = Array.from({ length: this.options.concurrency }, () => this.#work());
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
  }

  record(sample: Sample): void {
    this.samples.push(sample);
  }

  async #work(): Promise<void> {
    while (this.#running) {
      const live = this.targets();
      if (live.length === 0) {
        await sleep(50);
        continue;
      }
      const target = live[this.#next++ % live.length]!;
      await this.#one(target, pick());
    }
  }

  async #one(target: Target, kind: Kind): Promise<void> {
    const { credentials, ledger, phase } = this;
    if (kind === "create" && this.#takeToken()) {
      const tag = ledger.nextTag();
      const outcome = Math.random() < this.options.ebookShare ? "ebook" : "website";
      const goal = `${GOALS[tag % GOALS.length]!.replace(/^a website|^an ebook/, outcome === "ebook" ? "an ebook" : "a website")} [soak-${tag}]`;
      const { sample, body } = await createPlan(target, credentials, phase, goal, outcome);
      this.record(sample);
      if (body) ledger.accept(body.plan);
      return;
    }
    if (kind === "approve") {
      const candidate = ledger.toApprove()[0];
      if (candidate) {
        candidate.approved = true;
        candidate.busy = true;
        const { sample, body } = await resumePlan(target, credentials, phase, candidate.id, ["review"]);
        candidate.busy = false;
        this.record(sample);
        if (body) ledger.note(body.plan);
        else candidate.approved = false;
        return;
      }
    }
    if (kind === "revise") {
      const candidate = ledger.toRevise()[0];
      if (candidate) {
        candidate.busy = true;
        const { sample, body } = await revisePlan(target, credentials, phase, candidate.id, FEEDBACK[candidate.revisions % FEEDBACK.length]!);
        candidate.busy = false;
        this.record(sample);
        if (body) {
          candidate.revisions++;
          ledger.note(body.plan);
        }
        return;
      }
    }
    if ((kind === "cancel" || kind === "delete") && !NO_STOPS.has(phase)) {
      const candidate = ledger.toStop(kind)[0];
      if (candidate) {
        candidate.busy = true;
        if (kind === "cancel") {
          const { sample, body } = await cancelPlan(target, credentials, phase, candidate.id);
          this.record(sample);
          if (body) {
            candidate.cancelled = body.plan;
            ledger.note(body.plan);
          }
        } else {
          // Marked first: a read of it from now on may rightly be 404.
          candidate.deleted = true;
          const { sample } = await deletePlan(target, credentials, phase, candidate.id);
          this.record(sample);
          if (sample.result !== "ok") candidate.deleted = false;
        }
        candidate.busy = false;
        return;
      }
    }
    if (kind === "list") {
      this.record((await listPlans(target, credentials, phase)).sample);
      return;
    }
    if (kind === "chat") {
      this.record((await chat(target, credentials, phase)).sample);
      return;
    }
    if (kind === "stream") {
      this.record(await chatStream(target, credentials, phase));
      return;
    }
    // A read of a plan picked at random among those started (or the list, before the first).
    const plans = [...ledger.plans.values()].filter((p) => !p.deleted);
    const entry = plans[Math.floor(Math.random() * plans.length)];
    if (!entry) {
      this.record((await listPlans(target, credentials, phase)).sample);
      return;
    }
    const { sample, body } = await readPlan(target, credentials, phase, entry.id);
    // A read that crossed the plan's delete: its 404 is the right answer.
    if (entry.deleted && sample.status === 404 && sample.errorType === "not_found") Object.assign(sample, { result: "ok" });
    this.record(sample);
    if (body) ledger.note(body.plan);
  }

  #takeToken(): boolean {
    const now = performance.now();
    this.#tokens = Math.min(2, this.#tokens + ((now - this.#lastRefill) / 1000) * this.options.createsPerSecond);
    this.#lastRefill = now;
    if (this.#tokens < 1) return false;
    this.#tokens--;
    return true;
  }
}

function pick(): Kind {
  const total = MIX.reduce((n, [, w]) => n + w, 0);
  let r = Math.random() * total;
  for (const [kind, weight] of MIX) {
    r -= weight;
    if (r < 0) return kind;
  }
  return "read";
}
