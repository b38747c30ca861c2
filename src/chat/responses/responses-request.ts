import { invalidRequest } from "../../server/errors.js";
import { given, parseOpenAiBody } from "../chat-request.js";
import type { ChatRequest } from "../chat-types.js";
import { isObject } from "../openai-fields.js";

/** A chat message as the upstreams read it. */
export type ChatMessage = Record<string, unknown> & { role: string };

/** A Responses API request body, as sent; only what is translated is read. */
export type ResponsesRequest = Record<string, unknown> & { model: string };

/** The one tool type accepted: the others (web search, file search, …) run on OpenAI's own servers, and nothing behind the alias can run them. */
const FUNCTION_TOOL = "function";

/**
 * Checks a Responses body before anything is committed: the parts every
 * later step relies on, and the options the response object echoes back
 * (typed clients parse them), by OpenAI's documented types and ranges.
 * What the upstream judges (schemas, the words) passes through untouched.
 */
export function parseResponsesRequest(json: unknown): ResponsesRequest {
  const body = parseOpenAiBody(json);
  if (typeof body.input !== "string" && !Array.isArray(body.input)) throw invalidRequest("`input` must be a string or an array of input items", "input");
  for (const name of ["stream", "store", "parallel_tool_calls", "background"]) {
    if (given(body[name]) && typeof body[name] !== "boolean") throw invalidRequest(`\`${name}\` must be a boolean`, name);
  }
  for (const name of ["instructions", "previous_response_id", "user", "program", "safety_identifier", "prompt_cache_key"]) {
    if (given(body[name]) && typeof body[name] !== "string") throw invalidRequest(`\`${name}\` must be a string`, name);
  }
  refuseUnservable(body);
  checkNumber(body, "temperature", 0, 2);
  checkNumber(body, "top_p", 0, 1);
  checkWholeNumber(body, "max_output_tokens", 1);
  checkWholeNumber(body, "max_tool_calls", 1);
  checkWholeNumber(body, "top_logprobs", 0, 20);
  checkOneOf(body.truncation, TRUNCATIONS, "truncation");
  checkOneOf(body.service_tier, SERVICE_TIERS, "service_tier");
  checkInclude(body.include);
  if (given(body.tool_choice)) chatToolChoice(body.tool_choice);
  checkMetadata(body.metadata);
  checkText(body.text);
  checkReasoning(body.reasoning);
  if (given(body.tools)) {
    if (!Array.isArray(body.tools)) throw invalidRequest("`tools` must be an array", "tools");
    for (const tool of body.tools) checkTool(tool);
  }
  return body as ResponsesRequest;
}

/**
 * OpenAI's fields that change what the model sees or how the response is
 * delivered, which nothing here can do: a 400 naming the field rather than
 * an answer that silently ignored it.
 */
function refuseUnservable(body: Record<string, unknown>): void {
  if (body.background === true) {
    throw invalidRequest("background responses are not supported: every response is answered as it is made, so leave `background` out or false", "background");
  }
  if (given(body.conversation)) throw invalidRequest("`conversation` is not supported: continue a response with `previous_response_id`", "conversation");
  if (given(body.prompt)) throw invalidRequest("stored prompts (`prompt`) are not supported: send the instructions and the input themselves", "prompt");
}

/** A function tool: its `name`, and the optional fields the response echoes, by type. */
function checkTool(tool: unknown): void {
  const type = isObject(tool) ? tool.type : undefined;
  if (!isObject(tool) || type !== FUNCTION_TOOL) {
    throw invalidRequest(`the tool type \`${String(type)}\` is not supported: only function tools run behind this model`, "tools");
  }
  if (typeof tool.name !== "string" || tool.name === "") throw invalidRequest("every function tool needs a `name`", "tools");
  if (given(tool.description) && typeof tool.description !== "string") throw invalidRequest("a function tool's `description` must be a string", "tools");
  if (given(tool.parameters) && !isObject(tool.parameters)) throw invalidRequest("a function tool's `parameters` must be a JSON schema object", "tools");
  if (given(tool.strict) && typeof tool.strict !== "boolean") throw invalidRequest("a function tool's `strict` must be a boolean", "tools");
}

