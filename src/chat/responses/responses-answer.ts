import { CHAT_ALIAS } from "../../api/model.js";
import type { ChatChunkJson, ChatCompletionJson } from "../chat-types.js";
import { isJsonObject, isObject } from "../openai-fields.js";
import { uniqueHex } from "../unique-hex.js";
import { MAX_WHOLE_BODY_BYTES } from "../upstream-body.js";
import { ServiceError } from "../../server/errors.js";
import { type ChatMessage, reasoningEffort, type ResponsesRequest } from "./responses-request.js";

/** A `response` object as OpenAI's Responses API answers it. */
export type ResponseObject = Record<string, unknown> & { id: string; output: OutputItem[]; status: string };
export type OutputItem = Record<string, unknown> & { type: string; id: string };

const RESPONSE_PREFIX = "resp_";

export function newResponseId(): string {
  return `${RESPONSE_PREFIX}${uniqueHex()}`;
}

/**
 * An output item's id, made from its response's: the message's `msg_{hex}`,
 * the calls' `fc_{hex}_{n}` in the order they began, `{hex}` the digits of
 * `resp_{hex}`. So the id alone finds the response it is stored in: the AI
 * SDK sends an earlier answer back as an `item_reference` to its id
 * (`referencedResponseId`).
 */
function itemId(responseId: string, prefix: "msg" | "fc", call?: number): string {
  const digits = responseId.slice(RESPONSE_PREFIX.length);
  return call === undefined ? `${prefix}_${digits}` : `${prefix}_${digits}_${call}`;
}

/**
 * The id of the response whose item `itemId` is, by the digits every item id
 * made here carries (an output item's, see `itemId`, or an input item's, see
 * `inputItemsOf`); undefined for an id of another form.
 */
export function referencedResponseId(itemId: string): string | undefined {
  const digits = /^[a-z]+_([0-9a-f]{32})(?:[0-9a-f]{4}|_\d+)?$/.exec(itemId)?.[1];
  return digits === undefined ? undefined : `${RESPONSE_PREFIX}${digits}`;
}

/** The call id of a tool call that came without one: the SDKs need one to send its `function_call_output` back. */
function newCallId(): string {
  return `call_${uniqueHex()}`;
}

/** What the chat answer said, gathered from a completion or from a stream's chunks. */
export interface ChatAnswer {
  text: string;
  refusal: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  usage: Record<string, unknown> | undefined;
  /** The message's content parts in the order a stream sent them; without it, the text, then the refusal. */
  parts?: AnswerPart[];
}

/** One content part of the answer's message: output text or a refusal, with its words. */
export interface AnswerPart {
  type: "output_text" | "refusal";
  text: string;
}

/** The answer of a non-streamed chat completion. */
export function answerOfCompletion(completion: ChatCompletionJson): ChatAnswer {
  const choice = (completion.choices[0] ?? {}) as Record<string, unknown>;
  const message = (isObject(choice.message) ? choice.message : {}) as Record<string, unknown>;
  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  return {
    text: typeof message.content === "string" ? message.content : "",
    refusal: typeof message.refusal === "string" ? message.refusal : "",
    toolCalls: toolCalls.filter(isObject).map((call) => {
      const fn = isObject(call.function) ? call.function : {};
      const id = typeof call.id === "string" && call.id !== "" ? call.id : newCallId();
      return { id, name: String(fn.name ?? ""), arguments: typeof fn.arguments === "string" ? fn.arguments : "" };
    }),
    finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    usage: isObject(completion.usage) ? completion.usage : undefined,
  };
}

/**
 * The response object shell: every field the SDKs read, echoing the request
 * (null where it asked for nothing, left out where OpenAI's type has no null:
 * `user`, and `usage` until the answer is in). Never a background response:
 * those are refused.
 */
export function responseShell(id: string, request: ResponsesRequest, createdAt: number, status: string): ResponseObject {
  const text = isObject(request.text) ? request.text : {};
  const reasoning = isObject(request.reasoning) ? request.reasoning : {};
  return {
    id,
    object: "response",
    created_at: createdAt,
    status,
    access_programs: null,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    max_tool_calls: request.max_tool_calls ?? null,
    model: CHAT_ALIAS,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    reasoning: { effort: reasoningEffort(request) ?? null, summary: reasoning.summary ?? reasoning.generate_summary ?? null },
    safety_identifier: request.safety_identifier ?? null,
    service_tier: request.service_tier ?? null,
    store: request.store ?? true,
    temperature: request.temperature ?? 1,
    text: { format: isObject(text.format) ? text.format : { type: "text" }, verbosity: text.verbosity ?? null },
    tool_choice: request.tool_choice ?? "auto",
    tools: Array.isArray(request.tools) ? request.tools.map(echoedTool) : [],
    top_logprobs: request.top_logprobs ?? null,
    top_p: request.top_p ?? 1,
    truncation: request.truncation ?? "disabled",
    ...(typeof request.user === "string" ? { user: request.user } : {}),
    metadata: request.metadata ?? {},
  };
}

