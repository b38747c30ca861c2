import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateExecutionRequestSchema,
  ExecutionService,
  GetExecutionRequestSchema,
  ListExecutionsRequestSchema,
  ResumeExecutionRequestSchema,
} from "../../gen/zero/v1/execution_pb.js";
import type { Authenticator } from "../server/access.js";
import { invalidRequest } from "../server/errors.js";
import { restJson } from "../server/json.js";
import { callUnary, decodeRequest, readJsonBody, sendJson, type RestRouter } from "../server/rest.js";

/**
 * `POST /api/execution` and `GET /api/execution`: the REST view of
 * ExecutionService. The body picks the RPC (a `planId` means a resume); the
 * same authorization and service functions run as for the RPCs.
 */
export function executionRoutes(router: RestRouter, impl: ServiceImpl<typeof ExecutionService>, authenticator: Authenticator): void {
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

    if (planId !== undefined && planId !== null && planId !== "") {
      const { response, context } = await callUnary(
        exchange,
        authenticator,
        methods.resumeExecution,
        (_, ctx) => impl.resumeExecution(decodeRequest(ResumeExecutionRequestSchema, resumeFields(fields!)), ctx),
        create(ResumeExecutionRequestSchema),
      );
      sendJson(exchange.res, 202, restJson(methods.resumeExecution.output, response), context.responseHeader);
      return;
    }
    const { response, context } = await callUnary(
      exchange,
      authenticator,
      methods.createExecution,
      (_, ctx) => {
        if (bodyError !== undefined) throw bodyError;
        if (!fields) throw invalidRequest("the body must be a JSON object");
        return impl.createExecution(decodeRequest(CreateExecutionRequestSchema, createFields(fields)), ctx);
      },
      create(CreateExecutionRequestSchema),
    );
    sendJson(exchange.res, 202, restJson(methods.createExecution.output, response), context.responseHeader);
  });

  router.add("GET", "/api/execution", async (exchange) => {
    const id = exchange.url.searchParams.get("id");
    if (id) {
      const { response } = await callUnary(exchange, authenticator, methods.getExecution, impl.getExecution, create(GetExecutionRequestSchema, { id }));
      sendJson(exchange.res, 200, restJson(methods.getExecution.output, response));
      return;
    }
    const { response } = await callUnary(exchange, authenticator, methods.listExecutions, impl.listExecutions, create(ListExecutionsRequestSchema));
    sendJson(exchange.res, 200, restJson(methods.listExecutions.output, response));
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
