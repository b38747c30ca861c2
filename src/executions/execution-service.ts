import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type {
  CancelExecutionRequest,
  CreateExecutionRequest,
  DeleteExecutionRequest,
  ExecutionService,
  GetExecutionHistoryRequest,
  GetExecutionRequest,
  PlanSchema,
  ResumeExecutionRequest,
  WatchExecutionRequest,
  WatchExecutionResponseSchema,
} from "../../gen/zero/v1/execution_pb.js";
import { newId } from "../auth/secrets.js";
import { LIST_LIMIT } from "../api/limits.js";
import type { Config } from "../config.js";
import type { Logger } from "../observability/logger.js";
import type { Store } from "../db/database.js";
import type { Notifier } from "./notifier.js";
import type { PlanChangeListener } from "./plan-change-listener.js";
import { newestDraft, type PlanStatus, RESTING_STATUSES } from "../api/plans.js";
import { cancelPlan, initialStages, newPlanState, resumePlan, revisePlan, startsWork, type PlanState } from "./plan-transitions.js";
import { DEFAULT_OUTCOME, isOutcomeId, type OutcomeId } from "../api/outcomes.js";
import { unavailableOutcomes } from "../outcomes/availability.js";
import { requirePrincipal, requireStillAuthenticated } from "../server/access.js";
import { invalidRequest, notFound, ServiceError } from "../server/errors.js";
import { heartbeatMs } from "../server/heartbeats.js";
import {
  limitReachedHeaders,
  rateLimitHeaders,
  readGenerationUsage,
  spendGeneration,
  type GenerationUsage,
  type GenerationWindow,
} from "./generation-limit.js";
import { validFeedback, validGoal } from "./goal.js";
import type { StatementObserver } from "../db/statement-batcher.js";
import { PlanInserter } from "./plan-inserter.js";
import { forgetDeletedPlan, recordDeletedPlan, type RemovePlanFiles } from "./deleted-plans.js";
import { deletePlan, isOwnPlan, LeaseLostError, listRecentPlans, loadPlan, loadPlanHistory, savePlan } from "./plan-repository.js";
import { toPlanMessage } from "./plan-message.js";
import { IdempotencyStore, runIdempotently } from "../server/idempotency.js";

export interface ExecutionServiceDeps {
  store: Store;
  config: Config;
  planChanges: PlanChangeListener;
  notifier: Notifier;
  /** Aborted when the instance begins to shut down: open watches end with `unavailable`. */
  draining?: AbortSignal;
  /** Removes a deleted plan's artifact files (previews, published site or book); the outcomes own where they are. */
  deleteArtifacts?: RemovePlanFiles;
  logger?: Logger;
  /** Told of each group-committed create statement (rows, seconds). */
  observeCreates?: StatementObserver;
}

/** `{plan, unavailable}`: the answer of a create and of a resume, over REST and RPC alike. */
export interface PlanAccepted {
  plan: MessageInitShape<typeof PlanSchema>;
  unavailable: string[];
}

const PLAN_NOT_FOUND = "no plan with that id";
/** How often a watcher re-reads its plan when no notification came. */
const WATCH_POLL_MS = 1000;

/** What finds a plan's files once its record is gone: the slug it showed, and how many revisions (each has a preview). */
function knownFiles(plan: PlanState): { slug?: string; revisions: number } {
  return { slug: plan.project?.slug, revisions: plan.revisions.length };
}

/** A plan's status as a refusal says it to a person. */
const STATUS_IN_WORDS: Record<PlanStatus, string> = {
  running: "is still running",
  awaiting_approval: "is waiting for approval",
  interrupted: "was interrupted",
  failed: "has failed",
  succeeded: "has already succeeded",
  cancelled: "was cancelled",
};

/**
 * `revision` on an approve or a revision names the draft its sender saw: it
 * must still be the plan's newest (0: the first, before any revision), or
 * nothing changes. Otherwise an approve sent as someone else's revision
 * reaches the gate would publish a draft its sender never saw. A retry of an
 * approval that went through passes: the newest draft is still that one.
 */
function requireNewestDraft(plan: PlanState, revision: number): void {
  const newest = newestDraft(plan);
  if (newest === revision) return;
  throw new ServiceError(
    "conflict",
    `the newest draft of plan ${plan.id} is ${draftInWords(newest)}, not ${draftInWords(revision)}; read the plan again and act on the draft it shows`,
  );
}

function draftInWords(revision: number): string {
  return revision === 0 ? "the first draft" : `revision ${revision}'s draft`;
}

/**
 * ExecutionService: the service functions behind both the RPCs and the REST
 * routes. Each reads the caller from the context (authorization already ran),
 * validates, and answers; none waits for a stage.
 */
