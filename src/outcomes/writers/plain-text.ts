import { trimEndOf } from "../../strings.js";
/**
 * Models asked for plain text still slip into Markdown now and then
 * (`**bold**`, `## Heading`, `` `code` ``). Rendered escaped, those marks
 * would show as stray asterisks and hashes, so every string of a model's
 * answer is tidied before it is stored. Nothing here is about safety: all
 * text is escaped when rendered, whatever it contains.
 */
export function tidyPlainText<T>(value: T): T {
  if (typeof value === "string") return tidy(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => tidyPlainText(item)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, tidyPlainText(item)])) as T;
  }
  return value;
}

function tidy(text: string): string {
  return text
    .replace(/\*\*(\S(?:.*?\S)?)\*\*/g, "$1")
    .replace(/__(\S(?:.*?\S)?)__/g, "$1")
    .replace(/(^|[\s(])\*(\S(?:.*?\S)?)\*(?=[\s).,;:!?]|$)/g, "$1$2")
    .replace(/`([^`\n]+)`/g, "$1")
    .replace(/^\s{0,3}#{1,6}\s+/gm, "")
    .split("\n")
    .map((line) => trimEndOf(line, " \t"))
    .join("\n")
    .trim();
}