/** A function tool as the response echoes it: every field the SDKs' `FunctionTool` requires, null where not given. */
function echoedTool(tool: unknown): unknown {
  const given = tool as Record<string, unknown>;
  return { ...given, description: given.description ?? null, parameters: given.parameters ?? null, strict: given.strict ?? null };
}

/**
 * The finished response for an answer: the message (if it said anything, or
 * nothing at all was answered), then the function calls, unless `positions`
 * (a stream's output indexes by item id) orders them as they were announced.
 * An answer cut short (by the token limit or the content filter) is
 * `incomplete`, and so is the item it was cut in, the last one, as OpenAI
 * marks it; the others are `completed`.
 */
export function finishedResponse(
  shell: ResponseObject,
  answer: ChatAnswer,
  ids: AnswerItemIds = newItemIds(shell.id, answer),
  positions?: ReadonlyMap<string, number>,
): ResponseObject {
  let output: OutputItem[] = [];
  if (answer.text !== "" || answer.refusal !== "" || answer.toolCalls.length === 0) output.push(messageItem(ids.message, answer, "completed"));
  answer.toolCalls.forEach((call, i) => {
    output.push(functionCallItem(ids.calls[i]!, call, "completed"));
  });
  if (positions) output = output.filter((item) => positions.has(item.id)).sort((a, b) => positions.get(a.id)! - positions.get(b.id)!);
  const incomplete = answer.finishReason === "length" || answer.finishReason === "content_filter";
  const last = output.at(-1);
  if (incomplete && last) last.status = "incomplete";
  return {
    ...shell,
    status: incomplete ? "incomplete" : "completed",
    incomplete_details: incomplete ? { reason: answer.finishReason === "length" ? "max_output_tokens" : "content_filter" } : null,
    output,
    usage: usage(answer.usage),
  };
}

export interface AnswerItemIds {
  message: string;
  calls: string[];
}

export function newItemIds(responseId: string, answer: Pick<ChatAnswer, "toolCalls">): AnswerItemIds {
  return { message: itemId(responseId, "msg"), calls: answer.toolCalls.map((_, i) => itemId(responseId, "fc", i)) };
}

export function messageItem(id: string, answer: Pick<ChatAnswer, "text" | "refusal" | "parts">, status: string): OutputItem {
  return { type: "message", id, status, role: "assistant", content: answerParts(answer).map(contentPart) };
}

/** The message's parts: as streamed, else the text and the refusal each in its own (an empty answer is one empty text). */
function answerParts(answer: Pick<ChatAnswer, "text" | "refusal" | "parts">): AnswerPart[] {
  if (answer.parts) return answer.parts;
  const parts: AnswerPart[] = [];
  if (answer.text !== "" || answer.refusal === "") parts.push({ type: "output_text", text: answer.text });
  if (answer.refusal !== "") parts.push({ type: "refusal", text: answer.refusal });
  return parts;
}

/** A content part as OpenAI sends it: `output_text` with its text, or `refusal` with its refusal. */
function contentPart(part: AnswerPart): Record<string, unknown> {
  return part.type === "refusal" ? { type: "refusal", refusal: part.text } : { type: "output_text", text: part.text, annotations: [], logprobs: [] };
}

export function functionCallItem(id: string, call: ChatAnswer["toolCalls"][number], status: string): OutputItem {
  return { type: "function_call", id, call_id: call.id, name: call.name, arguments: call.arguments, status };
}

/** The chat usage as the Responses API's `usage`, with every count OpenAI's `ResponseUsage` requires (0 when the upstream gave none). */
function usage(chat: Record<string, unknown> | undefined): Record<string, unknown> {
  const input = tokenCount(chat?.prompt_tokens);
  const output = tokenCount(chat?.completion_tokens);
  const inputDetails = isObject(chat?.prompt_tokens_details) ? chat.prompt_tokens_details : {};
  const outputDetails = isObject(chat?.completion_tokens_details) ? chat.completion_tokens_details : {};
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: tokenCount(inputDetails.cached_tokens), cache_write_tokens: tokenCount(inputDetails.cache_write_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: tokenCount(outputDetails.reasoning_tokens) },
    total_tokens: tokenCount(chat?.total_tokens) || input + output,
  };
}

