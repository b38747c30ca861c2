import { hasVisibleCharacter, trimEndOf, withoutNameControls } from "../../strings.js";

/**
 * Models asked for plain text still slip into Markdown now and then
 * (`**bold**`, `## Heading`, `` `code` ``). Rendered escaped, those marks
 * would show as stray asterisks and hashes, so every string of a model's
 * answer is tidied before it is stored. It loses the controls no name keeps
 * (withoutNameControls: nearly every string of an answer is a name, a title,
 * a heading or a label, and a bidi override left open in a tagline reverses
 * the page's title), and a string with nothing a person can see in it (two
 * zero-width spaces) is empty, so a required one goes back to the model as
 * missing. Nothing here is about safety: all text is escaped when rendered,
 * whatever it contains.
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
  const tidied = withoutNameControls(text)
    .replace(/\*\*(\S(?:.*?\S)?)\*\*/g, "$1")
    .replace(/__(\S(?:.*?\S)?)__/g, "$1")
    .replace(/(^|[\s(])\*(\S(?:.*?\S)?)\*(?=[\s).,;:!?]|$)/g, "$1$2")
    .replace(/`([^`\n]+)`/g, "$1")
    .replace(/^\s{0,3}#{1,6}\s+/gm, "")
    .split("\n")
    .map((line) => trimEndOf(line, " \t"))
    .join("\n")
    .trim();
  return hasVisibleCharacter(tidied) ? tidied : "";
}
