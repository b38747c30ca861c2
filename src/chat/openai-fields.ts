/**
 * OpenAI's documented chat completion fields, the only ones that cross the
 * gateway in either direction (from the openai package's
 * `ChatCompletionCreateParams`, `ChatCompletion` and `ChatCompletionChunk`).
 *
 * Going out, an allowlist rather than a list of known routing fields: an
 * aggregator upstream (OpenRouter, LiteLLM, Portkey) reads `models`, `route`,
 * `provider`, `api_base` and more from the body, and any field we did not
 * think of would let a client choose paid models or another provider. Coming
 * back, the same idea: fields a provider adds (a region, a cost, its own
 * routing notes) are dropped at every level.
 */
export const REQUEST_FIELDS: ReadonlySet<string> = new Set([
  "messages",
  "model",
  "audio",
  "frequency_penalty",
  "function_call",
  "functions",
  "logit_bias",
  "logprobs",
  "max_completion_tokens",
  "max_tokens",
  "metadata",
  "modalities",
  "moderation",
  "n",
  "parallel_tool_calls",
  "prediction",
  "presence_penalty",
  "prompt_cache_key",
  "prompt_cache_options",
  "prompt_cache_retention",
  "reasoning_effort",
  "response_format",
  "safety_identifier",
  "seed",
  "service_tier",
  "stop",
  "store",
  "stream",
  "stream_options",
  "temperature",
  "tool_choice",
  "tools",
  "top_logprobs",
  "top_p",
  "user",
  "verbosity",
  "web_search_options",
]);

/** OpenAI's documented embeddings fields (`EmbeddingCreateParams`): the same allowlist, for `/v1/embeddings`. */
export const EMBEDDING_REQUEST_FIELDS: ReadonlySet<string> = new Set(["input", "model", "dimensions", "encoding_format", "user"]);

/**
 * The allowed keys of an object, each with what its value may hold: `true`
 * keeps the value as it is (a scalar, or an object OpenAI defines whole such
 * as `metadata`), a Shape filters a nested object, and `[Shape]` each object
 * of an array.
 */
interface Shape {
  readonly [key: string]: true | Shape | readonly [Shape];
}

const USAGE: Shape = {
  prompt_tokens: true,
  completion_tokens: true,
  total_tokens: true,
  completion_tokens_details: {
    accepted_prediction_tokens: true,
    audio_tokens: true,
    reasoning_tokens: true,
    rejected_prediction_tokens: true,
    text_tokens: true,
  },
  prompt_tokens_details: { audio_tokens: true, cache_write_tokens: true, cached_tokens: true },
};

const TOKEN_LOGPROB: Shape = { token: true, bytes: true, logprob: true, top_logprobs: [{ token: true, bytes: true, logprob: true }] };
const LOGPROBS: Shape = { content: [TOKEN_LOGPROB], refusal: [TOKEN_LOGPROB] };
const FUNCTION_CALL: Shape = { name: true, arguments: true };
const TOOL_CALL: Shape = { id: true, type: true, function: FUNCTION_CALL, custom: { name: true, input: true } };
const AUDIO: Shape = { id: true, data: true, expires_at: true, transcript: true };

const MESSAGE: Shape = {
  role: true,
  content: true,
  refusal: true,
  annotations: [{ type: true, url_citation: { start_index: true, end_index: true, title: true, url: true } }],
  audio: AUDIO,
  function_call: FUNCTION_CALL,
  tool_calls: [TOOL_CALL],
};

const DELTA: Shape = {
  role: true,
  content: true,
  refusal: true,
  audio: AUDIO,
  function_call: FUNCTION_CALL,
  tool_calls: [{ index: true, ...TOOL_CALL }],
};

/**
 * Left out on purpose although documented, because they tell which upstream served: `system_fingerprint`
 * (its backend), `service_tier` (each provider has its own values: OpenAI's "default", Groq's "on_demand")
 * and `metadata` (whatever the provider put there). A client's own `service_tier` still reaches the upstream.
 */
const COMPLETION_TOP = { id: true, object: true, created: true, model: true, usage: USAGE, moderation: true } as const;

export const COMPLETION: Shape = {
  ...COMPLETION_TOP,
  choices: [{ index: true, finish_reason: true, logprobs: LOGPROBS, message: MESSAGE }],
};

export const CHUNK: Shape = {
  ...COMPLETION_TOP,
  obfuscation: true,
  choices: [{ index: true, finish_reason: true, logprobs: LOGPROBS, delta: DELTA }],
};

/**
 * Blanks, in place, every key `shape` does not allow, at every level it
 * describes, and returns `value`: the key is set to `undefined`, which
 * `JSON.stringify` leaves out and protobuf's `fromJson` never sees as a field
 * of ours. Not `delete`: that turns the object into a slow dictionary-mode
 * one, and this runs on every answer and every streamed chunk (with parse
 * and stringify, 5.0 µs a chunk with `delete`, 2.2 µs without). In place
 * rather than a copy, so the common case allocates nothing.
 */
export function pick(value: Record<string, unknown>, shape: Shape): Record<string, unknown> {
  for (const key in value) {
    const rule = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (rule === undefined) {
      value[key] = undefined;
      continue;
    }
    if (rule === true) continue;
    const field = value[key];
    if (field === null || typeof field !== "object") continue;
    if (Array.isArray(rule)) {
      if (Array.isArray(field)) for (const item of field) if (isObject(item)) pick(item, rule[0] as Shape);
    } else if (!Array.isArray(field)) {
      pick(field as Record<string, unknown>, rule as Shape);
    }
  }
  return value;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether `text` is a whole JSON object: a call's arguments to which no more can follow. */
export function isJsonObject(text: string): boolean {
  try {
    return isObject(JSON.parse(text));
  } catch {
    return false;
  }
}
