import { fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ChatCompletionChunkSchema,
  ChatCompletionParamsSchema,
  ChatCompletionSchema,
  type ChatCompletionParams,
  type ChatService,
  type CreateChatCompletionResponseSchema,
} from "../../gen/zero/v1/chat_pb.js";
import { requirePrincipal } from "../server/access.js";
import { ServiceError } from "../server/errors.js";
import { parseChatRequest } from "./chat-request.js";
import type { ChatRouter } from "./chat-router.js";
import type { ChatRequest } from "./chat-types.js";
import { completeIdempotently } from "./idempotent-completion.js";
import type { IdempotencyStore } from "../server/idempotency.js";
import type { ResponsesGateway } from "./responses/responses-gateway.js";
import { inputItemsQuery } from "./responses/responses-input-items.js";
import { inlineExtra, nestExtra } from "./extra-fields.js";
import { jsonAnswersKey, requestLogKey } from "../server/context.js";
import { clientMessageJson } from "../server/json.js";
import { heartbeatMs, withHeartbeats } from "../server/heartbeats.js";

/** A stream's heartbeat, told apart from its batches of chunks. */
const HEARTBEAT = Symbol("heartbeat");

/** Upstream fields the messages do not model, where they have no `extra` (the completion's own, a choice's), are dropped, not refused. */
const READ_OPTIONS = { ignoreUnknownFields: true } as const;

/**
 * ChatService: the same router as `/v1/chat/completions`, with the request
 * and answer as typed messages whose JSON form is OpenAI's. Authorization
 * (an API key with `chat`; a session is refused, as on /v1) ran in the interceptor already.
 */
export function chatService(deps: { router: ChatRouter; idempotency: IdempotencyStore; responses: ResponsesGateway }): ServiceImpl<typeof ChatService> {
  return {
    async createChatCompletion(request, context): Promise<MessageInitShape<typeof CreateChatCompletionResponseSchema>> {
      const { accountId } = requirePrincipal(context);
      const idempotencyKey = request.idempotencyKey ?? context.requestHeader.get("idempotency-key") ?? undefined;
      const result = await completeIdempotently(deps, toChatRequest(request.params), {
        accountId,
        idempotencyKey,
        signal: context.signal,
        requestLog: context.values.get(requestLogKey),
      });
      if (result.replayed) context.responseHeader.set("idempotent-replayed", "true");
      // A JSON client gets the completion as REST sends it, nulls and empty lists included.
      context.values.get(jsonAnswersKey)?.push(`{"completion":${result.json}}`);
      return { completion: typedAnswer(ChatCompletionSchema, JSON.parse(result.json)) };
    },

    async *streamChatCompletion(request, context: HandlerContext) {
      const { accountId } = requirePrincipal(context);
      const beatEveryMs = heartbeatMs(request.heartbeatSeconds);
      const opened = deps.router.stream(toChatRequest(request.params), {
        accountId,
        signal: context.signal,
        fromClient: true,
        requestLog: context.values.get(requestLogKey),
      });
      const jsonAnswers = context.values.get(jsonAnswersKey);
      const heartbeat = (): typeof HEARTBEAT => {
        jsonAnswers?.push("{}");
        return HEARTBEAT;
      };
      for await (const chunks of withHeartbeats(opened, beatEveryMs, heartbeat)) {
        if (chunks === HEARTBEAT) {
          yield {};
          continue;
        }
        for (const chunk of chunks) {
          jsonAnswers?.push(`{"chunk":${JSON.stringify(chunk)}}`);
          yield { chunk: typedAnswer(ChatCompletionChunkSchema, chunk as JsonValue) };
        }
      }
    },

    async createResponse(request, context) {
      const { accountId } = requirePrincipal(context);
      const idempotencyKey = request.idempotencyKey ?? context.requestHeader.get("idempotency-key") ?? undefined;
      // The params as the client sent them, as REST's body is: the same key and body then replay across transports.
      // (`stream` asks for nothing here: this call always answers whole.)
      const result = await deps.responses.create(accountId, request.params ?? {}, {
        idempotencyKey,
        signal: context.signal,
        requestLog: context.values.get(requestLogKey),
      });
      if (result.replayed) context.responseHeader.set("idempotent-replayed", "true");
      return { response: JSON.parse(result.json) as JsonObject };
    },

    async *streamResponse(request, context) {
      const { accountId } = requirePrincipal(context);
      const batches = await deps.responses.stream(
        accountId,
        { ...request.params, stream: true },
        {
          signal: context.signal,
          requestLog: context.values.get(requestLogKey),
        },
      );
      for await (const events of batches) {
        for (const event of events) yield { type: event.type, event: event as JsonObject };
      }
    },

    async getResponse(request, context) {
      const { accountId } = requirePrincipal(context);
      return { response: JSON.parse(await deps.responses.retrieve(accountId, request.responseId)) as JsonObject };
    },

    async deleteResponse(request, context) {
      const { accountId } = requirePrincipal(context);
      return await deps.responses.delete(accountId, request.responseId);
    },

    async listResponseInputItems(request, context) {
      const { accountId } = requirePrincipal(context);
      const page = await deps.responses.inputItems(accountId, request.responseId, inputItemsQuery(request));
      return { page: JSON.parse(page) as JsonObject };
    },

    async cancelResponse(request, context) {
      const { accountId } = requirePrincipal(context);
      return await deps.responses.cancel(accountId, request.responseId);
    },
  };
}

/**
 * An answer as its typed message. The router already gives OpenAI's types
 * where providers use their own; a value it does not know to fix is the
 * model's fault, named as such, not an internal error of ours.
 */
function typedAnswer<S extends typeof ChatCompletionSchema | typeof ChatCompletionChunkSchema>(schema: S, json: JsonValue) {
  try {
    return fromJson(schema, nestExtra(schema, json), READ_OPTIONS);
  } catch {
    throw new ServiceError("upstream_error", "the model's answer has a value of a type OpenAI's format does not allow");
  }
}

/**
 * The typed params as the OpenAI JSON the router takes (their JSON names are
 * OpenAI's), with the fields that have no typed home merged from each `extra`.
 */
function toChatRequest(params: ChatCompletionParams | undefined): ChatRequest {
  const json: JsonObject = params ? clientMessageJson(ChatCompletionParamsSchema, params) : {};
  return parseChatRequest(inlineExtra(ChatCompletionParamsSchema, json));
}
