import { UPSTREAM_MISCONFIGURED } from "../../api/errors.js";
import { CHAT_ALIAS } from "../../api/model.js";
import type { ChatCompleter, ChatRequest, RequestLog } from "../../chat/chat-types.js";
import { isUpstreamMisconfigured } from "../../chat/upstream-client.js";
import { StageFailure } from "../../engine/stage-work.js";
import { ServiceError } from "../../server/errors.js";
import { withoutXmlForbidden } from "../../strings.js";
import { fitToSchema, quoted, settleOptional, validate, type Infer, type Schema } from "../json-schema.js";
import { tidyPlainText } from "./plain-text.js";
import type { WriterContext } from "./writer.js";

/** The chat router as a stage's writer reaches it. */
export interface StageChat {
  readonly completer: ChatCompleter;
  /** The stage's logger, bound to its plan and stage, for the router's lines about its upstream attempts. */
  readonly requestLog: RequestLog;
}

export interface StructuredRequest<S extends Schema> {
  /** Names the schema for the model (`json_schema.name`) and the failure message. */
  name: string;
  /** What is being written, for error messages ("the site outline"). */
  what: string;
  schema: S;
  system: string;
  user: string;
  /** Optional cap on the answer's length. */
  maxTokens?: number;
}

/**
 * Asks the chat router for JSON that follows `schema` (OpenAI structured
 * outputs, strict), tidies it to plain text (stray Markdown removed),
 * validates what is left against the same schema, and asks once more with
 * the problems found. A second answer that is only too long (more items, a
 * longer text than the schema holds) is cut to fit; any other second bad
 * answer fails the stage with `invalid_model_output`; errors of the router (pool exhausted, upstream
 * down) fail it with the router's own type and message.
 */
export async function completeStructured<S extends Schema>(chat: StageChat, request: StructuredRequest<S>, context: WriterContext): Promise<Infer<S>> {
  const messages: { role: string; content: string }[] = [
    { role: "system", content: request.system },
    { role: "user", content: request.user },
  ];
  let problems: string[] = [];
  let value: unknown;
  for (let attempt = 1; attempt <= 2; attempt++) {
    const { content, ...how } = await ask(chat, request, messages, context);
    const parsed = parseJsonAnswer(content, how);
    // Tidied before it is judged: a heading of only "## " is no heading.
    value = parsed.ok ? settleOptional(request.schema, tidyPlainText(parsed.value)) : undefined;
    problems = parsed.ok ? validate(request.schema, value) : [parsed.problem];
    if (problems.length === 0) return value as Infer<S>;
    messages.push(
      { role: "assistant", content: content ?? "" },
      {
        role: "user",
        content: `That answer cannot be used: ${problems.join("; ")}. Reply again with only the JSON object, following the schema exactly.`,
      },
    );
  }
  // Told and still too long (30 chapters for a goal that asks for them, a paragraph past its bound): what fits is kept,
  // the first items and whole sentences, rather than failing a plan over an answer that is otherwise good.
  if (value !== undefined) {
    const fitted = fitToSchema(request.schema, value as Infer<S>);
    if (validate(request.schema, fitted).length === 0) return fitted;
  }
  throw new StageFailure(
    "invalid_model_output",
    `The model's answer for ${request.what} could not be used, even after a retry: ${problems.slice(0, 3).join("; ")}`,
  );
}

async function ask(
  chat: StageChat,
  request: StructuredRequest<Schema>,
  messages: readonly { role: string; content: string }[],
  context: WriterContext,
): Promise<{ content: string | null } & AnswerEnd> {
  const body: ChatRequest = {
    // The public alias: the writers draw on the same free pool as every client.
    model: CHAT_ALIAS,
    messages: [...messages],
    response_format: {
      type: "json_schema",
      json_schema: { name: request.name, strict: true, schema: responseSchema(request.schema) },
    },
  };
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  context.signal.throwIfAborted();
  try {
    const completion = await chat.completer.complete(body, { accountId: context.accountId, signal: context.signal, requestLog: chat.requestLog });
    const choice: { message: { content: string | null; refusal?: unknown }; finish_reason?: unknown } | undefined = completion.choices[0];
    const refusal = choice?.message.refusal;
    const finishReason = choice?.finish_reason;
    return {
      content: choice?.message.content ?? null,
      ...(typeof refusal === "string" && refusal.trim() !== "" ? { refusal } : {}),
      ...(typeof finishReason === "string" ? { finishReason } : {}),
    };
  } catch (error) {
    if (error instanceof ServiceError) throw stageFailureOf(error, request);
    throw error;
  }
}

/**
 * A router error as the stage's failure, in the router's words except where
 * they advise a gateway client: a provider refusing the request, which is
 * the writer's own (only the choice of upstream can change it). Every
 * upstream refusing its entry's key or model is not transient: it fails at
 * once, as UPSTREAM_MISCONFIGURED. A busy
 * upstream's Retry-After goes with the failure, for the retry to wait; the
 * free pool's, until midnight, does not: no retry of a stage outlasts it.
 */
function stageFailureOf(error: ServiceError, request: StructuredRequest<Schema>): StageFailure {
  if (isUpstreamMisconfigured(error)) return new StageFailure(UPSTREAM_MISCONFIGURED, error.detail.message);
  if (error.type === "invalid_request") {
    return new StageFailure(
      error.type,
      `The model provider refused the writer's request for ${request.what} as invalid: a prompt longer than the model's context, or a model without OpenAI structured outputs (response_format with a json_schema), which the writers need.`,
    );
  }
  const retryAfterSeconds = error.type === "upstream_error" ? Number(error.metadata.get("retry-after")) : 0;
  return new StageFailure(error.type, error.detail.message, retryAfterSeconds > 0 ? { retryAfterMs: retryAfterSeconds * 1000 } : {});
}

