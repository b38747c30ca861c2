import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import {
  CancelExecutionRequestSchema,
  type CreateExecutionRequest,
  CreateExecutionRequestSchema,
  DeleteExecutionRequestSchema,
  ExecutionService,
  GetExecutionHistoryRequestSchema,
  GetExecutionRequestSchema,
  ListExecutionsRequestSchema,
  ResumeExecutionRequestSchema,
} from "../../gen/zero/v1/execution_pb.js";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { attachmentDisposition } from "../server/content-disposition.js";
import { invalidRequest, ServiceError } from "../server/errors.js";
import { restJson } from "../server/json.js";
import { decodeRequest, readJsonBody, sendJson, type RestHandler, type RestRouter } from "../server/rest.js";
import type { RestRpc } from "../server/rpc-pipeline.js";

/**
 * `POST /api/execution` and `GET /api/execution`: the REST view of
 * ExecutionService. The body picks the RPC (a `planId` means a resume); the
 * same pipeline runs as for the RPCs; a resume with `feedback` is a revision.
 */
export function executionRoutes(router: RestRouter, rpc: RestRpc, download?: PlanDownloader): void {
  const methods = ExecutionService.method;

  router.add("POST", "/api/execution", async (exchange) => {
    // The body is read first to choose the RPC, but any fault in it is
    // reported only after authorization: a caller without credentials learns nothing.
    let body: JsonValue | undefined;
    let bodyError: unknown;
    try {
      body = await readJsonBody(exchange.req);
    } catch (error) {
      bodyError = error;
    }
    const fields = isObject(body) ? body : undefined;
    const planId = fields?.planId ?? fields?.plan_id;

    if (fields && planId !== undefined && planId !== null && planId !== "" && asksToCancel(fields)) {
      const method = methods.cancelExecution;
      const { message, responseHeader } = await rpc.call(exchange, method, () => {
        requireCancelTrue(fields);
        const mixed = RESUME_ONLY_FIELDS.find((name) => fields[name] !== undefined);
        if (mixed) throw invalidRequest(`cancel cannot be combined with ${mixed}`, mixed);
        return decodeRequest(CancelExecutionRequestSchema, { id: planId });
      });
      sendJson(exchange.res, 202, restJson(method.output, message), responseHeader);
      return;
    }
    if (fields && planId !== undefined && planId !== null && planId !== "") {
      const method = methods.resumeExecution;
      const { message, responseHeader } = await rpc.call(exchange, method, () => decodeRequest(ResumeExecutionRequestSchema, resumeFields(fields)));
      sendJson(exchange.res, 202, restJson(method.output, message), responseHeader);
      return;
    }
    const method = methods.createExecution;
    const { message, responseHeader } = await rpc.call(exchange, method, () => {
      if (bodyError !== undefined) throw bodyError;
      if (!fields) throw invalidRequest("the body must be a JSON object");
      return createRequest(fields);
    });
    sendJson(exchange.res, 202, restJson(method.output, message), responseHeader);
  });

  router.add("DELETE", "/api/execution", async (exchange) => {
    const method = methods.deleteExecution;
    const { responseHeader } = await rpc.call(exchange, method, () => {
      const id = exchange.url.searchParams.get("id");
      if (!id) throw invalidRequest("give the plan's id: DELETE /api/execution?id=pln_…", "id");
      return create(DeleteExecutionRequestSchema, { id });
    });
    for (const [name, value] of responseHeader) exchange.res.setHeader(name, value);
    exchange.res.statusCode = 204;
    exchange.res.end();
  });

  router.add("GET", "/api/execution", async (exchange) => {
    const id = exchange.url.searchParams.get("id");
    if (id) {
      const { message } = await rpc.call(exchange, methods.getExecution, () => create(GetExecutionRequestSchema, { id }));
      sendJson(exchange.res, 200, restJson(methods.getExecution.output, message));
      return;
    }
    const before = exchange.url.searchParams.get("before") ?? "";
    const { message } = await rpc.call(exchange, methods.listExecutions, () => create(ListExecutionsRequestSchema, { before }));
    sendJson(exchange.res, 200, restJson(methods.listExecutions.output, message));
  });

  router.add("GET", "/api/execution/history", async (exchange) => {
    const method = methods.getExecutionHistory;
    const id = exchange.url.searchParams.get("id") ?? "";
    const { message } = await rpc.call(exchange, method, () => create(GetExecutionHistoryRequestSchema, { id }));
    sendJson(exchange.res, 200, restJson(method.output, message));
  });
  if (download) router.add("GET", "/api/execution/download", downloadHandler(rpc, download));
}