export function executionService(deps: ExecutionServiceDeps): ServiceImpl<typeof ExecutionService> {
  const { store, config, planChanges, notifier } = deps;
  const db = store.db;
  const window: GenerationWindow = { limit: config.generationLimit, windowSeconds: config.generationWindowSeconds };
  const inserter = new PlanInserter(db, window, { observe: deps.observeCreates });
  const idempotency = new IdempotencyStore(db);

  /** Refuses an outcome this deployment cannot run, naming outcomes only. */
  const requireAvailable = (outcome: OutcomeId, unavailable: string[]) => {
    if (unavailable.includes(outcome)) {
      throw new ServiceError("outcome_unavailable", `the ${outcome} outcome cannot run on this service`, { unavailable });
    }
  };

  const limitReached = (usage: GenerationUsage) =>
    new ServiceError("rate_limited", `the generation limit of ${window.limit} new executions per ${window.windowSeconds} s is reached; try again later`, {
      headers: limitReachedHeaders(usage),
    });

  /**
   * A revision at the gate: the draft stages run again with the feedback,
   * spending one unit of the generation limit. The revision, its history
   * event and the unit are written in one transaction under the plan's lock,
   * so a revise racing an approve ends in exactly one of the two.
   */
  const revise = async (planId: string, feedback: string, revision: number | undefined, context: HandlerContext): Promise<PlanAccepted> => {
    const { accountId } = requirePrincipal(context);
    const unavailable = unavailableOutcomes(config);
    const { plan, wake, usage } = await db.transaction().execute(async (trx) => {
      const before = await loadPlan(trx, planId, { accountId, forUpdate: true });
      if (!before) throw notFound(PLAN_NOT_FOUND);
      if (revision !== undefined) requireNewestDraft(before, revision);
      if (before.status !== "awaiting_approval") {
        throw new ServiceError("conflict", `plan ${planId} ${STATUS_IN_WORDS[before.status]}: feedback is taken only while it waits for approval`);
      }
      requireAvailable(before.outcome, unavailable);
      const spent = await spendGeneration(trx, accountId, window);
      if (!spent.granted) throw limitReached(spent.usage);
      const saved = await savePlan(trx, before, revisePlan(before, feedback, new Date()));
      return { ...saved, usage: spent.usage };
    });
    notifier.planChanged(plan.id);
    if (wake) notifier.stageReady();
    setHeaders(context, rateLimitHeaders(usage));
    return { plan: toPlanMessage(plan), unavailable };
  };

  /** Creates a plan, spending one unit of the generation limit. */
  const create = async (request: CreateExecutionRequest, context: HandlerContext, idempotencyKey?: string): Promise<PlanAccepted> => {
    const { accountId } = requirePrincipal(context);
    const goal = validGoal(request.goal);
    const outcome: OutcomeId = isOutcomeId(request.outcome) ? request.outcome : DEFAULT_OUTCOME;
    const unavailable = unavailableOutcomes(config);
    requireAvailable(outcome, unavailable);

    const stages = initialStages(outcome);
    const id = newId("pln");
    const inserted = await inserter.insert({ id, accountId, goal, outcome, stages, idempotencyKey });
    const usage = { limit: window.limit, used: inserted.used, resetSeconds: inserted.resetSeconds };
    if (!inserted.createdAt) throw limitReached(usage);
    notifier.stageReady();
    setHeaders(context, rateLimitHeaders(usage));
    const plan = newPlanState({ id, accountId, goal, outcome, createdAt: inserted.createdAt });
    return { plan: toPlanMessage(plan), unavailable };
  };

  /** The lease tokens of the runs a change takes away: their engines stop them (Notifier.stageRevoked). */
  const revokedTokens = (before: PlanState, after: PlanState | undefined): number[] =>
    before.stages.filter((stage) => stage.leaseToken !== null && after?.stages[stage.position]?.leaseToken !== stage.leaseToken).map((s) => s.leaseToken!);

  return {
    async cancelExecution(request: CancelExecutionRequest, context: HandlerContext) {
      const { accountId } = requirePrincipal(context);
      if (request.id === "") throw invalidRequest("id is required", "id");
      // Again when a worker's claim took a waiting stage's lease between the locked read and the
      // write: claims do not take the plan's lock, so savePlan refuses and the transaction rolls back.
      for (let attempt = 1; ; attempt++) {
        try {
          const { plan, changed, revoked } = await db.transaction().execute(async (trx) => {
            const before = await loadPlan(trx, request.id, { accountId, forUpdate: true });
            if (!before) throw notFound(PLAN_NOT_FOUND);
            if (before.status === "succeeded") throw new ServiceError("conflict", `plan ${before.id} has already succeeded; there is nothing to cancel`);
            const after = cancelPlan(before);
            if (after === before) return { plan: before, changed: false, revoked: [] };
            // The `cancelled` event is part of this statement (savePlan), so history and state agree.
            const saved = await savePlan(trx, before, after);
            return { plan: saved.plan, changed: true, revoked: revokedTokens(before, saved.plan) };
          });
          if (changed) notifier.planChanged(plan.id);
          if (revoked.length > 0) notifier.stageRevoked(revoked);
          return { plan: toPlanMessage(plan) };
        } catch (error) {
          if (!(error instanceof LeaseLostError) || attempt >= 5) throw error;
        }
      }
    },

    async deleteExecution(request: DeleteExecutionRequest, context: HandlerContext) {
      const { accountId } = requirePrincipal(context);
      if (request.id === "") throw invalidRequest("id is required", "id");
      // One transaction: the plan row is locked (so no stage write of it interleaves), then deleted
      // with its stages and history (ON DELETE CASCADE). Dropping the stage rows is the cancel: a
      // worker still running one finds its lease gone at its next write or heartbeat, or at once
      // through the revocation sent below. The plan's files are recorded as to be swept in the same
      // transaction, so they are removed (DeletedPlanSweeper) whatever becomes of this instance.
      const removeFiles = deps.deleteArtifacts;
      const deleted = await db.transaction().execute(async (trx) => {
        const plan = await loadPlan(trx, request.id, { accountId, forUpdate: true });
        if (!plan) throw notFound(PLAN_NOT_FOUND);
        await deletePlan(trx, plan.id);
        if (removeFiles) await recordDeletedPlan(trx, plan.id, knownFiles(plan), config.stageLeaseMs);
        return plan;
      });
      notifier.planChanged(deleted.id);
      const revoked = revokedTokens(deleted, undefined);
      if (revoked.length > 0) notifier.stageRevoked(revoked);
      // Removed only after the commit, never leaving a plan whose files are missing; now, so its
      // addresses are 404 at once, and again by the sweeper: a stage that was running may still be
      // writing files (a build, a publish) until it notices.
      if (removeFiles) {
        try {
          await removeFiles(deleted.id, knownFiles(deleted), { last: revoked.length === 0 });
          if (revoked.length === 0) await forgetDeletedPlan(db, deleted.id);
        } catch (error) {
          // The plan is gone (a retry would be a 404); the sweeper removes its files.
          deps.logger?.warn({ err: error, planId: deleted.id }, "could not remove a deleted plan's files yet; they are swept later");
        }
      }
      return {};
    },

    async createExecution(request: CreateExecutionRequest, context: HandlerContext): Promise<PlanAccepted> {
      const key = context.requestHeader.get("idempotency-key");
      if (key === null) return create(request, context);
      // The chat gateway's rules, in one place: a retry replays the same plan and spends nothing.
      const { accountId } = requirePrincipal(context);
      const call = { accountId, key, request: { createExecution: { goal: request.goal, outcome: request.outcome } } };
      let first: PlanAccepted | undefined;
      const result = await runIdempotently(idempotency, call, async (checkedKey) => {
        first = await create(request, context, checkedKey);
        return first.plan.id!;
      });
      if (first) return first;
      context.responseHeader.set("idempotent-replayed", "true");
      setHeaders(context, rateLimitHeaders(await readGenerationUsage(db, accountId, window)));
      const plan = await loadPlan(db, result.json, { accountId });
      // The key did create a plan: a 404 would tell a retrying client its create named a missing plan.
      if (!plan) throw new ServiceError("conflict", `the plan this Idempotency-Key created (${result.json}) was deleted; send a new key to create another`);
      return { plan: toPlanMessage(plan), unavailable: unavailableOutcomes(config) };
    },

    async resumeExecution(request: ResumeExecutionRequest, context: HandlerContext): Promise<PlanAccepted> {
      const { accountId } = requirePrincipal(context);
      if (request.planId === "") throw invalidRequest("planId is required to resume a plan", "planId");
      if (request.feedback !== undefined) return revise(request.planId, validFeedback(request.feedback, request.approve), request.revision, context);
      if (request.revision !== undefined && request.approve.length === 0) {
        throw invalidRequest("revision names the draft an approve or feedback is for; send it with one of them", "revision");
      }
      const unavailable = unavailableOutcomes(config);
      const { plan, wake } = await db.transaction().execute(async (trx) => {
        const before = await loadPlan(trx, request.planId, { accountId, forUpdate: true });
        if (!before) throw notFound(PLAN_NOT_FOUND);
        if (request.revision !== undefined) requireNewestDraft(before, request.revision);
        const after = resumePlan(before, request.approve);
        if (after === before) return { plan: before, wake: undefined };
        if (startsWork(before, after)) requireAvailable(before.outcome, unavailable);
        return savePlan(trx, before, after);
      });
      if (wake !== undefined) notifier.planChanged(plan.id);
      if (wake) notifier.stageReady();
      setHeaders(context, rateLimitHeaders(await readGenerationUsage(db, accountId, window)));
      return { plan: toPlanMessage(plan), unavailable };
    },

    async getExecution(request: GetExecutionRequest, context: HandlerContext) {
      const { accountId } = requirePrincipal(context);
      if (request.id === "") throw invalidRequest("id is required", "id");
      const plan = await loadPlan(db, request.id, { accountId });
      if (!plan) throw notFound(PLAN_NOT_FOUND);
      return { plan: toPlanMessage(plan) };
    },

    async getExecutionHistory(request: GetExecutionHistoryRequest, context: HandlerContext) {
      const { accountId } = requirePrincipal(context);
      if (request.id === "") throw invalidRequest("id is required", "id");
      const events = await loadPlanHistory(db, request.id, accountId);
      if (!events) throw notFound(PLAN_NOT_FOUND);
      return {
        events: events.map((event) => ({
          at: timestampFromDate(event.at),
          type: event.type,
          stage: event.stage ?? undefined,
          attempt: event.attempt ?? undefined,
          detail: event.detail === null ? undefined : (event.detail as JsonObject),
        })),
      };
    },

    async listExecutions(request, context: HandlerContext) {
      const { accountId } = requirePrincipal(context);
      // `before` pages back: the ten plans older than one of the caller's own.
      const before = request.before === "" ? undefined : request.before;
      if (before !== undefined && !(await isOwnPlan(db, accountId, before))) throw invalidRequest("before must be the id of one of your plans", "before");
      const plans = await listRecentPlans(db, accountId, LIST_LIMIT, before);
      return { plans: plans.map(toPlanMessage) };
    },

    async *watchExecution(request: WatchExecutionRequest, context: HandlerContext): AsyncGenerator<MessageInitShape<typeof WatchExecutionResponseSchema>> {
      const { accountId } = requirePrincipal(context);
      if (request.id === "") throw invalidRequest("id is required", "id");
      const beatEveryMs = heartbeatMs(request.heartbeatSeconds);
      const signal = context.signal;
      let changed = false;
      let wake: (() => void) | undefined;
      // Subscribe before the first read, so a change between the two is not missed.
      const unsubscribe = await planChanges.subscribe(request.id, () => {
        changed = true;
        wake?.();
      });
      try {
        let plan = await loadPlan(db, request.id, { accountId });
        if (!plan) throw notFound(PLAN_NOT_FOUND);
        yield { plan: toPlanMessage(plan) };
        let sentAt = performance.now();
        while (!RESTING_STATUSES.has(plan.status)) {
          if (!changed) {
            const untilHeartbeat = beatEveryMs > 0 ? sentAt + beatEveryMs - performance.now() : Number.POSITIVE_INFINITY;
            await new Promise<void>((resolve) => {
              const timer = setTimeout(done, Math.max(0, Math.min(WATCH_POLL_MS, untilHeartbeat)));
              function done() {
                clearTimeout(timer);
                signal.removeEventListener("abort", done);
                deps.draining?.removeEventListener("abort", done);
                wake = undefined;
                resolve();
              }
              wake = done;
              signal.addEventListener("abort", done, { once: true });
              deps.draining?.addEventListener("abort", done, { once: true });
            });
          }
          // Neither ends the watch as if the plan were at rest: the client's own deadline with its code, and a
          // server beginning to stop with `unavailable`, so the client watches again (another instance answers).
          if (signal.reason instanceof ConnectError && signal.reason.code === Code.DeadlineExceeded) throw signal.reason;
          if (deps.draining?.aborted) throw new ServiceError("unavailable", "this server is shutting down; watch the plan again");
          // A client that has gone just ends it.
          if (signal.aborted) return;
          // A key revoked or a session ended meanwhile ends the watch, as it refuses every other call.
          await requireStillAuthenticated(context);
          changed = false;
          const next = await loadPlan(db, request.id, { accountId });
          // Deleted while watched (a delete cancels and removes in one step): reads of it are 404 now, and so is
          // the watch, rather than ending as if a plan last seen running had come to rest.
          if (!next) throw notFound(PLAN_NOT_FOUND);
          if (next.version !== plan.version) {
            yield { plan: toPlanMessage(next) };
            sentAt = performance.now();
          } else if (beatEveryMs > 0 && performance.now() - sentAt >= beatEveryMs) {
            yield {};
            sentAt = performance.now();
          }
          plan = next;
        }
      } finally {
        unsubscribe();
      }
    },
  };
}

function setHeaders(context: HandlerContext, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) context.responseHeader.set(name, value);
}
