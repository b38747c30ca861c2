import { setTimeout as sleep } from "node:timers/promises";
import type { RestPlan } from "../support/executions.js";
import { planHistory, readPlan, resumePlan, type Credentials, type Sample, type Target } from "./traffic.js";

/**
 * What the load does to a plan besides driving it to the end, drawn when it
 * is accepted: cancel it (at any point before approval), delete it (at any
 * point), or send feedback at the gate once or twice before approving.
 */
export type Fate = "plain" | "cancel" | "delete" | "revise";
const FATES: [Fate, number][] = [
  ["plain", 60],
  ["cancel", 15],
  ["delete", 10],
  ["revise", 15],
];
/** Stages a revision runs again (the gate is reached again too); the others run once. */
const REVISED_STAGES = new Set(["outline", "write", "build", "assemble", "review"]);
/** Writer requests a revision does not make again: the brief, which a revision has the model revise instead (REVISED_BRIEFS). */
const BRIEFS = new Set(["website_brief", "ebook_brief"]);
/** The request each revision makes once, first: the brief revised. */
const REVISED_BRIEFS: Record<string, string> = { website: "revised_website_brief", ebook: "revised_ebook_brief" };

/** What the ledger knows of one plan. */
export interface LedgerPlan {
  id: string;
  /** The `[soak-N]` tag of its goal. */
  tag: number;
  outcome: string;
  /** `accepted`: a 202 reached the client. `unanswered`: found in the database, its 202 never arrived (instance killed mid-request). */
  via: "accepted" | "unanswered";
  /** Resumes this client made, by the stage they re-ran. */
  resumes: Map<string, number>;
  /** Times the client saw the plan interrupted (a lease expired) or failed (a stage failed). */
  interrupted: number;
  failed: number;
  approved: boolean;
  last: RestPlan | undefined;
  fate: Fate;
  /** Revisions to ask for at the gate before approving (fate `revise`). */
  revisionsWanted: number;
  /** Feedback answered 202. */
  revisions: number;
  /** A request that changes the plan is in flight; nothing else may act on it meanwhile (else a 409 or 404 of a race the soak made itself). */
  busy: boolean;
  /** The plan as the cancel's 202 answered it. */
  cancelled: RestPlan | undefined;
  /** The delete answered 204 (or is in flight: `busy` too). */
  deleted: boolean;
  /** Automatic retries by stage, from the history (read by `verdict` for stages with more attempts than resumes explain). */
  retries: Map<string, number> | undefined;
}

/** Writer requests one clean run of each stage makes with the scripted model (test/outcomes/support/model-answers.ts). */
export const WRITER_REQUESTS: Record<string, Record<string, number>> = {
  website: { website_brief: 1, site_outline: 1, page_content: 3 },
  ebook: { ebook_brief: 1, book_outline: 1, chapter: 3 },
};

export interface LedgerVerdict {
  accepted: number;
  unanswered: number;
  succeeded: number;
  /** Accepted plans not succeeded at the end. */
  lost: string[];
  /** Plans that were never failed or interrupted. */
  clean: number;
  resumes: number;
  interruptions: number;
  failures: number;
  /** Stages whose attempts differ from 1 + the resumes made for them. */
  attemptMismatches: string[];
  cancelled: number;
  deleted: number;
  revised: number;
}

/**
 * Every plan the soak started, and what the soak did to it. Only this
 * ledger resumes failed or interrupted plans, one request per failure, so a
 * stage's `attempts` must end at exactly 1 + the resumes made for it; any
 * other number is a stage run twice (or a run lost).
 */
export class PlanLedger {
  readonly plans = new Map<string, LedgerPlan>();
  /** Why the stages this ledger resumed had stopped, by error type. */
  readonly resumedBecause = new Map<string, number>();
  #tags = 0;

  nextTag(): number {
    return ++this.#tags;
  }

  /** With `fate`, the plan's fate is that one instead of drawn (a probe that reads its plan back must find it). */
  accept(plan: RestPlan, via: LedgerPlan["via"] = "accepted", fate?: Fate): LedgerPlan {
    const known = this.plans.get(plan.id);
    if (known) return known;
    const entry: LedgerPlan = {
      id: plan.id,
      tag: tagOf(plan.goal),
      outcome: plan.outcome,
      via,
      resumes: new Map(),
      interrupted: 0,
      failed: 0,
      approved: false,
      last: plan,
      fate: fate ?? (via === "accepted" ? drawFate() : "plain"),
      revisionsWanted: 1 + Math.floor(Math.random() * 2),
      revisions: 0,
      busy: false,
      cancelled: undefined,
      deleted: false,
      retries: undefined,
    };
    this.plans.set(plan.id, entry);
    return entry;
  }