/** A plan's newest build as one file; undefined when nothing is built. `signal` (the client hanging up) stops its reads. */
export type PlanDownloader = (
  plan: {
    id: string;
    outcome: string;
    revisions: readonly unknown[];
  },
  signal: AbortSignal,
) => Promise<{ filename: string; contentType: string; size?: number; body: AsyncIterable<Uint8Array> } | undefined>;

/** The stage whose success makes a plan downloadable. */
const BUILT_BY: Record<string, string> = { website: "build", ebook: "assemble" };

/**
 * `GET /api/execution/download?id=`: the plan is read through GetExecution,
 * so the caller needs `read` and another account's plan is a 404 like a
 * missing one; the file is streamed, never held whole.
 */
function downloadHandler(rpc: RestRpc, download: PlanDownloader): RestHandler {
  const method = ExecutionService.method.getExecution;
  return async (exchange) => {
    const { message } = await rpc.call(exchange, method, () => {
      const id = exchange.url.searchParams.get("id");
      if (!id) throw invalidRequest("give the plan's id: /api/execution/download?id=pln_…");
      return create(GetExecutionRequestSchema, { id });
    });
    const plan = message.plan!;
    const built = plan.stages.find((stage) => stage.id === BUILT_BY[plan.outcome]);
    const file = built?.state === "succeeded" ? await download(plan, exchange.hangUp) : undefined;
    if (!file) throw new ServiceError("not_found", `plan ${plan.id} has nothing to download until its ${BUILT_BY[plan.outcome] ?? "build"} stage succeeds`);
    const { res, req } = exchange;
    res.statusCode = 200;
    res.setHeader("content-type", file.contentType);
    res.setHeader("content-disposition", attachmentDisposition(file.filename));
    res.setHeader("cache-control", "no-store");
    if (file.size !== undefined) res.setHeader("content-length", file.size);
    if (req.method === "HEAD") return void res.end();
    await pipeline(Readable.from(file.body), res as unknown as NodeJS.WritableStream);
  };
}

/** Any `cancel` but `false` asks to cancel; that it is `true` is checked after authorization (requireCancelTrue). */
function asksToCancel(body: JsonObject): boolean {
  return body.cancel !== undefined && body.cancel !== false;
}

function requireCancelTrue(body: JsonObject): void {
  if (body.cancel !== true) throw invalidRequest("cancel must be true or false", "cancel");
}

/** Fields that ask a resume for something, which a cancel cannot also do. */
const RESUME_ONLY_FIELDS = ["approve", "feedback", "revision"] as const;

/**
 * A create reads `goal` and `outcome`; an outcome that is not a known string
 * falls back to the default, never an error (the interface document). The
 * resume's fields are checked as a resume checks them, and `cancel`,
 * `feedback` or `revision` with no plan to act on is refused: dropped, it
 * would start a new plan and spend a generation instead. `approve` is a
 * field the interface document names, and a create with it stays a create,
 * as it always was (and as CreateExecution, which has no such field, is).
 */
function createRequest(body: JsonObject): CreateExecutionRequest {
  if (asksToCancel(body)) {
    requireCancelTrue(body);
    throw invalidRequest("cancel needs the planId of the plan to cancel", "planId");
  }
  const { feedback, revision } = decodeRequest(ResumeExecutionRequestSchema, resumeFields(body));
  if (feedback !== undefined) throw invalidRequest("feedback needs the planId of the plan to revise", "planId");
  if (revision !== undefined) throw invalidRequest("revision needs the planId of the plan at the gate", "planId");
  const { goal, outcome } = body;
  return decodeRequest(CreateExecutionRequestSchema, {
    ...(goal === undefined ? {} : { goal }),
    ...(typeof outcome === "string" ? { outcome } : {}),
  });
}

/** A resume reads `planId`, `approve`, `feedback` (a revision) and `revision` (the draft they are for); `goal` and `outcome` are ignored, whatever they hold. */
function resumeFields(body: JsonObject): JsonObject {
  const { planId, plan_id, approve, feedback, revision } = body;
  return {
    planId: planId ?? plan_id ?? null,
    ...(approve === undefined ? {} : { approve }),
    ...(feedback === undefined ? {} : { feedback }),
    ...(revision === undefined || revision === null ? {} : { revision }),
  };
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
