import { invalidRequest, type ServiceError } from "../../server/errors.js";

/** One input item as `GET /v1/responses/{id}/input_items` lists it: OpenAI's `ResponseItem`, with its `id`. */
export type InputItem = Record<string, unknown> & { id: string; type: string };

/** An input items page in OpenAI's list shape. */
export interface InputItemList {
  object: "list";
  data: InputItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** `order`, `limit`, `after` and `before` of an input items list, checked. */
export interface InputItemsQuery {
  order: "asc" | "desc";
  limit: number;
  after: string | undefined;
  before: string | undefined;
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

/** The id prefix OpenAI gives each kind of input item. */
const PREFIXES: Record<string, string> = { message: "msg", function_call: "fc", function_call_output: "fco", reasoning: "rs" };

/**
 * The input items of a request as stored with its response: this request's
 * own `input` only (not the conversation a `previous_response_id` continues),
 * in order. A string is one user message with `input_text` content; items are
 * kept as sent, a message's string content as OpenAI lists it (`input_text`,
 * or `output_text` for the assistant's), and every item has an `id`: the one
 * the client sent, else one made from the response's id and the item's place
 * (so the same on every read, and unique: response ids are). A repeated id
 * gets a made one too, so `after` always names one item. `input` must have
 * passed `toChatRequest`, which checked every item.
 */
export function inputItemsOf(input: unknown, responseId: string): InputItem[] {
  const base = responseId.startsWith("resp_") ? responseId.slice("resp_".length) : responseId;
  const madeId = (type: string, index: number) => `${PREFIXES[type] ?? "item"}_${base}${index.toString(16).padStart(4, "0")}`;
  if (typeof input === "string") {
    return [{ id: madeId("message", 0), type: "message", status: "completed", role: "user", content: [{ type: "input_text", text: input }] }];
  }
  const seen = new Set<string>();
  return (input as Record<string, unknown>[]).map((item, index) => {
    const type = typeof item.type === "string" ? item.type : "message";
    const sent = typeof item.id === "string" && item.id !== "" && !seen.has(item.id) ? item.id : undefined;
    const id = sent ?? madeId(type, index);
    seen.add(id);
    const listed: InputItem = { ...item, id, type };
    if (type === "message" && typeof item.content === "string") listed.content = [textPart(item.role, item.content)];
    if (type !== "reasoning" && (item.status === undefined || item.status === null)) listed.status = "completed";
    return listed;
  });
}

function textPart(role: unknown, text: string): Record<string, unknown> {
  return role === "assistant" ? { type: "output_text", text, annotations: [] } : { type: "input_text", text };
}

/** The query of `GET /v1/responses/{id}/input_items` (`include` changes nothing), checked by `inputItemsQuery`. */
export function parseInputItemsQuery(params: URLSearchParams): InputItemsQuery {
  const limitText = params.get("limit");
  return inputItemsQuery({
    order: params.get("order") ?? undefined,
    limit: limitText === null ? undefined : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN,
    after: params.get("after") || undefined,
    before: params.get("before") || undefined,
  });
}

/**
 * An input items query, from REST's query string or the RPC's fields, checked
 * as OpenAI does: `order` asc or desc (default desc), `limit` a whole number
 * from 1 to 100 (default 20), `after`/`before` item ids. `include` is
 * accepted and changes nothing: the items are listed whole.
 */
export function inputItemsQuery(asked: { order?: string; limit?: number; after?: string; before?: string }): InputItemsQuery {
  const { order } = asked;
  if (order !== undefined && order !== "asc" && order !== "desc") throw invalidRequest("`order` must be `asc` or `desc`", "order");
  const limit = asked.limit ?? DEFAULT_LIMIT;
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIMIT)) throw invalidRequest(`\`limit\` must be a whole number from 1 to ${MAX_LIMIT}`, "limit");
  return { order: order ?? "desc", limit, after: asked.after || undefined, before: asked.before || undefined };
}

/** The 400 for an `after` or `before` that names none of the response's input items. */
export function unknownInputItem(param: "after" | "before", id: string): ServiceError {
  return invalidRequest(`\`${param}\`: this response has no input item with id \`${id}\``, param);
}

/** The stored input items; none for a response stored before they were. */
export function storedInputItems(json: string | null): InputItem[] {
  return json === null ? [] : (JSON.parse(json) as InputItem[]);
}