type ParsedAnswer = { ok: true; value: unknown } | { ok: false; problem: string };

/** How the model's answer ended, beyond its text. */
export interface AnswerEnd {
  /** The model's refusal (OpenAI's `message.refusal`), given instead of the JSON. */
  refusal?: string;
  /** OpenAI's `finish_reason`; "length" when the answer hit the token limit, "content_filter" when the provider's filter stopped it. */
  finishReason?: string;
}

/**
 * The most arrays and objects an answer may nest. The writers' schemas nest
 * five deep (a page's sections' items); an answer deeper than its schema
 * but within this is judged by `validate`, path and all. One deeper is a
 * problem at once: walking it would overflow the stack.
 */
const ANSWER_NESTING_MAX = 32;

/**
 * Reads the model's JSON, repairing the usual slips before giving up:
 * a Markdown code fence around it, prose before or after the object, and
 * trailing commas. Anything else goes back to the model as a problem, named
 * for what happened: a refusal, an answer stopped by the provider's content
 * filter or cut off at the length limit, JSON nested far deeper than any
 * schema, or text that is not JSON. What it reads is holdable text
 * (holdableText).
 */
export function parseJsonAnswer(content: string | null, how: AnswerEnd = {}): ParsedAnswer {
  const parsed = parseJson(content);
  if (parsed.ok) {
    if (nestsDeeperThan(parsed.value, ANSWER_NESTING_MAX)) return { ok: false, problem: "the answer's JSON is nested deeper than its schema allows" };
    return { ok: true, value: holdableText(parsed.value) };
  }
  if (how.refusal !== undefined) return { ok: false, problem: `the model refused to answer: ${quoted(holdableText(how.refusal))}` };
  if (how.finishReason === "content_filter") return { ok: false, problem: "the model provider's content filter stopped the answer" };
  if (how.finishReason === "length") return { ok: false, problem: "the answer was cut off at the length limit before its JSON was complete" };
  return parsed;
}

/** Whether `value` nests arrays and objects more than `max` deep; walked without recursion, for JSON of any depth. */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: { item: unknown; depth: number }[] = [{ item: value, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next.item !== "object" || next.item === null) continue;
    if (next.depth >= max) return true;
    for (const child of Object.values(next.item)) pending.push({ item: child, depth: next.depth + 1 });
  }
  return false;
}

/**
 * Every string of a model's answer, keys included, as Postgres and XML can
 * hold it. JSON lets a model write `\u0000`, which no Postgres text or jsonb
 * value holds, the other control characters XML 1.0 forbids, and half of a
 * surrogate pair, which jsonb refuses and UTF-8 cannot encode. The first
 * two are dropped; a lone half becomes U+FFFD, the replacement character.
 */
function holdableText<T>(value: T): T {
  if (typeof value === "string") return withoutXmlForbidden(value).replace(LONE_SURROGATE, "\uFFFD") as T;
  if (Array.isArray(value)) return value.map((item: unknown) => holdableText(item)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [holdableText(key), holdableText(item)])) as T;
  }
  return value;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function parseJson(content: string | null): ParsedAnswer {
  if (content === null || content.trim() === "") return { ok: false, problem: "the answer was empty" };
  const candidates = [content.trim()];
  const fenced = fencedBlock(content);
  if (fenced) candidates.push(fenced.trim());
  const first = content.indexOf("{");
  const last = content.lastIndexOf("}");
  if (first !== -1 && last > first) candidates.push(content.slice(first, last + 1));
  for (const candidate of [...candidates, ...candidates.map((c) => c.replace(/,\s*([}\]])/g, "$1"))]) {
    try {
      return { ok: true, value: JSON.parse(candidate) as unknown };
    } catch {
      // try the next repair
    }
  }
  return { ok: false, problem: "the answer was not valid JSON" };
}

/**
 * The schema as sent to the model. Length bounds are left out because
 * OpenAI's strict mode rejects `minLength`/`maxLength`; answers are still
 * validated against them, and a violation goes back to the model. Strict
 * mode also wants every property required, so the optional ones are asked
 * for too (their descriptions say what to give when there is nothing), and
 * settled rather than judged when the answer comes back.
 */
function responseSchema(schema: Schema): Record<string, unknown> {
  switch (schema.type) {
    case "string": {
      const { minLength: _min, maxLength: _max, ...rest } = schema;
      return { ...rest };
    }
    case "integer":
      return { ...schema };
    case "array":
      return { ...schema, items: responseSchema(schema.items) };
    case "object":
      return {
        ...schema,
        required: Object.keys(schema.properties),
        properties: Object.fromEntries(Object.entries(schema.properties).map(([key, child]) => [key, responseSchema(child)])),
      };
  }
}

/** The text of the first ```…``` block (an optional `json` after the opening fence), found without a regex: answers can be long. */
function fencedBlock(content: string): string | undefined {
  const open = content.indexOf("```");
  if (open === -1) return undefined;
  let start = open + 3;
  if (content.slice(start, start + 4).toLowerCase() === "json") start += 4;
  const close = content.indexOf("```", start);
  return close === -1 ? undefined : content.slice(start, close);
}
