import { CHAT_ALIAS } from "../api/model.js";
import type { ChatChunkJson, ChatCompletionJson, GatewayRequest } from "./chat-types.js";
import { CHUNK, COMPLETION, EMBEDDING_REQUEST_FIELDS, isJsonObject, isObject, pick, REQUEST_FIELDS } from "./openai-fields.js";
import { callEchoes, outgoingMessages, ownCallId, type RecalledTurns, type StreamTurns } from "./tool-turns.js";
import { uniqueHex } from "./unique-hex.js";

/** Our completion id, in OpenAI's form; one per request, shared by all chunks of a stream. */
export function newCompletionId(): string {
  return `chatcmpl-${uniqueHex()}`;
}

/**
 * The body sent upstream: OpenAI's documented fields of the client's request,
 * untouched, except `model` (the upstream's own name), for an internal
 * non-streaming call any `stream` flag, and the tool turns in `messages`
 * as the upstream wrote them (its own call ids, and what it needs back of
 * them: `recalled`, see tool-turns.ts). Everything else (our `program`, an
 * aggregator's routing fields) stays here.
 */
export function upstreamRequestBody(
  request: GatewayRequest,
  upstream: { name: string; model: string },
  stream: boolean,
  recalled?: RecalledTurns,
  adapted?: { refused: ReadonlySet<string>; thinking: boolean },
): string {
  const body: Record<string, unknown> = {};
  for (const key in request) {
    if (REQUEST_FIELDS.has(key)) body[key] = request[key];
  }
  body.model = upstream.model;
  if (body.messages !== undefined) body.messages = outgoingMessages(body.messages, upstream.name, recalled, adapted?.thinking);
  if (adapted !== undefined && adapted.refused.size > 0) withoutRefused(body, adapted.refused);
  if (stream) {
    body.stream = true;
  } else if (body.stream === true) {
    delete body.stream;
    delete body.stream_options;
  }
  return JSON.stringify(body);
}

/** `body` without the fields its upstream refused as unknown (see UNKNOWN_TO_SOME in upstream-client.ts). */
function withoutRefused(body: Record<string, unknown>, refused: ReadonlySet<string>): void {
  if (refused.has("max_completion_tokens") && body.max_completion_tokens !== undefined) {
    body.max_tokens ??= body.max_completion_tokens;
  }
  for (const field of refused) {
    // `tools` only when empty: a request that offers tools keeps them.
    if (field === "tools" && Array.isArray(body.tools) && body.tools.length > 0) continue;
    delete body[field];
  }
}

/**
 * The body of an embeddings request sent upstream: OpenAI's documented
 * embeddings fields, with the upstream's embedding model, and always floats
 * (a client that asked for base64 gets its vectors encoded here).
 */
export function upstreamEmbeddingsBody(request: GatewayRequest, upstreamModel: string): string {
  const body: Record<string, unknown> = {};
  for (const key in request) {
    if (EMBEDDING_REQUEST_FIELDS.has(key)) body[key] = request[key];
  }
  body.model = upstreamModel;
  body.encoding_format = "float";
  return JSON.stringify(body);
}

/**
 * A completion as the client sees it: OpenAI's documented fields only, at
 * every level, with our id and the alias as model. Choices, tool calls,
 * usage and logprobs are as the upstream wrote them, in OpenAI's types where
 * a provider uses its own (`openAiMessage`): the SDKs, and the typed RPC
 * messages, read them strictly.
 */
export function clientCompletion(completion: ChatCompletionJson, id: string): ChatCompletionJson {
  const json = named(pick(completion, COMPLETION), id, "chat.completion");
  if (Array.isArray(json.choices)) for (const choice of json.choices) if (isObject(choice) && isObject(choice.message)) openAiMessage(choice.message);
  return json as ChatCompletionJson;
}

/**
 * The chunks of one stream as the client sees them; see `clientCompletion`.
 * One per stream, since a tool call's deltas are told apart across chunks:
 * each call gets OpenAI's `index`, counted from 0 in the order the calls
 * begin, whatever the provider numbered them (from 1 after a text part, as
 * some proxies in front of Claude do) or if it numbered them at all (as
 * Gemini's compatible endpoint does not: a delta with a new `id` begins a
 * call, one without continues the last).
 */