  /**
   * Records what a read showed, unless an answer already noted is newer: a
   * read sent before a revise can arrive after the revise's own answer, and
   * its stale "awaiting_approval" would have the load revise a running plan
   * (a 409 the soak made itself).
   */
  note(plan: RestPlan): void {
    const entry = this.plans.get(plan.id);
    if (!entry) return;
    const last = entry.last;
    const older =
      last !== undefined && (Date.parse(plan.updatedAt) < Date.parse(last.updatedAt) || (plan.revisions?.length ?? 0) < (last.revisions?.length ?? 0));
    if (!older) entry.last = plan;
  }

  /** Plans last seen waiting at the gate, not yet approved, and free to act on. */
  awaitingApproval(): LedgerPlan[] {
    return [...this.plans.values()].filter((p) => !p.approved && !p.busy && !p.cancelled && !p.deleted && p.last?.status === "awaiting_approval");
  }

  /** Plans whose fate is to be cancelled or deleted and that nothing acts on now; never a plan approved (a succeeded plan cannot be cancelled). */
  toStop(fate: "cancel" | "delete"): LedgerPlan[] {
    return [...this.plans.values()].filter((p) => p.fate === fate && !p.busy && !p.cancelled && !p.deleted && (fate === "delete" || !p.approved));
  }

  /** Plans at the gate that still want feedback. */
  toRevise(): LedgerPlan[] {
    return this.awaitingApproval().filter((p) => p.fate === "revise" && p.revisions < p.revisionsWanted);
  }

  /** Plans to approve at the gate: every one that wants no (more) feedback. */
  toApprove(): LedgerPlan[] {
    return this.awaitingApproval().filter((p) => p.fate !== "revise" || p.revisions >= p.revisionsWanted);
  }

  /** Plans not yet seen succeeded, and neither cancelled nor deleted. */
  unsettled(): LedgerPlan[] {
    return [...this.plans.values()].filter((p) => p.last?.status !== "succeeded" && !p.cancelled && !p.deleted);
  }

  /**
   * Moves one plan on: reads it, approves the gate, resumes a failed or
   * interrupted stage. Answers the plan as last read.
   */
  async advance(target: Target, credentials: Credentials, phase: string, entry: LedgerPlan, record: (s: Sample) => void): Promise<RestPlan | undefined> {
    if (entry.busy) return entry.last;
    entry.busy = true;
    try {
      return await this.#advance(target, credentials, phase, entry, record);
    } finally {
      entry.busy = false;
    }
  }

