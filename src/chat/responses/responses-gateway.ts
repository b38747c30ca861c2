import { invalidRequest, openAiErrorBody, ServiceError, toServiceError } from "../../server/errors.js";
import { clientGone, type RequestLogging } from "../../server/request-info.js";
import { checkAlias } from "../chat-request.js";
import type { ChatRouter } from "../chat-router.js";
import type { RequestLog } from "../chat-types.js";
import type { IdempotencyStore } from "../../server/idempotency.js";
import { type CompletionResult, runIdempotently } from "../../server/idempotency.js";
import type { ResponseStore } from "./response-store.js";
import { OPENAI_BODY_MAX_BYTES } from "../../api/limits.js";
import { type InputItemsQuery, inputItemsOf, unknownInputItem } from "./responses-input-items.js";
import {
  answerOfCompletion,
  assistantMessage,
  type ChatAnswer,
  finishedResponse,
  newResponseId,
  referencedResponseId,
  responseEvents,
  responseShell,
  type UnnumberedEvent,
} from "./responses-answer.js";
import { isObject } from "../openai-fields.js";
import { type ChatMessage, parseResponsesRequest, type ResponsesRequest, responsesParam, toChatRequest } from "./responses-request.js";

/** One Responses API stream event as OpenAI sends it in `data:`: its `type`, its fields and `sequence_number`. */
export type ResponseEvent = Record<string, unknown> & { type: string; sequence_number: number };

/**
 * The Responses API for every transport (REST and RPC): served by
 * translating to chat completions through the chat router, so the pool,
 * failover, alias rules and provider hiding are the router's; answers are
 * stored per account unless `store: false`.
 */
export class ResponsesGateway {
  readonly #router: ChatRouter;
  readonly #idempotency: IdempotencyStore;
  readonly #store: ResponseStore;

  constructor(deps: { router: ChatRouter; idempotency: IdempotencyStore; responses: ResponseStore }) {
    this.#router = deps.router;
    this.#idempotency = deps.idempotency;
    this.#store = deps.responses;
  }