function checkNumber(body: Record<string, unknown>, name: string, min: number, max: number): void {
  const value = body[name];
  if (!given(value)) return;
  if (typeof value !== "number" || !(value >= min && value <= max)) throw invalidRequest(`\`${name}\` must be a number from ${min} to ${max}`, name);
}

function checkWholeNumber(body: Record<string, unknown>, name: string, min: number, max?: number): void {
  const value = body[name];
  if (!given(value)) return;
  if (Number.isInteger(value) && (value as number) >= min && (max === undefined || (value as number) <= max)) return;
  const range = max === undefined ? `of at least ${min}` : `from ${min} to ${max}`;
  throw invalidRequest(`\`${name}\` must be a whole number ${range}`, name);
}

/** A value from a closed set of OpenAI's strings, or nothing. */
function checkOneOf(value: unknown, allowed: ReadonlySet<string>, param: string): void {
  if (given(value) && !(typeof value === "string" && allowed.has(value))) throw invalidRequest(`\`${param}\` must be one of ${[...allowed].join(", ")}`, param);
}

/** The closed sets OpenAI documents for these fields (the openai package's types of the same names). */
const TRUNCATIONS: ReadonlySet<string> = new Set(["auto", "disabled"]);
/** `ServiceTier`. */
const SERVICE_TIERS: ReadonlySet<string> = new Set(["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"]);
/** `ResponseTextConfig.verbosity`; chat's `verbosity` takes the same. */
const VERBOSITIES: ReadonlySet<string> = new Set(["low", "medium", "high"]);
/** `Reasoning.summary`. */
const REASONING_SUMMARIES: ReadonlySet<string> = new Set(["auto", "concise", "detailed"]);
/** `ResponseIncludable`. */
const INCLUDABLES: ReadonlySet<string> = new Set([
  "file_search_call.results",
  "web_search_call.results",
  "web_search_call.action.sources",
  "message.input_image.image_url",
  "computer_call_output.output.image_url",
  "code_interpreter_call.outputs",
  "reasoning.encrypted_content",
  "message.output_text.logprobs",
]);
/** `ToolChoiceOptions`. */
const TOOL_CHOICE_OPTIONS: ReadonlySet<string> = new Set(["none", "auto", "required"]);

/** `include`: extra output to add; what a chat upstream can give is in the answer already, the rest never occurs here. */
function checkInclude(include: unknown): void {
  if (!given(include)) return;
  if (!Array.isArray(include) || !include.every((item) => typeof item === "string" && INCLUDABLES.has(item))) {
    throw invalidRequest(`\`include\` must be an array of ${[...INCLUDABLES].join(", ")}`, "include");
  }
}

/** `text`: an object whose `verbosity` is one OpenAI documents; its `format` is checked as it is translated. */
function checkText(text: unknown): void {
  if (!given(text)) return;
  if (!isObject(text)) throw invalidRequest("`text` must be an object", "text");
  checkOneOf(text.verbosity, VERBOSITIES, "text.verbosity");
}

/** The reasoning efforts OpenAI documents (the openai package's `ReasoningEffort`); chat's `reasoning_effort` takes the same. */
const REASONING_EFFORTS: ReadonlySet<string> = new Set(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);

/**
 * `reasoning`: an object whose `effort` and `summary` (or the older
 * `generate_summary`), when given, are ones OpenAI documents. A summary has
 * no chat form: it is only echoed.
 */