export class ChunkRewriter {
  readonly #id: string;
  /** Per choice: the provider's tool call index (or the call's id) → ours, and our ids and names by our index. */
  readonly #calls = new Map<number, { ours: Map<unknown, number>; count: number; last: number; ids: string[]; named: Set<number>; args: string[] }>();
  /** Choices seen, and those that gave a finish_reason. */
  readonly #choices = new Set<unknown>();
  readonly #finished = new Set<unknown>();
  /** Set to collect the tool turns (see tool-turns.ts). */
  readonly #turns: StreamTurns | undefined;

  constructor(id: string, turns?: StreamTurns) {
    this.#id = id;
    this.#turns = turns;
  }

  /** The chunk to relay, or undefined for one that carries nothing a client reads (Azure's opening content-filter chunk). */
  rewrite(chunk: ChatChunkJson): ChatChunkJson | undefined {
    // What a provider needs back is read before the cut to OpenAI's fields, which happens in place.
    const echoes = this.#turns ? this.#echoes(chunk) : undefined;
    const json = named(pick(chunk, CHUNK), this.#id, "chat.completion.chunk");
    const choices = json.choices;
    if ((!Array.isArray(choices) || choices.length === 0) && json.usage == null) return undefined;
    if (Array.isArray(choices)) {
      for (const choice of choices) {
        if (!isObject(choice)) continue;
        const index = typeof choice.index === "number" ? choice.index : 0;
        this.#choices.add(choice.index ?? 0);
        if (isObject(choice.delta)) {
          const delta = choice.delta;
          if (Array.isArray(delta.content)) delta.content = textOfParts(delta.content) ?? "";
          if (Array.isArray(delta.tool_calls)) this.#numberCalls(index, delta.tool_calls, echoes);
        }
        if (typeof choice.finish_reason === "string") {
          this.#finished.add(choice.index ?? 0);
          if (this.#calls.has(index)) {
            // A choice that called tools and says it stopped (Gemini) says `tool_calls`, as OpenAI's do and loops check.
            if (choice.finish_reason === "stop") choice.finish_reason = "tool_calls";
            this.#idsForCallsWithout(index, choice);
          }
        }
      }
    }
    return json;
  }

  /** Feeds the raw chunk's message fields to `turns`, and answers its calls' own fields by call object. */
  #echoes(chunk: ChatChunkJson): Map<object, Record<string, unknown>> | undefined {
    let echoes: Map<object, Record<string, unknown>> | undefined;
    if (!Array.isArray(chunk.choices)) return echoes;
    for (const choice of chunk.choices as unknown[]) {
      if (!isObject(choice) || !isObject(choice.delta)) continue;
      this.#turns!.message(typeof choice.index === "number" ? choice.index : 0, choice.delta);
      if (!Array.isArray(choice.delta.tool_calls)) continue;
      for (const call of choice.delta.tool_calls as unknown[]) {
        const fields = isObject(call) ? callEchoes(call) : undefined;
        if (fields === undefined) continue;
        echoes ??= new Map();
        echoes.set(call as object, fields);
      }
    }
    return echoes;
  }

  /** True once a chunk brought a choice: a stream whose `[DONE]` comes before one gave no answer. */
  get answered(): boolean {
    return this.#choices.size > 0;
  }

  /**
   * True once every choice seen gave its finish_reason: a stream that ends then is whole even without `[DONE]`
   * (some servers, llama.cpp forks and older TGI among them, never send it).
   */
  get finished(): boolean {
    return this.#choices.size > 0 && this.#finished.size === this.#choices.size;
  }