function tokenCount(value: unknown): number {
  return Number(value ?? 0) || 0;
}

/**
 * The assistant's turn as a chat message, to continue the conversation from a
 * stored response: the message's words as sending its output item back as
 * input gives them (its parts' text and refusals joined in order, see
 * `partText`), so both ways of continuing tell the upstream the same.
 */
export function assistantMessage(answer: ChatAnswer): ChatMessage {
  const words = answerParts(answer)
    .map((part) => part.text)
    .join("");
  const message: ChatMessage = { role: "assistant", content: answer.toolCalls.length > 0 && words === "" ? null : words };
  if (answer.toolCalls.length > 0) {
    message.tool_calls = answer.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }));
  }
  return message;
}

/**
 * How a stream that ended before its answer was whole is kept: `failed`,
 * with the code and message of the `error` event its client was sent, or
 * `cancelled` (the client left, or a shutdown ended it).
 */
export type EarlyEnd = { status: "failed"; error: { code: string; message: string } } | { status: "cancelled" };

/** The response a stream cut short stands as for `end`, and its answer so far (what a continuation sends the upstream). */
export type AnswerSoFar = (end: EarlyEnd) => { response: ResponseObject; answer: ChatAnswer };

/** How `responseEvents` has its answer saved. */
export interface ResponseSaves {
  /** Saves the whole answer; the closing events wait for it, so a client that sees `response.completed` can continue from it. */
  finished(response: ResponseObject, answer: ChatAnswer): Promise<void>;
  /**
   * Saves the answer so far of a stream that ended early after its
   * `response.created` went out, by `error` or (undefined) by its reader
   * stopping: the client holds ids that name it. Best effort: it never
   * throws, and the stream then ends as it would have.
   */
  cutShort(soFar: AnswerSoFar, error: unknown): Promise<void>;
}

/** A Responses API stream event before it is numbered: its `type`, then its fields. */
export type UnnumberedEvent = Record<string, unknown> & { type: string };

/** An output item announced and not yet done: the message, or a call by its index in the answer. */
type OpenItem = "message" | number;

/**
 * Turns a stream of chat chunks into the Responses API's typed events, in
 * the order OpenAI sends them, gathering the answer as it goes. The events
 * come in batches: the opening two at once, then those of each batch of
 * chunks (one upstream read), then the closing ones after the answer was
 * saved (`saves.finished`). A stream that ends before then, once its
 * opening batch went out, has what it answered so far saved
 * (`saves.cutShort`). The caller numbers and frames them; a batch is one
 * iterator step and one write, not one of each per event. The chunks are
 * the router's, whose tool calls are numbered from 0 in the order they
 * began (`ChunkRewriter`), so a call's `index` is its place in the answer.
 *
 * As OpenAI does, each item is done (its part's and its own done events)
 * before the next is announced, as an upstream's chat stream finishes one
 * before it begins the next. Two exceptions keep every word: a call whose
 * arguments are not yet a whole JSON object stays open beside the next
 * (an upstream that interleaves its calls' deltas), done at the end with
 * all of them; and words that come after the message was done (text after
 * a call began) join the answer's message, in the response and what is
 * stored, without being streamed.
 */