function checkReasoning(reasoning: unknown): void {
  if (!given(reasoning)) return;
  if (!isObject(reasoning)) throw invalidRequest("`reasoning` must be an object", "reasoning");
  checkOneOf(reasoning.effort, REASONING_EFFORTS, "reasoning.effort");
  checkOneOf(reasoning.summary, REASONING_SUMMARIES, "reasoning.summary");
  checkOneOf(reasoning.generate_summary, REASONING_SUMMARIES, "reasoning.generate_summary");
}

/** The checked `reasoning.effort`, if one was asked for. */
export function reasoningEffort(request: ResponsesRequest): string | undefined {
  return isObject(request.reasoning) && typeof request.reasoning.effort === "string" ? request.reasoning.effort : undefined;
}

/** OpenAI's limits for `metadata`: up to 16 pairs, keys up to 64 characters, string values up to 512 (characters are code points, as a person counts them). */
function checkMetadata(metadata: unknown): void {
  if (!given(metadata)) return;
  const entries = isObject(metadata) ? Object.entries(metadata) : undefined;
  const valid =
    entries !== undefined &&
    entries.length <= 16 &&
    entries.every(([key, value]) => atMostCharacters(key, 64) && typeof value === "string" && atMostCharacters(value, 512));
  if (!valid) throw invalidRequest("`metadata` must be an object of up to 16 strings, keys up to 64 characters and values up to 512", "metadata");
}

function atMostCharacters(text: string, max: number): boolean {
  // Every code point is one or two UTF-16 units, so a longer text is over the limit before it is counted.
  return text.length <= 2 * max && [...text].length <= max;
}

/**
 * The chat completion request that serves a Responses request: the
 * continued conversation (`history`, from `previous_response_id`), the
 * instructions as a system message, the input items as messages, and the
 * options under their chat names.
 */