  /**
   * Numbers the calls (see above) and gives each our id (see tool-turns.ts),
   * made from the provider's on the delta that first brings it, and on any
   * later delta that repeats it. A call its provider gives no id gets one of
   * ours when its choice finishes (`#idsForCallsWithout`).
   */
  #numberCalls(choice: number, calls: unknown[], echoes: Map<object, Record<string, unknown>> | undefined): void {
    let known = this.#calls.get(choice);
    if (!known) {
      known = { ours: new Map(), count: 0, last: -1, ids: [], named: new Set(), args: [] };
      this.#calls.set(choice, known);
    }
    for (const call of calls) {
      if (!isObject(call)) continue;
      const key = typeof call.index === "number" ? call.index : typeof call.id === "string" ? call.id : undefined;
      const fn = call.function;
      const name = isObject(fn) && typeof fn.name === "string" && fn.name !== "" ? fn.name : undefined;
      // With neither index nor id, a delta that names a function begins a call when the last one is whole, its
      // arguments a JSON object (Gemini's parallel calls); a server that repeats the name on every delta continues it.
      const lastIsWhole = known.named.has(known.last) && isJsonObject(known.args[known.last] ?? "");
      let ours = key === undefined ? (name !== undefined && lastIsWhole ? undefined : known.last) : known.ours.get(key);
      if (ours === undefined || ours < 0) {
        ours = known.count++;
        if (key !== undefined) known.ours.set(key, ours);
      }
      if (typeof call.id === "string" && call.id !== "") {
        known.ids[ours] ??= ownCallId(call.id);
        call.id = known.ids[ours];
      }
      if (name !== undefined) known.named.add(ours);
      if (key === undefined && isObject(fn) && typeof fn.arguments === "string") known.args[ours] = (known.args[ours] ?? "") + fn.arguments;
      known.last = ours;
      call.index = ours;
      openAiToolCall(call);
      this.#turns?.call(choice, ours, known.ids[ours], echoes?.get(call));
    }
  }

  /** On the chunk that finishes `choice`, an id of ours for each of its calls the provider gave none. */
  #idsForCallsWithout(index: number, choice: Record<string, unknown>): void {
    const known = this.#calls.get(index)!;
    const given: Record<string, unknown>[] = [];
    for (let ours = 0; ours < known.count; ours++) {
      if (known.ids[ours] !== undefined) continue;
      known.ids[ours] = ownCallId(undefined);
      // With `function`, as OpenAI's call deltas always have it (the AI SDK refuses one without).
      given.push({ index: ours, id: known.ids[ours], type: "function", function: { arguments: "" } });
      this.#turns?.call(index, ours, known.ids[ours], undefined);
    }
    if (given.length === 0) return;
    const delta: Record<string, unknown> = isObject(choice.delta) ? choice.delta : {};
    delta.tool_calls = [...(Array.isArray(delta.tool_calls) ? delta.tool_calls : []), ...given];
    choice.delta = delta;
  }
}

/** The OpenAI type of a message's values where a provider sends its own: text parts as one string, a call's arguments as a JSON string. */
function openAiMessage(message: Record<string, unknown>): void {
  if (Array.isArray(message.content)) message.content = textOfParts(message.content);
  if (Array.isArray(message.tool_calls)) for (const call of message.tool_calls) if (isObject(call)) openAiToolCall(call);
}

function openAiToolCall(call: Record<string, unknown>): void {
  if (call.type === undefined && (typeof call.id === "string" || isObject(call.function))) call.type = "function";
  const fn = call.function;
  if (isObject(fn) && fn.arguments !== undefined && fn.arguments !== null && typeof fn.arguments !== "string") fn.arguments = JSON.stringify(fn.arguments);
}

/**
 * Content given as parts (Mistral, some LiteLLM backends) as OpenAI's one
 * string: the text parts joined; others (a model's "thinking") are not the
 * answer and are left out. Null when there is no text at all.
 */
function textOfParts(parts: unknown[]): string | null {
  let text: string | null = null;
  for (const part of parts) {
    if (typeof part === "string") text = (text ?? "") + part;
    else if (isObject(part) && (part.type === "text" || part.type === undefined) && typeof part.text === "string") text = (text ?? "") + part.text;
  }
  return text;
}

function named(json: Record<string, unknown>, id: string, object: string): Record<string, unknown> {
  json.id = id;
  json.model = CHAT_ALIAS;
  json.object = object;
  // OpenAI's `created` is whole seconds; some providers send a fraction, and the typed RPC messages take only whole ones.
  const created = json.created;
  if (typeof created !== "number" || !Number.isInteger(created)) {
    json.created = typeof created === "number" && Number.isFinite(created) && created >= 0 ? Math.floor(created) : Math.floor(Date.now() / 1000);
  }
  return json;
}
