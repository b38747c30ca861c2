import { randomFillSync } from "node:crypto";
import { CHAT_ALIAS } from "../api/model.js";
import type { ChatChunkJson, ChatCompletionJson, GatewayRequest } from "./chat-types.js";
import { CHUNK, COMPLETION, EMBEDDING_REQUEST_FIELDS, isObject, pick, REQUEST_FIELDS } from "./openai-fields.js";
import { withRecalledReasoning, type RecalledReasoning } from "./reasoning-memory.js";

/**
 * 32 hex digits, unique across instances and restarts, that tell a client
 * nothing but roughly when: 12 of the time in milliseconds, then 20 drawn at
 * random (80 bits). A counter told anyone who made two requests how many
 * others the service answered in between. The random digits come from a
 * pool refilled 4 KiB at a time (a UUID per id was 1.5% of the Responses
 * route's CPU), and the time in front keeps the ids stored together next to
 * each other in their primary key's index.
 */
export function uniqueHex(): string {
  if (randomAt + RANDOM_BYTES > randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  const from = randomAt;
  randomAt += RANDOM_BYTES;
  return Date.now().toString(16).padStart(12, "0") + randomPool.toString("hex", from, randomAt);
}

const RANDOM_BYTES = 10;
const randomPool = Buffer.allocUnsafe(4096);
let randomAt = randomPool.length;

/** Our completion id, in OpenAI's form; one per request, shared by all chunks of a stream. */
export function newCompletionId(): string {
  return `chatcmpl-${uniqueHex()}`;
}

/**
 * The body sent upstream: OpenAI's documented fields of the client's request,
 * untouched, except `model` (the upstream's own name), for an internal
 * non-streaming call any `stream` flag, and the reasoning this upstream
 * wrote for tool turns the messages carry without it (`recalled`, see
 * ReasoningMemory). Everything else (our `program`, an aggregator's routing
 * fields) stays here.
 */
export function upstreamRequestBody(request: GatewayRequest, upstream: { name: string; model: string }, stream: boolean, recalled?: RecalledReasoning): string {
  const body: Record<string, unknown> = {};
  for (const key in request) {
    if (REQUEST_FIELDS.has(key)) body[key] = request[key];
  }
  body.model = upstream.model;
  if (recalled !== undefined) body.messages = withRecalledReasoning(body.messages, upstream.name, recalled);
  if (stream) {
    body.stream = true;
  } else if (body.stream === true) {
    delete body.stream;
    delete body.stream_options;
  }
  return JSON.stringify(body);
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
  /** Per choice: the provider's tool call index (or the call's id) → ours. */
  readonly #calls = new Map<number, { ours: Map<unknown, number>; count: number; last: number }>();
  /** Choices seen, and those that gave a finish_reason. */
  readonly #choices = new Set<unknown>();
  readonly #finished = new Set<unknown>();

  constructor(id: string) {
    this.#id = id;
  }

  /** The chunk to relay, or undefined for one that carries nothing a client reads (Azure's opening content-filter chunk). */
  rewrite(chunk: ChatChunkJson): ChatChunkJson | undefined {
    const json = named(pick(chunk, CHUNK), this.#id, "chat.completion.chunk");
    const choices = json.choices;
    if ((!Array.isArray(choices) || choices.length === 0) && json.usage == null) return undefined;
    if (Array.isArray(choices)) {
      for (const choice of choices) {
        if (!isObject(choice)) continue;
        this.#choices.add(choice.index ?? 0);
        if (typeof choice.finish_reason === "string") this.#finished.add(choice.index ?? 0);
        if (!isObject(choice.delta)) continue;
        const delta = choice.delta;
        if (Array.isArray(delta.content)) delta.content = textOfParts(delta.content) ?? "";
        if (Array.isArray(delta.tool_calls)) this.#numberCalls(typeof choice.index === "number" ? choice.index : 0, delta.tool_calls);
      }
    }
    return json;
  }

  /**
   * True once every choice seen gave its finish_reason: a stream that ends then is whole even without `[DONE]`
   * (some servers, llama.cpp forks and older TGI among them, never send it).
   */
  get finished(): boolean {
    return this.#choices.size > 0 && this.#finished.size === this.#choices.size;
  }

  #numberCalls(choice: number, calls: unknown[]): void {
    let known = this.#calls.get(choice);
    if (!known) {
      known = { ours: new Map(), count: 0, last: -1 };
      this.#calls.set(choice, known);
    }
    for (const call of calls) {
      if (!isObject(call)) continue;
      const key = typeof call.index === "number" ? call.index : typeof call.id === "string" ? call.id : undefined;
      let ours = key === undefined ? known.last : known.ours.get(key);
      if (ours === undefined || ours < 0) {
        ours = known.count++;
        if (key !== undefined) known.ours.set(key, ours);
      }
      known.last = ours;
      call.index = ours;
      openAiToolCall(call);
    }
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
