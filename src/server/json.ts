import { toJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { type ListValue, ListValueSchema, NullValue, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";

/**
 * A message as the REST routes write it: proto3 JSON with every field present,
 * where a message field or an optional scalar that is unset is `null` (the
 * interface document's "null in a new plan") rather than left out.
 */
export function restJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonObject {
  const json = toJson(schema, message, { alwaysEmitImplicit: true }) as JsonObject;
  fillNulls(schema, message as Record<string, unknown>, json);
  return json;
}

function fillNulls(schema: DescMessage, message: Record<string, unknown>, json: JsonObject): void {
  for (const field of schema.fields) {
    const value = message[field.localName];
    if (field.fieldKind === "message") {
      if (value === undefined) {
        json[field.jsonName] = null;
      } else if (isStructLike(field.message.typeName)) {
      } else {
        fillNulls(field.message, value as Record<string, unknown>, json[field.jsonName] as JsonObject);
      }
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      const items = json[field.jsonName] as JsonObject[];
      if (!isStructLike(field.message.typeName)) {
        for (const [i, item] of value.entries()) fillNulls(field.message, item as Record<string, unknown>, items[i]!);
      }
    } else if (field.fieldKind === "scalar" && field.presence === 1 /* EXPLICIT */ && value === undefined) {
      json[field.jsonName] = null;
    }
  }
}

// Well-known types with their own JSON form: their fields are not ours to fill.
function isStructLike(typeName: string): boolean {
  return typeName.startsWith("google.protobuf.");
}

/**
 * A message a client sent, as its proto3 JSON. A google.protobuf.Value with
 * no JSON form becomes null, as it does inside a Struct: one with no kind
 * (valid protobuf; @grpc/grpc-js with proto-loader's `keepCase` sends one
 * for `{string_value: …}`), which protobuf-es reads as null there, and a NaN
 * or infinite number, which JSON.stringify writes as null. `message` is
 * changed in place.
 */
export function clientMessageJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonObject {
  nullUnwritableValues(schema, message as Record<string, unknown>);
  return toJson(schema, message) as JsonObject;
}

function nullUnwritableValues(schema: DescMessage, message: Record<string, unknown>): void {
  for (const field of schema.fields) {
    const value = message[field.localName];
    if (value === undefined) continue;
    if (field.fieldKind === "message") {
      nullUnwritableIn(field.message, value);
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      for (const item of value as unknown[]) nullUnwritableIn(field.message, item);
    } else if (field.fieldKind === "map" && field.mapKind === "message") {
      for (const item of Object.values(value as Record<string, unknown>)) nullUnwritableIn(field.message, item);
    }
  }
}

function nullUnwritableIn(schema: DescMessage, message: unknown): void {
  if (schema.typeName === ValueSchema.typeName) {
    nullIfUnwritable(message as Value);
  } else if (schema.typeName === ListValueSchema.typeName) {
    for (const item of (message as ListValue).values) nullIfUnwritable(item);
  } else if (!isStructLike(schema.typeName)) {
    // A Struct field is held as JSON already; other well-known types hold no Value.
    nullUnwritableValues(schema, message as Record<string, unknown>);
  }
}

function nullIfUnwritable(value: Value): void {
  switch (value.kind.case) {
    case undefined:
      value.kind = { case: "nullValue", value: NullValue.NULL_VALUE };
      break;
    case "numberValue":
      if (!Number.isFinite(value.kind.value)) value.kind = { case: "nullValue", value: NullValue.NULL_VALUE };
      break;
    case "listValue":
      for (const item of value.kind.value.values) nullIfUnwritable(item);
      break;
    case "structValue":
      for (const item of Object.values(value.kind.value.fields)) nullIfUnwritable(item);
      break;
  }
}

/**
 * The first key that `text` names twice in one object, whose value JSON.parse
 * would silently keep the last of. `text` must be JSON that JSON.parse took.
 * Keys are compared decoded: `"goal"` and `"go\u0061l"` are the same key.
 */
export function repeatedKey(text: string): string | undefined {
  // The keys seen so far in each open object; undefined for an open array.
  const open: (Set<string> | undefined)[] = [];
  let atKey = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      const start = i;
      let escaped = false;
      for (i++; text[i] !== '"'; i++) {
        if (text[i] === "\\") {
          escaped = true;
          i++;
        }
      }
      const keys = open.at(-1);
      if (atKey && keys) {
        const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        if (keys.has(key)) return key;
        keys.add(key);
      }
      atKey = false;
    } else if (char === "{") {
      open.push(new Set());
      atKey = true;
    } else if (char === "[") {
      open.push(undefined);
      atKey = false;
    } else if (char === "}" || char === "]") {
      open.pop();
    } else if (char === ",") {
      atKey = open.at(-1) !== undefined;
    }
  }
  return undefined;
}