  /** A non-streamed response, as JSON text; with an idempotency key, a retry replays the first answer. */
  async create(
    accountId: string,
    body: unknown,
    options: { idempotencyKey?: string; signal?: AbortSignal; requestLog?: RequestLog },
  ): Promise<CompletionResult> {
    const request = parseResponsesRequest(body);
    checkAlias(request);
    // What a served request reads of stored responses (the conversation it continues, the items it refers to) is
    // read once it is served: a replay answers as first answered, whatever was deleted since.
    const produce = async () => {
      const call = await this.#prepare(accountId, request, false);
      const completion = await this.#router
        .complete(call.chat, { accountId, signal: options.signal, fromClient: true, requestLog: options.requestLog })
        .catch((error: unknown) => inResponsesTerms(error, request));
      const answer = answerOfCompletion(completion);
      const json = JSON.stringify(finishedResponse(call.shell, answer));
      await call.keep(json, answer);
      return json;
    };
    if (options.idempotencyKey === undefined) return { json: await produce(), replayed: false };
    const result = await runIdempotently(this.#idempotency, { accountId, key: options.idempotencyKey, request: { responses: request } }, produce);
    if (result.replayed) await this.#refuseDeletedReplay(accountId, result.json);
    return result;
  }

  /**
   * A replay of a stored response that has since been deleted is refused as a
   * deleted plan's key is (409 `conflict`): the delete is what the client
   * asked for, and the replay would hand back what it removed, told stored
   * but impossible to continue.
   */
  async #refuseDeletedReplay(accountId: string, json: string): Promise<void> {
    const { id, store } = JSON.parse(json) as { id: string; store: boolean };
    if (store && (await this.#store.response(accountId, id)) === undefined) {
      throw new ServiceError("conflict", `the response this Idempotency-Key created (${id}) was deleted; send a new key to create another`);
    }
  }

  /**
   * Opens a streamed response. Resolves once an upstream accepted (every
   * refusal before that is thrown); the events then follow, numbered, in
   * batches (see `responseEvents`). A failure after the first event is one
   * `error` event, and the stream ends. A stored response that ends early
   * (that failure, a client that left, a shutdown) is stored as far as it
   * went, `failed` or `cancelled`: its client already holds its ids.
   */
  async stream(
    accountId: string,
    body: unknown,
    options: { signal: AbortSignal; requestLog?: RequestLogging },
  ): Promise<AsyncGenerator<ResponseEvent[], void, undefined>> {
    const request = parseResponsesRequest(body);
    checkAlias(request);
    const call = await this.#prepare(accountId, request, true);
    const chunks = await this.#router
      .stream(call.chat, { accountId, signal: options.signal, fromClient: true, requestLog: options.requestLog })
      .catch((error: unknown) => inResponsesTerms(error, request));
    const { signal, requestLog } = options;
    const events = responseEvents(call.shell, chunks, {
      finished: (response, answer) => call.keep(JSON.stringify(response), answer),
      cutShort: async (soFar, error) => {
        const { response, answer } = soFar(signal.aborted || error === undefined ? { status: "cancelled" } : { status: "failed", error: streamError(error) });
        // Logged as a failed save always is; the stream ends as it was ending.
        await call.keep(JSON.stringify(response), answer).catch((saveError: unknown) => failureOf(saveError, requestLog));
      },
    });
    return numbered(events, signal, requestLog);
  }

  /** A stored response as first sent; another account's id is missing like any unknown one. */
  async retrieve(accountId: string, id: string): Promise<string> {
    const stored = await this.#store.response(accountId, id);
    if (stored === undefined) throw missing(id);
    return stored;
  }

  /**
   * A page of a stored response's input items (its own request's, not the
   * conversation it continues), as OpenAI's list JSON; missing like `retrieve`.
   */
  async inputItems(accountId: string, id: string, query: InputItemsQuery): Promise<string> {
    const page = await this.#store.inputItemsPage(accountId, id, query);
    if (page === undefined) throw missing(id);
    if ("unknown" in page) throw unknownInputItem(page.unknown, page.unknown === "after" ? query.after! : query.before!);
    return JSON.stringify(page);
  }

  /** Deletes a stored response, answering OpenAI's deletion object; missing like `retrieve`. */
  async delete(accountId: string, id: string): Promise<{ id: string; object: "response"; deleted: true }> {
    if (!(await this.#store.delete(accountId, id))) throw missing(id);
    return { id, object: "response", deleted: true };
  }

  /**
   * Streaming a stored response again (`GET …?stream=true`) is for a
   * background response still running, and none is made here: missing like
   * `retrieve`, else a 400 that says so.
   */
  async streamAgain(accountId: string, id: string): Promise<never> {
    await this.retrieve(accountId, id);
    throw invalidRequest("Only background responses can be streamed again, and this service makes none: read the response without `stream`.", "stream");
  }

  /** Cancelling is for background responses, and none is made here: missing like `retrieve`, else OpenAI's 400. */
  async cancel(accountId: string, id: string): Promise<never> {
    await this.retrieve(accountId, id);
    throw invalidRequest("Only responses created with background=true can be cancelled.");
  }

  async #prepare(accountId: string, request: ResponsesRequest, stream: boolean) {
    const [history, items] = await Promise.all([this.#history(accountId, request), this.#resolveReferences(accountId, request.input)]);
    const { chat, input } = toChatRequest(items === request.input ? request : { ...request, input: items }, history, stream);
    const id = newResponseId();
    const shell = responseShell(id, request, Math.floor(Date.now() / 1000), "in_progress");
    const inputItems = request.store === false ? undefined : inputItemsOf(items, id);
    const previousId = typeof request.previous_response_id === "string" ? request.previous_response_id : undefined;
    const keep = (response: string, answer: ChatAnswer) =>
      inputItems === undefined
        ? Promise.resolve()
        : this.#store.save(accountId, id, response, { previousId, messages: [...input, assistantMessage(answer)] }, inputItems);
    return { chat, shell, keep };
  }

  /** The conversation `previous_response_id` continues, none without one. */
  async #history(accountId: string, request: ResponsesRequest): Promise<ChatMessage[]> {
    if (typeof request.previous_response_id !== "string") return [];
    const previous = await this.#store.messages(accountId, request.previous_response_id, OPENAI_BODY_MAX_BYTES);
    if (!previous) throw missing(request.previous_response_id, "previous_response_id");
    if (previous === "too large") {
      throw new ServiceError(
        "payload_too_large",
        `the conversation \`previous_response_id\` continues comes to more than ${OPENAI_BODY_MAX_BYTES} bytes; start a new one, sending what it needs of this one`,
        { param: "previous_response_id" },
      );
    }
    return previous;
  }

  /**
   * `input` with each `item_reference` replaced by the item it names: an
   * output or input item of one of the account's stored responses, found by
   * the response id every item id made here carries (the AI SDK sends an
   * earlier answer back so when `store` is on). One read for all of them; a
   * reference to an item not stored here, or another account's, is missing
   * as an unknown `previous_response_id` is. Bounded as a body is: at most
   * MAX_ITEM_REFERENCES references, and what they read and what they stand
   * for each at most a body's size, so a small request cannot make a large
   * one (one item named a hundred thousand times).
   */
  async #resolveReferences(accountId: string, input: unknown): Promise<unknown> {
    if (!Array.isArray(input) || !input.some(isReference)) return input;
    const responseIds = new Set<string>();
    let references = 0;
    for (const [index, item] of input.entries()) {
      if (!isReference(item)) continue;
      if (typeof item.id !== "string") throw invalidRequest(`input[${index}]: an item_reference's \`id\` must be a string`, "input");
      if (++references > MAX_ITEM_REFERENCES) {
        throw invalidRequest(
          `\`input\` holds more than ${MAX_ITEM_REFERENCES} item references; continue a long conversation with \`previous_response_id\` instead`,
          "input",
        );
      }
      const responseId = referencedResponseId(item.id);
      if (responseId !== undefined) responseIds.add(responseId);
    }
    const stored =
      responseIds.size > 0 ? await this.#store.items(accountId, [...responseIds], OPENAI_BODY_MAX_BYTES) : new Map<string, Record<string, unknown>>();
    if (stored === "too large") throw referencesTooLarge();
    // The length of each named item's JSON, measured once however often it is named.
    const sizes = new Map<string, number>();
    let size = 0;
    return input.map((item, index) => {
      if (!isReference(item)) return item;
      const id = item.id as string;
      const found = stored.get(id);
      if (!found) throw new ServiceError("not_found", `input[${index}]: no item with id \`${id.slice(0, 80)}\` was found`, { param: "input" });
      let itemSize = sizes.get(id);
      if (itemSize === undefined) {
        itemSize = JSON.stringify(found).length;
        sizes.set(id, itemSize);
      }
      size += itemSize;
      if (size > OPENAI_BODY_MAX_BYTES) throw referencesTooLarge();
      return found;
    });
  }
}

function referencesTooLarge(): ServiceError {
  return new ServiceError("payload_too_large", `the items \`input\` refers to come to more than ${OPENAI_BODY_MAX_BYTES} bytes`, { param: "input" });
}

/**
 * Numbers the events in place, batch by batch. A failure (the upstream's,
 * or the save's) becomes one last `error` batch, unless the client has gone,
 * logged as every route's errors are (see toServiceError): the database
 * being away in the server's outage log, a bug with its cause.
 */
async function* numbered(
  batches: AsyncIterable<UnnumberedEvent[]>,
  signal: AbortSignal,
  requestLog: RequestLogging | undefined,
): AsyncGenerator<ResponseEvent[], void, undefined> {
  let sequence = 0;
  try {
    for await (const events of batches) {
      for (const event of events) event.sequence_number = sequence++;
      yield events as ResponseEvent[];
    }
  } catch (error) {
    if (clientGone(signal)) throw error;
    // OpenAI's error fields (code, message, param, and the pool's capacity_state and reset_at), as `/v1` renders them;
    // a shutdown that could not wait for the end says so the same way.
    const { type: _type, ...fields } = openAiErrorBody(failureOf(signal.aborted ? signal.reason : error, requestLog)).error;
    yield [{ type: "error", ...fields, sequence_number: sequence++ }];
  }
}

/** A stream's failure as the client is told it, logged as every route's errors are (see toServiceError). */
function failureOf(error: unknown, requestLog: RequestLogging | undefined): ServiceError {
  return toServiceError(
    error,
    (cause) => requestLog?.logUnexpected(cause),
    (cause) => requestLog?.logDatabaseDown(cause),
  );
}

/** The code and message of the `error` event a failure becomes (see `numbered`), as a failed response's `error`; not logged again. */
function streamError(error: unknown): { code: string; message: string } {
  const { code, message } = openAiErrorBody(toServiceError(error)).error;
  return { code: String(code), message: String(message) };
}

/**
 * An upstream's refusal of the chat request made from a Responses request,
 * in the client's terms: a `param` the upstream named is the Responses
 * field it was made from (`max_completion_tokens` was `max_output_tokens`),
 * or none when the translation alone made it.
 */
function inResponsesTerms(error: unknown, request: ResponsesRequest): never {
  if (!(error instanceof ServiceError) || error.type !== "invalid_request" || !error.detail.param) throw error;
  throw new ServiceError("invalid_request", error.rawMessage, { param: responsesParam(error.detail.param, request), status: error.status, cause: error.cause });
}

/** The most item references one request may hold (a turn of a conversation sent back whole holds one or two). */
export const MAX_ITEM_REFERENCES = 1000;

function isReference(item: unknown): item is Record<string, unknown> {
  return isObject(item) && item.type === "item_reference";
}

function missing(id: string, param?: string): ServiceError {
  return new ServiceError("not_found", `no response with id \`${id}\` was found`, { param });
}