  async #advance(target: Target, credentials: Credentials, phase: string, entry: LedgerPlan, record: (s: Sample) => void): Promise<RestPlan | undefined> {
    const read = await readPlan(target, credentials, phase, entry.id);
    record(read.sample);
    const plan = read.body?.plan;
    if (!plan) return undefined;
    entry.last = plan;
    if (plan.status === "awaiting_approval") {
      const approved = await resumePlan(target, credentials, phase, entry.id, ["review"]);
      record(approved.sample);
      if (approved.body) {
        entry.approved = true;
        entry.last = approved.body.plan;
      }
    } else if (plan.status === "failed" || plan.status === "interrupted") {
      await this.resume(target, credentials, phase, entry, plan, record);
    }
    return entry.last;
  }

  /** Resumes a failed or interrupted plan, counting the resume against the stage it re-runs. */
  async resume(target: Target, credentials: Credentials, phase: string, entry: LedgerPlan, plan: RestPlan, record: (s: Sample) => void): Promise<void> {
    const stage = plan.stages.find((s) => s.state === "failed");
    if (!stage) throw new Error(`plan ${plan.id} is ${plan.status} without a failed stage: ${JSON.stringify(plan.stages)}`);
    const resumed = await resumePlan(target, credentials, phase, entry.id);
    record(resumed.sample);
    if (!resumed.body) return;
    if (plan.status === "interrupted") entry.interrupted++;
    else entry.failed++;
    const why = stage.error?.type ?? "unknown";
    this.resumedBecause.set(why, (this.resumedBecause.get(why) ?? 0) + 1);
    entry.resumes.set(stage.id, (entry.resumes.get(stage.id) ?? 0) + 1);
    entry.last = resumed.body.plan;
    const after = resumed.body.plan.stages.find((s) => s.id === stage.id);
    if (after?.attempts !== stage.attempts + 1) {
      throw new Error(`resume of ${plan.id} left ${stage.id} at attempts ${after?.attempts}, expected ${stage.attempts + 1}`);
    }
  }

  /**
   * Drives every plan to `succeeded` (approving gates, resuming failures)
   * until none is left or the deadline passes. `targets` answers where to
   * send the next request (any live instance).
   */
  async settle(targets: () => Target[], credentials: Credentials, phase: string, deadline: number, record: (s: Sample) => void): Promise<void> {
    let turn = 0;
    while (Date.now() < deadline) {
      const open = this.unsettled();
      if (open.length === 0) return;
      const live = targets();
      // A few at a time: the instances are also finishing the stages themselves.
      for (let i = 0; i < open.length; i += 8) {
        await Promise.all(open.slice(i, i + 8).map((entry, j) => this.advance(live[(turn + j) % live.length]!, credentials, phase, entry, record)));
        turn++;
      }
      await sleep(250);
    }
  }

  /**
   * The accounting. Expected attempts of a succeeded stage: 1, plus one per
   * resume this client made, per revision (for the stages a revision runs
   * again), and per automatic retry after a transient error, which the
   * plan's history records (`stage_retrying`); the history is read only for
   * stages whose attempts are above the rest.
   */
  async verdict(target: Target, credentials: Credentials, phase: string, record: (s: Sample) => void): Promise<LedgerVerdict> {
    const plans = [...this.plans.values()];
    const attemptMismatches: string[] = [];
    for (const entry of plans) {
      for (const stage of entry.last?.stages ?? []) {
        if (stage.state !== "succeeded") continue;
        let expected = 1 + (entry.resumes.get(stage.id) ?? 0) + (REVISED_STAGES.has(stage.id) ? entry.revisions : 0);
        if (stage.attempts > expected) {
          entry.retries ??= await this.#retries(target, credentials, phase, entry.id, record);
          expected += entry.retries.get(stage.id) ?? 0;
        }
        if (stage.attempts !== expected) attemptMismatches.push(`${entry.id} ${stage.id}: attempts ${stage.attempts}, expected ${expected}`);
      }
    }
    const accepted = plans.filter((p) => p.via === "accepted");
    return {
      accepted: accepted.length,
      unanswered: plans.length - accepted.length,
      succeeded: plans.filter((p) => p.last?.status === "succeeded").length,
      lost: accepted.filter((p) => p.last?.status !== "succeeded" && !p.cancelled && !p.deleted).map((p) => `${p.id} (${p.last?.status ?? "never read"})`),
      clean: plans.filter((p) => p.resumes.size === 0).length,
      resumes: plans.reduce((n, p) => n + [...p.resumes.values()].reduce((a, b) => a + b, 0), 0),
      interruptions: plans.reduce((n, p) => n + p.interrupted, 0),
      failures: plans.reduce((n, p) => n + p.failed, 0),
      attemptMismatches,
      cancelled: plans.filter((p) => p.cancelled && !p.deleted).length,
      deleted: plans.filter((p) => p.deleted).length,
      revised: plans.filter((p) => p.revisions > 0 && !p.cancelled && !p.deleted).length,
    };
  }

  /** Automatic retries of each stage of a plan, from its history. */
  async #retries(target: Target, credentials: Credentials, phase: string, planId: string, record: (s: Sample) => void): Promise<Map<string, number>> {
    const history = await planHistory(target, credentials, phase, planId);
    record(history.sample);
    const retries = new Map<string, number>();
    for (const event of history.body?.events ?? []) {
      if (event.type === "stage_retrying" && event.stage) retries.set(event.stage, (retries.get(event.stage) ?? 0) + 1);
    }
    return retries;
  }

  /**
   * Plans never resumed whose writer requests (as the upstream served them)
   * differ from one clean run of each stage: a stage that ran twice asks the
   * model twice. Plans with an automatic retry are left out (a try that
   * failed after the model answered, a stream dropped mid-way, asks again by
   * design); `verdict` finds those, so call it first.
   */
  writerMismatches(served: Map<number, Map<string, number>>): string[] {
    const problems: string[] = [];
    for (const entry of this.plans.values()) {
      if (entry.resumes.size > 0 || entry.last?.status !== "succeeded" || (entry.retries?.size ?? 0) > 0) continue;
      const once = WRITER_REQUESTS[entry.outcome] ?? {};
      const expected: Record<string, number> = Object.fromEntries(
        Object.entries(once).map(([schema, n]) => [schema, BRIEFS.has(schema) ? n : n * (1 + entry.revisions)]),
      );
      const revisedBrief = REVISED_BRIEFS[entry.outcome];
      if (revisedBrief && entry.revisions > 0) expected[revisedBrief] = entry.revisions;
      const got = served.get(entry.tag) ?? new Map<string, number>();
      for (const schema of new Set([...Object.keys(expected), ...got.keys()])) {
        if ((got.get(schema) ?? 0) !== (expected[schema] ?? 0)) {
          problems.push(`${entry.id} [soak-${entry.tag}] ${schema}: ${got.get(schema) ?? 0} served, expected ${expected[schema] ?? 0}`);
        }
      }
    }
    return problems;
  }

  /**
   * How the plans the load stopped or revised ended, as problems (none when
   * all is well): a cancelled plan has no stage event after its `cancelled`
   * event and its stages are as the cancel answered them; a deleted plan and
   * its history are 404; a revised plan carries each revision, reached the
   * gate again after the last one, and is at the gate or published. Also
   * answers what each cancel found the plan doing.
   */
  async endings(
    target: Target,
    credentials: Credentials,
    phase: string,
    record: (s: Sample) => void,
  ): Promise<{ problems: string[]; cancelledFrom: Map<string, number> }> {
    const problems: string[] = [];
    /** The status each cancel found the plan in (`running` is a stage stopped mid-work). */
    const cancelledFrom = new Map<string, number>();
    for (const entry of this.plans.values()) {
      if (entry.deleted) {
        const read = await readPlan(target, credentials, phase, entry.id);
        const history = await planHistory(target, credentials, phase, entry.id);
        record(read.sample);
        record(history.sample);
        for (const [what, sample] of [["plan", read.sample] as const, ["history", history.sample] as const]) {
          if (sample.status !== 404 || sample.errorType !== "not_found")
            problems.push(`deleted ${entry.id}: its ${what} answered ${sample.status} ${sample.errorType ?? ""}`);
        }
        continue;
      }
      if (!entry.cancelled && entry.revisions === 0) continue;
      const read = await readPlan(target, credentials, phase, entry.id);
      const history = await planHistory(target, credentials, phase, entry.id);
      record(read.sample);
      record(history.sample);
      const plan = read.body?.plan;
      const events = history.body?.events;
      if (!plan || !events) {
        problems.push(`${entry.id}: plan ${read.sample.status}, history ${history.sample.status}`);
        continue;
      }
      if (entry.cancelled) {
        const at = events.findIndex((e) => e.type === "cancelled");
        if (at === -1) {
          problems.push(`cancelled ${entry.id}: no cancelled event`);
          continue;
        }
        const from = events[at]!.detail?.from ?? "unknown";
        cancelledFrom.set(from, (cancelledFrom.get(from) ?? 0) + 1);
        const cancelledAt = Date.parse(events[at]!.at);
        const after = events.filter((e, i) => (i > at || Date.parse(e.at) > cancelledAt) && (e.stage !== null || e.type === "stage_started"));
        if (after.length > 0) problems.push(`cancelled ${entry.id}: after the cancel ${after.map((e) => `${e.type} ${e.stage}#${e.attempt}`).join(", ")}`);
        const was = entry.cancelled.stages.map((s) => `${s.id} ${s.state} ${s.attempts}`).join(", ");
        const is = plan.stages.map((s) => `${s.id} ${s.state} ${s.attempts}`).join(", ");
        if (plan.status !== "cancelled" || entry.cancelled.status !== "cancelled" || was !== is) {
          problems.push(`cancelled ${entry.id}: answered ${entry.cancelled.status} [${was}], now ${plan.status} [${is}]`);
        }
        continue;
      }
      const requested = events.filter((e) => e.type === "revision_requested").length;
      const lastRequest = events.findLastIndex((e) => e.type === "revision_requested");
      const backAtGate = events.slice(lastRequest + 1).some((e) => e.type === "awaiting_approval");
      if (
        !["succeeded", "awaiting_approval"].includes(plan.status) ||
        plan.revisions.length !== entry.revisions ||
        requested !== entry.revisions ||
        !backAtGate
      ) {
        problems.push(
          `revised ${entry.id}: ${entry.revisions} revision(s) answered 202; plan ${plan.status} with ${plan.revisions.length}, ` +
            `history ${requested} revision_requested, ${backAtGate ? "" : "not "}back at the gate after the last`,
        );
      }
    }
    return { problems, cancelledFrom };
  }
}

function drawFate(): Fate {
  let r = Math.random() * FATES.reduce((n, [, w]) => n + w, 0);
  for (const [fate, weight] of FATES) {
    r -= weight;
    if (r < 0) return fate;
  }
  return "plain";
}

export function tagOf(goal: string): number {
  return Number(/\[soak-(\d+)\]/.exec(goal)?.[1] ?? -1);
}
