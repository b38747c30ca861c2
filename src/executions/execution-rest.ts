import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import {
  CreateExecutionRequestSchema,
  ExecutionService,
  GetExecutionHistoryRequestSchema,
  GetExecutionRequestSchema,
  ListExecutionsRequestSchema,
  ResumeExecutionRequestSchema,
} from "../../gen/zero/v1/execution_pb.js";
import { invalidRequest } from "../server/errors.js";
import { restJson } from "../server/json.js";
import { decodeRequest, readJsonBody, sendJson, type RestRouter } from "../server/rest.js";
import type { RestRpc } from "../server/rpc-pipeline.js";

/**
 * `POST /api/execution` and `GET /api/execution`: the REST view of
 * ExecutionService. The body picks the RPC (a `planId` means a resume); the
 * same pipeline runs as for the RPCs.
 */
export function executionRoutes(router: RestRouter, rpc: RestRpc): void {
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
      return decodeRequest(CreateExecutionRequestSchema, createFields(fields));
    });
    sendJson(exchange.res, 202, restJson(method.output, message), responseHeader);
  });

  router.add("GET", "/api/execution", async (exchange) => {
    const id = exchange.url.searchParams.get("id");
    if (id) {
      const { message } = await rpc.call(exchange, methods.getExecution, () => create(GetExecutionRequestSchema, { id }));
      sendJson(exchange.res, 200, restJson(methods.getExecution.output, message));
      return;
    }
    const { message } = await rpc.call(exchange, methods.listExecutions, () => create(ListExecutionsRequestSchema));
    sendJson(exchange.res, 200, restJson(methods.listExecutions.output, message));
  });

  router.add("GET", "/api/execution/history", async (exchange) => {
    const method = methods.getExecutionHistory;
    const id = exchange.url.searchParams.get("id") ?? "";
    const { message } = await rpc.call(exchange, method, () => create(GetExecutionHistoryRequestSchema, { id }));
    sendJson(exchange.res, 200, restJson(method.output, message));
  });
}

/** A create reads `goal` and `outcome`; an outcome that is not a known string falls back to the default, never an error. */
function createFields(body: JsonObject): JsonObject {
  const { goal, outcome } = body;
  return {
    ...(goal === undefined ? {} : { goal }),
    ...(typeof outcome === "string" ? { outcome } : {}),
  };
}

/** A resume reads `planId` and `approve`; `goal` and `outcome` are ignored, whatever they hold. */
function resumeFields(body: JsonObject): JsonObject {
  const { planId, plan_id, approve } = body;
  return {
    planId: planId ?? plan_id ?? null,
    ...(approve === undefined ? {} : { approve }),
  };
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
