import { StageFailure, type StageInput, type StageOutcome, type StageWork, type StageWorkResolver } from "../../src/engine/stage-work.js";

/** What a finished stage reports in these tests, like the real outcomes would. */
export function typicalOutcome(input: Pick<StageInput, "planId" | "stageId" | "revision">): StageOutcome {
  const outcome: StageOutcome = { output: { stage: input.stageId, planId: input.planId } };
  if (input.stageId === "understand") outcome.project = { id: `prj_${input.planId.slice(4, 12)}`, name: "Test project", slug: "test-project" };
  // Each revision at its own preview, as the real build and assemble stages keep them.
  if (input.stageId === "build" || input.stageId === "assemble")
    outcome.previewUrl = `/preview/${input.planId}${input.revision ? `-r${input.revision.number}` : ""}/`;
  if (input.stageId === "publish") outcome.publishedUrl = `/sites/${input.planId}/`;
  return outcome;
}

/** Stage work that finishes at once, and counts every invocation. */
export function instantWork(): StageWorkResolver & { calls: StageInput[] } {
  const calls: StageInput[] = [];
  const resolver: StageWorkResolver = () => async (input) => {
    calls.push(input);
    return typicalOutcome(input);
  };
  return Object.assign(resolver, { calls });
}

/** One invocation of stage work that waits for the test to decide how it ends. */
export interface HeldStage {
  input: StageInput;
  succeed(outcome?: StageOutcome): void;
  fail(error: unknown): void;
}

/**
 * Stage work under the test's control: every invocation is queued and waits
 * until the test calls `succeed` or `fail` on it. Optionally some stage ids
 * run instantly (`instant`).
 */
export class HeldWork {
  readonly #waiting: HeldStage[] = [];
  readonly #waiters: ((stage: HeldStage) => void)[] = [];
  readonly calls: StageInput[] = [];
  instant = new Set<string>();

  readonly resolver: StageWorkResolver =
    (_outcome: string, stageId: string): StageWork =>
    async (input) => {
      this.calls.push(input);
      if (this.instant.has(stageId)) return typicalOutcome(input);
      return new Promise<StageOutcome>((resolve, reject) => {
        const held: HeldStage = { input, succeed: (o) => resolve(o ?? typicalOutcome(input)), fail: reject };
        input.signal.addEventListener("abort", () => reject(input.signal.reason), { once: true });
        const waiter = this.#waiters.shift();
        if (waiter) waiter(held);
        else this.#waiting.push(held);
      });
    };

  /** The next invocation (already started or still to come). */
  next(timeoutMs = 10_000): Promise<HeldStage> {
    const ready = this.#waiting.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no stage work started in time")), timeoutMs);
      this.#waiters.push((stage) => {
        clearTimeout(timer);
        resolve(stage);
      });
    });
  }
}

export { StageFailure };

/**
 * Stage work scripted by the plan's goal, so each test's plan behaves as the
 * test says without shared switches:
 * - `fail@<stage>`: the first attempt throws StageFailure("writer_error", …);
 * - `throw@<stage>`: the first attempt throws a plain Error carrying internals;
 * - `transient<N>@<stage>`: attempts 1..N throw StageFailure("upstream_timeout", …), a transient error;
 * - `hold@<stage>`: every attempt waits until the test releases it (`held`);
 * - `half@<stage>`: reports progress 0.5, then holds;
 * - `warn`: publish reports a warning.
 * Anything else finishes at once with `typicalOutcome`.
 */
export class ScriptedWork {
  readonly calls: StageInput[] = [];
  readonly #held = new Map<string, HeldStage>();
  readonly #heldWaiters = new Map<string, (stage: HeldStage) => void>();

  readonly resolver: StageWorkResolver = (_outcome, stageId) => async (input) => {
    this.calls.push(input);
    const has = (directive: string) => input.goal.split(/\s+/).includes(`${directive}@${stageId}`);
    if (has("fail") && input.attempt === 1) throw new StageFailure("writer_error", `the writer could not finish the ${stageId} stage`);
    const transient = input.goal.split(/\s+/).find((word) => word.startsWith("transient") && word.endsWith(`@${stageId}`));
    if (transient && input.attempt <= Number(transient.slice("transient".length, -`@${stageId}`.length))) {
      throw new StageFailure("upstream_timeout", `the model did not answer in time (attempt ${input.attempt})`);
    }
    if (has("throw") && input.attempt === 1) throw new Error("connection to 10.0.0.7:5432 failed: password=hunter2");
    if (has("half")) await input.progress(0.5);
    if (has("hold") || has("half")) {
      return new Promise<StageOutcome>((resolve, reject) => {
        const held: HeldStage = { input, succeed: (o) => resolve(o ?? typicalOutcome(input)), fail: reject };
        input.signal.addEventListener("abort", () => reject(input.signal.reason), { once: true });
        const key = `${input.planId}/${stageId}`;
        const waiter = this.#heldWaiters.get(key);
        this.#heldWaiters.delete(key);
        if (waiter) waiter(held);
        else this.#held.set(key, held);
      });
    }
    const outcome = typicalOutcome(input);
    if (stageId === "publish" && input.goal.split(/\s+/).includes("warn")) outcome.warning = "written by the offline writer";
    return outcome;
  };

  /** The held invocation of `stageId` of plan `planId`, once it started. */
  held(planId: string, stageId: string, timeoutMs = 10_000): Promise<HeldStage> {
    const key = `${planId}/${stageId}`;
    const ready = this.#held.get(key);
    if (ready) {
      this.#held.delete(key);
      return Promise.resolve(ready);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`stage ${key} did not start in time`)), timeoutMs);
      this.#heldWaiters.set(key, (stage) => {
        clearTimeout(timer);
        resolve(stage);
      });
    });
  }

  /** How many times the stage of the plan ran. */
  runs(planId: string, stageId: string): number {
    return this.calls.filter((c) => c.planId === planId && c.stageId === stageId).length;
  }
}
