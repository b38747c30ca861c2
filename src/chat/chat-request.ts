import { CHAT_ALIAS } from "../api/model.js";
import { invalidRequest, ServiceError } from "../server/errors.js";
import type { ChatRequest, GatewayRequest } from "./chat-types.js";

/**
 * Deeper than any real request: OpenAI itself bounds structured-output
 * schemas at ten levels. Past this, a body is refused before anything
 * recurses over it (a serializer's stack would otherwise overflow as a 502).
 */
const MAX_REQUEST_DEPTH = 64;

/** The only program the alias serves; `program` is ours, never sent upstream. */
export const CHAT_PROGRAM = "project_zero";

/**
 * Checks the shape of a chat request body: the parts every transport must
 * get right before anything is committed (a stream's 200 included). Field
 * values other than `model` and `messages` are the upstream's to judge and
 * pass through untouched.
 */
export function parseChatRequest(json: unknown): ChatRequest {
  const body = parseOpenAiBody(json);
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw invalidRequest("`messages` must be a non-empty array", "messages");
  }
  if (given(body.stream) && typeof body.stream !== "boolean") {
    throw invalidRequest("`stream` must be a boolean", "stream");
  }
  if (given(body.program) && typeof body.program !== "string") {
    throw invalidRequest("`program` must be a string", "program");
  }
  return body as ChatRequest;
}

/**
 * The checks every OpenAI body (chat, Responses, embeddings) passes first:
 * a JSON object, bounded in depth, naming a model.
 */
export function parseOpenAiBody(json: unknown): GatewayRequest {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalidRequest("the body must be a JSON object");
  }
  const body = json as Record<string, unknown>;
  if (nestedDeeperThan(body, MAX_REQUEST_DEPTH)) {
    throw invalidRequest(`the request is nested more than ${MAX_REQUEST_DEPTH} levels deep`);
  }
  if (typeof body.model !== "string" || body.model === "") {
    throw invalidRequest(`\`model\` is required: send "${CHAT_ALIAS}"`, "model");
  }
  return body as GatewayRequest;
}

/** Sent with a value: OpenAI reads a field sent as null as one left out. */
export function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** Walks the value with a stack of its own, so any depth is measured without recursion. */
function nestedDeeperThan(value: object, limit: number): boolean {
  // One stack of (value, depth) pairs; Object.values rather than for…in, which walks the prototype chain.
  const stack: unknown[] = [value, 1];
  while (stack.length > 0) {
    const depth = stack.pop() as number;
    const current = stack.pop() as object;
    if (depth > limit) return true;
    const children: unknown[] = Array.isArray(current) ? current : Object.values(current);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (typeof child === "object" && child !== null) stack.push(child, depth + 1);
    }
  }
  return false;
}

/** 404 `model_not_found` for a model other than the alias, as a request or a model lookup meets it. */
export function unknownModel(model: string): ServiceError {
  return new ServiceError("model_not_found", `the model \`${model}\` does not exist: this service serves "${CHAT_ALIAS}" only`, {
    status: 404,
    param: "model",
  });
}

/**
 * The routing decision: only the bare alias is served. A provider-prefixed
 * alias (`openai/project-zero`) is 400 and never served, so it cannot reach
 * paid capacity; any other model is 404; a foreign `program` is 422.
 */
export function checkAlias(request: GatewayRequest): void {
  const { model } = request;
  if (model !== CHAT_ALIAS) {
    if (model.endsWith(`/${CHAT_ALIAS}`)) {
      throw new ServiceError("model_not_found", `the model \`${model}\` does not exist: send the bare alias "${CHAT_ALIAS}" without a provider prefix`, {
        status: 400,
        param: "model",
      });
    }
    throw unknownModel(model);
  }
  const program = request.program;
  if (given(program) && program !== CHAT_PROGRAM) {
    throw new ServiceError("program_mismatch", `the program \`${String(program)}\` does not match the model "${CHAT_ALIAS}", which implies "${CHAT_PROGRAM}"`, {
      param: "program",
    });
  }
}
