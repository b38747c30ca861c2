import type { JsonValue } from "@bufbuild/protobuf";
import type { InterruptedStage, StageChange, StageClaim, StageStore, StageWrite } from "../../src/engine/stage-store.js";

/** Where a stage stands in the in-memory store. */
export type MemoryStageState = "pending" | "waiting" | "leased" | "succeeded" | "failed" | "interrupted" | "cancelled";

interface MemoryStage {
  position: number;
  stageId: string;
  state: MemoryStageState;
  attempts: number;
  readyAt: number;
  leaseToken: number | null;
  leaseExpiresAt: number;
  output: JsonValue | null;
  progress: number;
}

interface MemoryPlan {
  id: string;
  outcome: string;
  goal: string;
  accountId: string;
  stages: MemoryStage[];
}

/**
 * A StageStore in memory: each plan is a line of stages, the next one made
 * ready when one succeeds. It holds the same promises the Postgres store
 * does (a stage leased to one owner at a time, fenced writes, no renewal of
 * an expired lease), so the engine can be tested on its own.
 */
export class InMemoryStageStore implements StageStore {
  readonly plans = new Map<string, MemoryPlan>();
  readonly #listeners = new Set<() => void>();
  #nextToken = 1;
  #tick = 0;

  /** Adds a plan whose first stage is waiting for a worker. */
  addPlan(id: string, stageIds: readonly string[], fields: { outcome?: string; goal?: string; accountId?: string } = {}): void {
    const stages = stageIds.map((stageId, position) => ({
      position,
      stageId,
      state: (position === 0 ? "waiting" : "pending") as MemoryStageState,
      attempts: position === 0 ? 1 : 0,
      readyAt: this.#tick++,
      leaseToken: null,
      leaseExpiresAt: 0,
      output: null,
      progress: 0,
    }));
    this.plans.set(id, { id, outcome: fields.outcome ?? "website", goal: fields.goal ?? "A goal", accountId: fields.accountId ?? "acc_memory", stages });
    this.#wake();
  }

  /** Runs an interrupted or failed stage again, as a resume does. */
  retry(planId: string, position: number): void {
    const stage = this.#plan(planId).stages[position]!;
    Object.assign(stage, { state: "waiting", attempts: stage.attempts + 1, readyAt: this.#tick++ });
    this.#wake();
  }

  /** Ends every live lease now, as if their workers froze past them. */
  expireLeases(): void {
    for (const plan of this.plans.values()) for (const stage of plan.stages) if (stage.state === "leased") stage.leaseExpiresAt = 0;
  }

  async listenForReady(onReady: () => void): Promise<() => Promise<void>> {
    this.#listeners.add(onReady);
    return async () => void this.#listeners.delete(onReady);
  }

  async claim(owner: string, limit: number, leaseMs: number): Promise<StageClaim[]> {
    const waiting = [...this.plans.values()]
      .flatMap((plan) => plan.stages.filter((s) => s.state === "waiting").map((stage) => ({ plan, stage })))
      .sort((a, b) => a.stage.readyAt - b.stage.readyAt)
      .slice(0, limit);
    return waiting.map(({ plan, stage }) => this.#lease(plan, stage, owner, leaseMs));
  }

  async renew(tokens: readonly number[], leaseMs: number): Promise<ReadonlySet<number>> {
    const held = new Set<number>();
    for (const stage of this.#stages()) {
      if (stage.state !== "leased" || stage.leaseToken === null || !tokens.includes(stage.leaseToken)) continue;
      if (stage.leaseExpiresAt <= Date.now()) continue;
      stage.leaseExpiresAt = Date.now() + leaseMs;
      held.add(stage.leaseToken);
    }
    return held;
  }

  async record(claim: StageClaim, change: StageChange, options: { chainFor?: { owner: string; leaseMs: number } } = {}): Promise<StageWrite> {
    const plan = this.#plan(claim.planId);
    const stage = plan.stages[claim.position]!;
    if (stage.state !== "leased" || stage.leaseToken !== claim.leaseToken || stage.leaseExpiresAt <= Date.now()) return "lost";
    switch (change.kind) {
      case "progress": {
        const progress = Math.round(change.fraction * 100);
        if (progress === stage.progress) return "unchanged";
        stage.progress = progress;
        return "written";
      }
      case "failed":
        Object.assign(stage, { state: "failed", leaseToken: null });
        return "written";
      case "retrying":
        // This store keeps no clock: the retry is ready at once (the backoff is the Postgres store's, tested on it in stage-engine.test.ts).
        Object.assign(stage, { state: "waiting", attempts: stage.attempts + 1, leaseToken: null, readyAt: this.#tick++ });
        this.#wake();
        return "written";
      case "released":
        Object.assign(stage, { state: "waiting", leaseToken: null, readyAt: this.#tick++ });
        this.#wake();
        return "written";
      case "succeeded": {
        Object.assign(stage, { state: "succeeded", leaseToken: null, output: change.outcome.output ?? null, progress: 100 });
        const next = plan.stages[stage.position + 1];
        if (!next) return "written";
        Object.assign(next, { state: "waiting", attempts: next.attempts + 1, readyAt: this.#tick++ });
        if (!options.chainFor) {
          this.#wake();
          return "written";
        }
        return { next: this.#lease(plan, next, options.chainFor.owner, options.chainFor.leaseMs) };
      }
    }
  }

  async interruptExpired(limit: number): Promise<InterruptedStage[]> {
    const interrupted: InterruptedStage[] = [];
    for (const plan of this.plans.values()) {
      for (const stage of plan.stages) {
        if (interrupted.length >= limit || stage.state !== "leased" || stage.leaseExpiresAt > Date.now()) continue;
        Object.assign(stage, { state: "interrupted", leaseToken: null });
        interrupted.push({ planId: plan.id, position: stage.position, stageId: stage.stageId, outcome: plan.outcome });
      }
    }
    return interrupted;
  }

  /** Memory is never away (the engine meets an outage of the store on the Postgres one, in stage-engine.test.ts). */
  isUnavailable(): boolean {
    return false;
  }

  /** Memory holds any value. */
  isUnstorable(): boolean {
    return false;
  }

  async flush(): Promise<void> {}

  /** Each stage's state, in plan order. */
  states(planId: string): MemoryStageState[] {
    return this.#plan(planId).stages.map((s) => s.state);
  }

  stage(planId: string, position: number): Readonly<MemoryStage> {
    return this.#plan(planId).stages[position]!;
  }

  #lease(plan: MemoryPlan, stage: MemoryStage, _owner: string, leaseMs: number): StageClaim {
    Object.assign(stage, { state: "leased", leaseToken: this.#nextToken++, leaseExpiresAt: Date.now() + leaseMs });
    const previous: Record<string, JsonValue> = {};
    for (const s of plan.stages) if (s.state === "succeeded" && s.output !== null) previous[s.stageId] = s.output;
    return {
      leaseToken: stage.leaseToken!,
      planId: plan.id,
      position: stage.position,
      stageId: stage.stageId,
      attempts: stage.attempts,
      accountId: plan.accountId,
      goal: plan.goal,
      outcome: plan.outcome,
      previous,
    };
  }

  #plan(id: string): MemoryPlan {
    const plan = this.plans.get(id);
    if (!plan) throw new Error(`no plan ${id}`);
    return plan;
  }

  *#stages(): Iterable<MemoryStage> {
    for (const plan of this.plans.values()) yield* plan.stages;
  }

  #wake(): void {
    for (const listener of this.#listeners) queueMicrotask(listener);
  }
}
