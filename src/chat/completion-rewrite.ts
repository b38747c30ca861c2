import { randomFillSync } from "node:crypto";
import { CHAT_ALIAS } from "../api/model.js";
import type { ChatChunkJson, ChatCompletionJson, GatewayRequest } from "./chat-types.js";
import { CHUNK, COMPLETION, EMBEDDING_REQUEST_FIELDS, pick, REQUEST_FIELDS } from "./openai-fields.js";

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
 * untouched, except `model` (the upstream's own name) and, for an internal
 * non-streaming call, any `stream` flag. Everything else (our `program`, an
 * aggregator's routing fields) stays here.
 */
export function upstreamRequestBody(request: GatewayRequest, upstreamModel: string, stream: boolean): string {
  const body: Record<string, unknown> = {};
  for (const key in request) {
    if (REQUEST_FIELDS.has(key)) body[key] = request[key];
  }
  body.model = upstreamModel;
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
 * usage and logprobs are as the upstream wrote them.
 */
export function clientCompletion(completion: ChatCompletionJson, id: string): ChatCompletionJson {
  return named(pick(completion, COMPLETION), id) as ChatCompletionJson;
}

/** A streamed chunk as the client sees it; see `clientCompletion`. */
export function clientChunk(chunk: ChatChunkJson, id: string): ChatChunkJson {
  return named(pick(chunk, CHUNK), id);
}

function named(json: Record<string, unknown>, id: string): Record<string, unknown> {
  json.id = id;
  json.model = CHAT_ALIAS;
  return json;
}
