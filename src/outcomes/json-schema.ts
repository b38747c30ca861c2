import { trimEndOf } from "../strings.js";

/**
 * The small subset of JSON Schema the stage writers ask models for, with a
 * validator and a type-level mapping from schema to TypeScript type.
 *
 * Why not ajv: the schemas are ours, few and shaped by OpenAI strict
 * structured outputs (every property required, no additional properties,
 * no $ref), so a validator of about eighty lines covers them completely,
 * gives error messages written to be sent back to the model, and lets the
 * TypeScript types be derived from the very objects that are validated.
 */

/** A schema node of the supported subset. */
export type Schema =
  | { readonly type: "string"; readonly enum?: readonly string[]; readonly minLength?: number; readonly maxLength?: number; readonly description?: string }
  | { readonly type: "integer"; readonly minimum?: number; readonly maximum?: number; readonly description?: string }
  | { readonly type: "array"; readonly items: Schema; readonly minItems?: number; readonly maxItems?: number; readonly description?: string }
  | {
      readonly type: "object";
      readonly properties: Readonly<Record<string, Schema>>;
      readonly required: readonly string[];
      readonly additionalProperties: false;
      readonly description?: string;
    };

/** The TypeScript type of values a schema accepts. */
export type Infer<S> = S extends { type: "string"; enum: readonly (infer E)[] }
  ? E
  : S extends { type: "string" }
    ? string
    : S extends { type: "integer" }
      ? number
      : S extends { type: "array"; items: infer I }
        ? Infer<I>[]
        : S extends { type: "object"; properties: infer P; required: readonly (infer R)[] }
          ? Flat<{ -readonly [K in keyof P as K extends R ? K : never]: Infer<P[K]> } & { -readonly [K in keyof P as K extends R ? never : K]?: Infer<P[K]> }>
          : never;

/** One object type out of an intersection, so editors and errors show its fields. */
type Flat<T> = { [K in keyof T]: T[K] };

/**
 * Checks a value against a schema. Returns human-readable problems, each
 * naming the JSON path (`$.pages[2].title`); empty means valid. Stops after
 * `limit` problems so a wildly wrong answer gives a short message.
 */
export function validate(schema: Schema, value: unknown, limit = 12): string[] {
  const problems: string[] = [];
  walk(schema, value, "$", problems, limit);
  return problems;
}

function walk(schema: Schema, value: unknown, at: string, problems: string[], limit: number): void {
  if (problems.length >= limit) return;
  switch (schema.type) {
    case "string": {
      if (typeof value !== "string") return void problems.push(`${at}: expected a string, got ${describe(value)}`);
      if (schema.enum && !schema.enum.includes(value)) {
        return void problems.push(`${at}: expected one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}, got ${quoted(value)}`);
      }
      const length = [...value.trim()].length;
      if (schema.minLength !== undefined && length < schema.minLength) {
        problems.push(`${at}: expected at least ${schema.minLength} characters, got ${length}`);
      }
      if (schema.maxLength !== undefined && length > schema.maxLength) {
        problems.push(`${at}: expected at most ${schema.maxLength} characters, got ${length}`);
      }
      return;
    }
    case "integer": {
      if (typeof value !== "number" || !Number.isInteger(value)) return void problems.push(`${at}: expected an integer, got ${describe(value)}`);
      if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${at}: expected at least ${schema.minimum}, got ${value}`);
      if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${at}: expected at most ${schema.maximum}, got ${value}`);
      return;
    }
    case "array": {
      if (!Array.isArray(value)) return void problems.push(`${at}: expected an array, got ${describe(value)}`);
      if (schema.minItems !== undefined && value.length < schema.minItems) {
        problems.push(`${at}: expected at least ${schema.minItems} items, got ${value.length}`);
      }
      if (schema.maxItems !== undefined && value.length > schema.maxItems) {
        problems.push(`${at}: expected at most ${schema.maxItems} items, got ${value.length}`);
      }
      for (const [index, item] of value.entries()) walk(schema.items, item, `${at}[${index}]`, problems, limit);
      return;
    }
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return void problems.push(`${at}: expected an object, got ${describe(value)}`);
      }
      const record = value as Record<string, unknown>;
      for (const key of schema.required) {
        if (!(key in record)) problems.push(`${at}: missing property "${key}"`);
      }
      for (const key of Object.keys(record)) {
        // An answer can have any number of unknown properties.
        if (problems.length >= limit) return;
        const child = schema.properties[key];
        if (!child) problems.push(`${at}: unexpected property ${quoted(key)}`);
        else walk(child, record[key], `${at}.${key}`, problems, limit);
      }
      return;
    }
  }
}