export async function* responseEvents(shell: ResponseObject, chunks: AsyncIterable<ChatChunkJson[]>, saves: ResponseSaves): AsyncGenerator<UnnumberedEvent[]> {
  const answer: ChatAnswer = { text: "", refusal: "", toolCalls: [], finishReason: null, usage: undefined };
  const ids: AnswerItemIds = { message: itemId(shell.id, "msg"), calls: [] };
  const inProgress = { ...shell, status: "in_progress" };
  yield [
    { type: "response.created", response: inProgress },
    { type: "response.in_progress", response: inProgress },
  ];

  let messageIndex: number | undefined;
  let nextIndex = 0;
  const callIndex: number[] = [];
  // The message's content parts as they open: text and a refusal each get their own, one open at a time.
  const parts: AnswerPart[] = [];
  answer.parts = parts;
  let openPart: AnswerPart | undefined;
  // The items announced and not yet done, in the order they began.
  let openItems: OpenItem[] = [];
  let ended = false;

  const where = (part: AnswerPart) => ({ item_id: ids.message, output_index: messageIndex, content_index: parts.indexOf(part) });
  const closePart = (events: UnnumberedEvent[]): void => {
    if (!openPart) return;
    const part = openPart;
    openPart = undefined;
    if (part.type === "output_text") events.push({ type: "response.output_text.done", ...where(part), text: part.text, logprobs: [] });
    else events.push({ type: "response.refusal.done", ...where(part), refusal: part.text });
    events.push({ type: "response.content_part.done", ...where(part), part: contentPart(part) });
  };
  /** Sends an item's done events: `done` as the final response has it, else the item as it stands, completed. */
  const closeItem = (events: UnnumberedEvent[], open: OpenItem, done?: OutputItem): void => {
    if (open === "message") {
      closePart(events);
      events.push({ type: "response.output_item.done", output_index: messageIndex, item: done ?? messageItem(ids.message, answer, "completed") });
      return;
    }
    const call = answer.toolCalls[open]!;
    events.push(
      { type: "response.function_call_arguments.done", item_id: ids.calls[open], output_index: callIndex[open], name: call.name, arguments: call.arguments },
      { type: "response.output_item.done", output_index: callIndex[open], item: done ?? functionCallItem(ids.calls[open]!, call, "completed") },
    );
  };
  /** Before an item is announced: closes the open ones, but for a call that may still get arguments (see above). */
  const closeFinished = (events: UnnumberedEvent[]): void => {
    const stillOpen: OpenItem[] = [];
    for (const open of openItems) {
      if (!ended && open !== "message" && !isJsonObject(answer.toolCalls[open]!.arguments)) stillOpen.push(open);
      else closeItem(events, open);
    }
    openItems = stillOpen;
  };
  const openMessage = (events: UnnumberedEvent[]): void => {
    if (messageIndex !== undefined) return;
    closeFinished(events);
    messageIndex = nextIndex++;
    openItems.push("message");
    events.push({
      type: "response.output_item.added",
      output_index: messageIndex,
      item: { type: "message", id: ids.message, status: "in_progress", role: "assistant", content: [] },
    });
  };
  /** The part of this type that takes the next words: the open one, or a new one after closing the other type's. */
  const partFor = (events: UnnumberedEvent[], type: AnswerPart["type"]): AnswerPart => {
    openMessage(events);
    if (openPart?.type === type) return openPart;
    closePart(events);
    const part: AnswerPart = { type, text: "" };
    parts.push(part);
    openPart = part;
    events.push({ type: "response.content_part.added", ...where(part), part: contentPart(part) });
    return part;
  };
  /** Words of the message: streamed in their part, or, once the message is done, only kept (see above). */
  const addWords = (events: UnnumberedEvent[], type: AnswerPart["type"], words: string): void => {
    if (type === "output_text") answer.text += words;
    else answer.refusal += words;
    openMessage(events);
    if (!openItems.includes("message")) {
      const last = parts.at(-1);
      if (last?.type === type) last.text += words;
      else parts.push({ type, text: words });
      return;
    }
    const part = partFor(events, type);
    part.text += words;
    if (type === "output_text") events.push({ type: "response.output_text.delta", ...where(part), delta: words, logprobs: [] });
    else events.push({ type: "response.refusal.delta", ...where(part), delta: words });
  };
  /**
   * Opens a function call's item, with the arguments gathered so far as its
   * first delta. It waits for the call's name and id because the SDKs take
   * both from `output_item.added` and refuse a `done` whose call_id differs.
   */
  const announceCall = (events: UnnumberedEvent[], index: number): void => {
    closeFinished(events);
    const call = answer.toolCalls[index]!;
    if (call.id === "") call.id = newCallId();
    const id = itemId(shell.id, "fc", index);
    ids.calls[index] = id;
    callIndex[index] = nextIndex++;
    openItems.push(index);
    events.push({ type: "response.output_item.added", output_index: callIndex[index], item: functionCallItem(id, { ...call, arguments: "" }, "in_progress") });
    if (call.arguments !== "")
      events.push({ type: "response.function_call_arguments.delta", item_id: id, output_index: callIndex[index], delta: call.arguments });
  };

  /**
   * The items announced so far, each as it stands (done, or cut short:
   * `incomplete`), in the order they were announced; and the answer a
   * continuation sends on, with the calls announced whose arguments are
   * whole: the upstream would refuse arguments that are not JSON.
   */
  const soFar: AnswerSoFar = (end) => {
    const output: OutputItem[] = [];
    const status = (open: OpenItem) => (openItems.includes(open) ? "incomplete" : "completed");
    if (messageIndex !== undefined) output[messageIndex] = messageItem(ids.message, answer, status("message"));
    const continued: ChatAnswer["toolCalls"] = [];
    answer.toolCalls.forEach((call, index) => {
      if (callIndex[index] === undefined) return;
      output[callIndex[index]] = functionCallItem(ids.calls[index]!, call, status(index));
      if (isJsonObject(call.arguments)) continued.push(call);
    });
    const response = { ...shell, status: end.status, error: end.status === "failed" ? end.error : null, output };
    return { response, answer: { ...answer, toolCalls: continued } };
  };
  // Set once the answer is whole: from then on, its save is the finished one.
  let whole = false;
  // The characters of words and arguments gathered: the answer is held whole, so it is bounded as one read whole is.
  let gathered = 0;
  let failure: unknown;
  // Reached once the opening batch was taken: the client holds the response's id from here on.
  try {
    for await (const batch of chunks) {
      const events: UnnumberedEvent[] = [];
      for (const chunk of batch) {
        if (isObject(chunk.usage)) answer.usage = chunk.usage;
        const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : undefined;
        if (!choice) continue;
        if (typeof choice.finish_reason === "string") answer.finishReason = choice.finish_reason;
        const delta = isObject(choice.delta) ? choice.delta : {};
        if (typeof delta.content === "string" && delta.content !== "") {
          gathered += delta.content.length;
          addWords(events, "output_text", delta.content);
        }
        if (typeof delta.refusal === "string" && delta.refusal !== "") {
          gathered += delta.refusal.length;
          addWords(events, "refusal", delta.refusal);
        }
        if (Array.isArray(delta.tool_calls)) {
          for (const part of delta.tool_calls) {
            if (!isObject(part)) continue;
            const index = part.index as number;
            const fn = isObject(part.function) ? part.function : {};
            const call = answer.toolCalls[index] ?? { id: "", name: "", arguments: "" };
            answer.toolCalls[index] = call;
            // The first id and name given are the call's, whichever delta brings them.
            if (call.id === "" && typeof part.id === "string") call.id = part.id;
            if (call.name === "" && typeof fn.name === "string") call.name = fn.name;
            const announced = callIndex[index] !== undefined;
            if (typeof fn.arguments === "string" && fn.arguments !== "") {
              gathered += fn.arguments.length;
              call.arguments += fn.arguments;
              if (openItems.includes(index))
                events.push({ type: "response.function_call_arguments.delta", item_id: ids.calls[index], output_index: callIndex[index], delta: fn.arguments });
            }
            if (!announced && call.id !== "" && call.name !== "") announceCall(events, index);
          }
        }
      }
      if (gathered > MAX_WHOLE_BODY_BYTES) throw new ServiceError("upstream_error", "the model's answer is larger than the service accepts");
      if (events.length > 0) yield events;
    }

    // Nothing more will come: every item still open is done, the last with the final response's status.
    ended = true;
    const closing: UnnumberedEvent[] = [];
    // An answer of nothing at all is still one (empty) message.
    if (messageIndex === undefined && answer.toolCalls.length === 0) partFor(closing, "output_text");
    // A call whose name or id never came is still the answer's, under a name of "" or an id of our own.
    answer.toolCalls.forEach((_, index) => {
      if (callIndex[index] === undefined) announceCall(closing, index);
    });
    // The output's order is the order the items were announced in; the items done here are those of the response.
    const positions = new Map<string, number>();
    if (messageIndex !== undefined) positions.set(ids.message, messageIndex);
    ids.calls.forEach((id, i) => {
      positions.set(id, callIndex[i]!);
    });
    const finished = finishedResponse(shell, answer, ids, positions);
    const done = new Map(finished.output.map((item) => [item.id, item]));
    for (const open of openItems) closeItem(closing, open, done.get(open === "message" ? ids.message : ids.calls[open]!));
    whole = true;
    await saves.finished(finished, answer);
    closing.push({ type: finished.status === "incomplete" ? "response.incomplete" : "response.completed", response: finished });
    yield closing;
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    if (!whole) await saves.cutShort(soFar, failure);
  }
}
