import type { DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";

/**
 * ChatService's messages hold the OpenAI fields they have no typed field for
 * in a google.protobuf.Struct named `extra` (the params, a chat message, a
 * tool call). OpenAI's JSON has those fields inline; these two functions turn
 * one form into the other, at every depth the schema has an `extra`.
 */
const EXTRA = "extra";

/** OpenAI's JSON from a message's JSON form: each `extra` spread beside its typed fields, which take precedence. */
export function inlineExtra(schema: DescMessage, json: JsonObject): JsonObject {
  const typed: JsonObject = {};
  for (const [key, value] of Object.entries(json)) {
    const nested = nestedSchema(fieldOf(schema, key));
    typed[key] = nested === undefined ? value : eachObject(value, (item) => inlineExtra(nested, item));
  }
  if (!hasExtra(schema)) return typed;
  const { [EXTRA]: extra, ...rest } = typed;
  return isObject(extra) ? { ...extra, ...rest } : rest;
}

/** A message's JSON form from OpenAI's JSON: the keys the message has no field for moved into its `extra`. */
export function nestExtra(schema: DescMessage, json: JsonValue): JsonValue {
  if (!isObject(json)) return json;
  const typed: JsonObject = {};
  const extra: JsonObject = {};
  const open = hasExtra(schema);
  for (const [key, value] of Object.entries(json)) {
    const field = fieldOf(schema, key);
    if (field === undefined && open) {
      extra[key] = value;
      continue;
    }
    const nested = nestedSchema(field);
    typed[key] = nested === undefined ? value : eachObject(value, (item) => nestExtra(nested, item) as JsonObject);
  }
  if (Object.keys(extra).length > 0) typed[EXTRA] = extra;
  return typed;
}

function hasExtra(schema: DescMessage): boolean {
  const field = schema.field[EXTRA];
  return field?.fieldKind === "message" && field.message.typeName === "google.protobuf.Struct";
}

/** Each schema's fields by the keys JSON may name them with (`json_name` and the proto name), built once: every streamed chunk asks. */
const fieldsByKey = new WeakMap<DescMessage, Map<string, DescField>>();

function fieldOf(schema: DescMessage, jsonKey: string): DescField | undefined {
  let byKey = fieldsByKey.get(schema);
  if (byKey === undefined) {
    byKey = new Map(schema.fields.flatMap((field) => [[field.name, field] as const, [field.jsonName, field] as const]));
    fieldsByKey.set(schema, byKey);
  }
  return byKey.get(jsonKey);
}

/** The schema of a field holding one of our messages, or a list of them; well-known types have their own JSON form. */
function nestedSchema(field: DescField | undefined): DescMessage | undefined {
  if (field === undefined) return undefined;
  const message = field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message") ? field.message : undefined;
  return message?.typeName.startsWith("google.protobuf.") ? undefined : message;
}

function eachObject(value: JsonValue, map: (item: JsonObject) => JsonObject): JsonValue {
  if (Array.isArray(value)) return value.map((item) => (isObject(item) ? map(item) : item));
  return isObject(value) ? map(value) : value;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