/** The most of a model's own text (a refusal, a key, a value) quoted back in a problem: enough to tell which, never a page of it. */
const QUOTE_MAX = 200;

/** `text` in quotes for a problem, shortened (shorten) when longer than QUOTE_MAX. */
export function quoted(text: string): string {
  return JSON.stringify([...text].length > QUOTE_MAX ? shorten(text, QUOTE_MAX) : text);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}

/**
 * An answer with its optional properties settled: a property the schema does
 * not require is a nice-to-have (an alt text, say), so one that does not fit
 * is shortened (a string over its `maxLength`, at a word boundary) or left
 * out (the wrong type, an unknown value), never a reason to ask again or to
 * fail. Required properties are left for `validate` to judge.
 */
export function settleOptional(schema: Schema, value: unknown): unknown {
  if (schema.type === "array") return Array.isArray(value) ? value.map((item: unknown) => settleOptional(schema.items, item)) : value;
  if (schema.type !== "object" || typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(value)) {
    const child = schema.properties[key];
    let settled = child ? settleOptional(child, raw) : raw;
    if (child && !schema.required.includes(key)) {
      if (child.type === "string" && !child.enum && child.maxLength !== undefined && typeof settled === "string") settled = shorten(settled, child.maxLength);
      if (validate(child, settled, 1).length > 0) continue;
    }
    out[key] = settled;
  }
  return out;
}

/**
 * A copy of `value` shortened to fit `schema`'s upper bounds: arrays keep
 * their first `maxItems`, and a string longer than `maxLength` keeps the
 * whole sentences that fit, or else the whole words that fit followed by an
 * ellipsis (never a cut word, never a dangling "and" or "the"). Lower
 * bounds and types are left alone: this is for a writer whose words are
 * built from a goal of any length, not a repair of a wrong answer.
 */
export function fitToSchema<S extends Schema>(schema: S, value: Infer<S>): Infer<S> {
  return fit(schema, value) as Infer<S>;
}

function fit(schema: Schema, value: unknown): unknown {
  switch (schema.type) {
    case "string":
      return typeof value === "string" && schema.maxLength !== undefined && !schema.enum ? shorten(value, schema.maxLength) : value;
    case "integer":
      return value;
    case "array":
      if (!Array.isArray(value)) return value;
      return value.slice(0, schema.maxItems ?? value.length).map((item: unknown) => fit(schema.items, item));
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value)) out[key] = schema.properties[key] ? fit(schema.properties[key], child) : child;
      return out;
    }
  }
}

/** Words that make a shortened text read as cut off when they end it. */
const DANGLING = new Set([
  "a",
  "an",
  "and",
  "as",
  "at",
  "by",
  "for",
  "from",
  "in",
  "of",
  "on",
  "or",
  "our",
  "the",
  "to",
  "we",
  "with",
  "your",
  "is",
  "are",
  "that",
  "which",
]);

/** `text` in at most `max` code points (counted as the validator counts them: trimmed). */
export function shorten(text: string, max: number): string {
  const trimmed = text.trim();
  const points = [...trimmed];
  if (points.length <= max) return trimmed;
  // Whole sentences first: "We bake bread. We also sell cakes." keeps "We bake bread."
  let kept = "";
  for (const sentence of trimmed.split(/(?<=[.!?])\s+/)) {
    const next = kept === "" ? sentence : `${kept} ${sentence}`;
    if ([...next].length > max) break;
    kept = next;
  }
  return kept !== "" ? kept : shortenAtWords(trimmed, max);
}

/**
 * `text` in at most `max` code points, cut only between words (never at a sentence's end: for a name, whose full
 * stops are abbreviations, "Dr. Smith"): the whole words that fit, no dangling "and" or "the", then an ellipsis.
 */
export function shortenAtWords(text: string, max: number): string {
  const trimmed = text.trim();
  const points = [...trimmed];
  if (points.length <= max) return trimmed;
  // Room for the ellipsis.
  const words = trimmed.split(/\s+/);
  const out: string[] = [];
  let length = 0;
  for (const word of words) {
    const add = [...word].length + (out.length > 0 ? 1 : 0);
    if (length + add > max - 1) break;
    out.push(word);
    length += add;
  }
  while (out.length > 1 && DANGLING.has(trimEndOf(out.at(-1)!.toLowerCase(), ",;:"))) out.pop();
  // One word longer than the whole limit (a long name in a script without spaces): its first code points.
  if (out.length === 0) return `${points.slice(0, max - 1).join("")}\u2026`;
  return `${trimEndOf(out.join(" "), ",;:. ")}\u2026`;
}
