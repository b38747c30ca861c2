/**
 * What an API key may do. A Console session holds all of them; a key holds
 * the ones chosen when it was made.
 */
export const SCOPES = ["read", "build", "chat"] as const;
export type Scope = (typeof SCOPES)[number];

/** One line per scope, as the Console offers them when a key is made. */
export const SCOPE_SUMMARIES: Readonly<Record<Scope, string>> = {
  read: "List, get and watch executions",
  build: "Start executions and approve gates",
  chat: "Chat completions at /v1/chat/completions",
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