export function toChatRequest(request: ResponsesRequest, history: readonly ChatMessage[], stream: boolean): { chat: ChatRequest; input: ChatMessage[] } {
  const input = inputMessages(request.input);
  const messages: ChatMessage[] = [];
  if (typeof request.instructions === "string" && request.instructions !== "") messages.push({ role: "system", content: request.instructions });
  // Not push(...): spread arguments overflow the stack with a long conversation (a call takes so many).
  for (const message of history) messages.push(message);
  for (const message of input) messages.push(message);
  const chat: ChatRequest = { model: request.model, messages };
  if (request.program !== undefined) chat.program = request.program;
  if (Array.isArray(request.tools) && request.tools.length > 0) {
    chat.tools = request.tools.map(chatTool);
    // Chat completions refuses these two without tools; the Responses API takes them (and echoes them) either way.
    if (given(request.tool_choice)) chat.tool_choice = chatToolChoice(request.tool_choice);
    copy(request, chat, "parallel_tool_calls");
  }
  const format = isObject(request.text) ? request.text.format : undefined;
  const responseFormat = chatResponseFormat(format);
  if (responseFormat) chat.response_format = responseFormat;
  copy(request, chat, "temperature");
  copy(request, chat, "top_p");
  copy(request, chat, "user");
  copy(request, chat, "safety_identifier");
  copy(request, chat, "prompt_cache_key");
  copy(request, chat, "service_tier");
  if (isObject(request.text)) copy(request.text, chat, "verbosity");
  const effort = reasoningEffort(request);
  if (effort !== undefined) chat.reasoning_effort = effort;
  if (typeof request.max_output_tokens === "number") chat.max_completion_tokens = request.max_output_tokens;
  if (typeof request.top_logprobs === "number") {
    chat.logprobs = true;
    chat.top_logprobs = request.top_logprobs;
  }
  if (stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return { chat, input };
}

/** Chat fields the translation names otherwise, by the Responses field each is made from. */
const RESPONSES_NAMES: Readonly<Record<string, string>> = {
  messages: "input",
  max_completion_tokens: "max_output_tokens",
  response_format: "text.format",
  reasoning_effort: "reasoning.effort",
  verbosity: "text.verbosity",
  logprobs: "top_logprobs",
  tool_choice: "tool_choice",
};
/** Chat fields copied from the Responses fields of the same name. */
const SAME_NAMES: ReadonlySet<string> = new Set([
  "tools",
  "parallel_tool_calls",
  "temperature",
  "top_p",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "service_tier",
  "top_logprobs",
]);

/**
 * The Responses field a field of the translated chat request (as an
 * upstream's refusal names it: `tools[0].function.parameters`,
 * `messages[2].content`) was made from, or undefined for one only the
 * translation sets (`stream_options`). A message's place differs (the
 * instructions and a continued conversation come first), so any is `input`.
 */
export function responsesParam(chatParam: string, request: ResponsesRequest): string | undefined {
  // A path of names and indexes only: the upstream wrote it, and it reaches the client.
  if (!FIELD_PATH.test(chatParam)) return undefined;
  const tool = /^tools\[(\d+)\](?:\.function)?(.*)$/.exec(chatParam);
  if (tool) return Array.isArray(request.tools) && Number(tool[1]) < request.tools.length ? `tools[${tool[1]}]${tool[2]}` : undefined;
  const field = chatParam.split(/[.[]/, 1)[0]!;
  const named = Object.hasOwn(RESPONSES_NAMES, field) ? RESPONSES_NAMES[field]! : SAME_NAMES.has(field) ? chatParam : undefined;
  // A field the client sent: the translation's own (`stream_options`) or one it left out tell the client nothing.
  return named !== undefined && given(request[named.split(/[.[]/, 1)[0]!]) ? named : undefined;
}

const FIELD_PATH = /^[a-z_][a-z0-9_]*(?:\[\d{1,6}\]|\.[a-z_][a-z0-9_]*)*$/i;

/** `input` as chat messages: a string is one user message; items become messages, tool calls and tool results. */
function inputMessages(input: unknown): ChatMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  const messages: ChatMessage[] = [];
  for (const [index, item] of (input as unknown[]).entries()) {
    const param = `input[${index}]`;
    if (!isObject(item)) throw invalidRequest(`${param} must be an object`, "input");
    const type = item.type ?? (typeof item.role === "string" ? "message" : undefined);
    if (type === "message") {
      const message = messageItem(item, param);
      const last = messages.at(-1);
      // Words an answer gave after its calls began (a stream lists that message after them) are still that turn's:
      // a chat assistant turn's calls are followed by their results, which providers refuse to find anything between.
      if (message.role === "assistant" && typeof message.content === "string" && last?.role === "assistant" && Array.isArray(last.tool_calls)) {
        last.content = (typeof last.content === "string" ? last.content : "") + message.content;
      } else {
        messages.push(message);
      }
    } else if (type === "function_call") {
      if (typeof item.call_id !== "string" || typeof item.name !== "string" || typeof item.arguments !== "string") {
        throw invalidRequest(`${param}: a function_call needs \`call_id\`, \`name\` and \`arguments\` strings`, "input");
      }
      const call = { id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } };
      // An answer's message and the calls after it are one assistant turn, as chat completions expects them
      // (and as a previous_response_id chain stores them).
      const last = messages.at(-1);
      if (last?.role === "assistant") last.tool_calls = [...(Array.isArray(last.tool_calls) ? last.tool_calls : []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (type === "function_call_output") {
      if (typeof item.call_id !== "string") throw invalidRequest(`${param}: a function_call_output needs a \`call_id\``, "input");
      messages.push({ role: "tool", tool_call_id: item.call_id, content: toolContent(item.output, param) });
    } else if (type === "reasoning") {
      // Reasoning the client echoes back has no chat form; the answer it led to is in the other items.
    } else {
      throw invalidRequest(`${param}: the input item type \`${String(type)}\` is not supported`, "input");
    }
  }
  if (messages.length === 0) throw invalidRequest("`input` must contain at least one message", "input");
  return messages;
}

/**
 * A function_call_output's `output` as a chat tool message's content. An
 * array of content items is read for its `input_text` items: one is sent as
 * the text, several as text parts. A chat tool message carries nothing else,
 * so an image or a file there is a 400 rather than text the model would
 * misread.
 */
function toolContent(output: unknown, param: string): string | { type: "text"; text: string }[] {
  if (typeof output === "string") return output;
  if (!Array.isArray(output)) return JSON.stringify(output ?? "");
  const parts = output.map((part, i) => {
    const where = `${param}.output[${i}]`;
    const type = isObject(part) ? part.type : undefined;
    if (type === "input_text" && isObject(part) && typeof part.text === "string") return { type: "text" as const, text: part.text };
    if (type === "input_image" || type === "input_file") {
      throw invalidRequest(`${where}: a function_call_output can carry only input_text items here (chat tool results cannot carry an \`${type}\`)`, "input");
    }
    throw invalidRequest(`${where}: a function_call_output's output items must be input_text (an object with a \`text\` string)`, "input");
  });
  if (parts.length === 0) return "";
  return parts.length === 1 ? parts[0]!.text : parts;
}

const ROLES = new Set(["user", "assistant", "system", "developer"]);

function messageItem(item: Record<string, unknown>, param: string): ChatMessage {
  const role = item.role;
  if (typeof role !== "string" || !ROLES.has(role)) throw invalidRequest(`${param}: \`role\` must be user, assistant, system or developer`, "input");
  // Not every upstream knows the newer "developer" role; "system" means the same to all of them.
  const chatRole = role === "developer" ? "system" : role;
  const content = item.content;
  if (typeof content === "string") return { role: chatRole, content };
  if (!Array.isArray(content)) throw invalidRequest(`${param}: \`content\` must be a string or an array of content parts`, "input");
  if (chatRole === "assistant") {
    // An assistant's parts are its earlier answer: chat takes it as plain text.
    return { role: chatRole, content: content.map((part, i) => partText(part, `${param}.content[${i}]`)).join("") };
  }
  return { role: chatRole, content: content.map((part, i) => chatPart(part, `${param}.content[${i}]`)) };
}

function partText(part: unknown, param: string): string {
  if (isObject(part) && (part.type === "output_text" || part.type === "input_text" || part.type === "text") && typeof part.text === "string") return part.text;
  if (isObject(part) && part.type === "refusal" && typeof part.refusal === "string") return part.refusal;
  throw invalidRequest(`${param}: expected an output_text part`, "input");
}

function chatPart(part: unknown, param: string): Record<string, unknown> {
  if (!isObject(part)) throw invalidRequest(`${param} must be an object`, "input");
  if ((part.type === "input_text" || part.type === "output_text" || part.type === "text") && typeof part.text === "string") {
    return { type: "text", text: part.text };
  }
  if (part.type === "input_image") {
    const url = typeof part.image_url === "string" ? part.image_url : undefined;
    if (!url) throw invalidRequest(`${param}: an input_image needs an \`image_url\` (file ids are not supported)`, "input");
    return { type: "image_url", image_url: { url, ...(typeof part.detail === "string" ? { detail: part.detail } : {}) } };
  }
  if (part.type === "input_file") return chatFile(part, param);
  throw invalidRequest(`${param}: the content part type \`${String(part.type)}\` is not supported`, "input");
}

/** Why an input_file named by its id or URL cannot be read here. */
const UNREADABLE_FILE_SOURCES = { file_id: "no files are stored here", file_url: "no files are fetched here" } as const;

/**
 * An input_file given with its contents (how the AI SDK sends a PDF) as chat's
 * `file` part. One named by `file_id` or `file_url` is for OpenAI to read from
 * its file storage or the web, which nothing here keeps or fetches: a 400 that
 * says so, rather than an id the upstream cannot resolve.
 */
function chatFile(part: Record<string, unknown>, param: string): Record<string, unknown> {
  if (typeof part.file_data !== "string" || part.file_data === "") {
    const named = (["file_id", "file_url"] as const).find((source) => given(part[source]));
    const why = named === undefined ? "" : ` (\`${named}\` is not supported: ${UNREADABLE_FILE_SOURCES[named]})`;
    throw invalidRequest(`${param}: an input_file needs its contents in \`file_data\`, as a data URL${why}`, "input");
  }
  if (given(part.filename) && typeof part.filename !== "string") throw invalidRequest(`${param}: an input_file's \`filename\` must be a string`, "input");
  return { type: "file", file: { ...(typeof part.filename === "string" ? { filename: part.filename } : {}), file_data: part.file_data } };
}

function chatTool(tool: unknown): Record<string, unknown> {
  const fields = tool as Record<string, unknown>;
  const fn: Record<string, unknown> = { name: fields.name };
  for (const name of ["description", "parameters", "strict"]) copy(fields, fn, name);
  return { type: "function", function: fn };
}

/** `tool_choice` in chat's form: a mode as it is, a function by name, or `allowed_tools` over function tools. */
function chatToolChoice(choice: unknown): unknown {
  if (typeof choice === "string" && TOOL_CHOICE_OPTIONS.has(choice)) return choice;
  if (isObject(choice) && choice.type === "function" && typeof choice.name === "string") return chatFunctionChoice(choice.name);
  if (isObject(choice) && choice.type === "allowed_tools") return chatAllowedTools(choice);
  throw invalidRequest("`tool_choice` must be auto, none, required, a function or allowed_tools", "tool_choice");
}

function chatFunctionChoice(name: string): Record<string, unknown> {
  return { type: "function", function: { name } };
}

/** Responses' `{type: "allowed_tools", mode, tools}` as chat's `{type: "allowed_tools", allowed_tools: {mode, tools}}`, each tool in chat's form. */
function chatAllowedTools(choice: Record<string, unknown>): unknown {
  const { mode, tools } = choice;
  if ((mode !== "auto" && mode !== "required") || !Array.isArray(tools)) {
    throw invalidRequest("an allowed_tools `tool_choice` needs a `mode` (auto or required) and a `tools` array", "tool_choice");
  }
  const functions = tools.map((tool) => {
    if (!isObject(tool) || tool.type !== FUNCTION_TOOL || typeof tool.name !== "string") {
      throw invalidRequest("an allowed_tools `tool_choice` lists function tools only, each with its `name`", "tool_choice");
    }
    return chatFunctionChoice(tool.name);
  });
  return { type: "allowed_tools", allowed_tools: { mode, tools: functions } };
}

function chatResponseFormat(format: unknown): Record<string, unknown> | undefined {
  if (format === undefined || format === null) return undefined;
  if (!isObject(format)) throw invalidRequest("`text.format` must be an object", "text.format");
  if (format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type === "json_schema") {
    if (typeof format.name !== "string" || !isObject(format.schema)) {
      throw invalidRequest("a json_schema `text.format` needs a `name` and a `schema` object", "text.format");
    }
    if (given(format.strict) && typeof format.strict !== "boolean") throw invalidRequest("`text.format.strict` must be a boolean", "text.format");
    const schema: Record<string, unknown> = { name: format.name, schema: format.schema };
    if (given(format.strict)) schema.strict = format.strict;
    if (typeof format.description === "string") schema.description = format.description;
    return { type: "json_schema", json_schema: schema };
  }
  if (typeof format.type !== "string") throw invalidRequest("`text.format.type` must be text, json_object or json_schema", "text.format");
  throw invalidRequest(`the text format \`${format.type}\` is not supported`, "text.format");
}

function copy(from: Record<string, unknown>, to: Record<string, unknown>, name: string): void {
  if (given(from[name])) to[name] = from[name];
}
