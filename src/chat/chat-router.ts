/**
 * The chat router: the one path every chat completion takes, whichever door
 * it came in by (REST `/v1/chat/completions`, ChatService RPCs, or the stage
 * writers of other capabilities). It checks the alias, takes a unit of the
 * free pool and tries the upstreams in order.
 */

/** OpenAI chat completion request as a plain JSON object; every field is passed through. */
export type ChatRequest = Record<string, unknown> & { model: string; messages: unknown[] };

/** OpenAI chat completion response as a plain JSON object, already rewritten to the alias. */
export type ChatCompletionJson = Record<string, unknown> & { choices: { message: { content: string | null } }[] };

/** Per-call options shared by `complete` and `stream`. */
export interface ChatCallOptions {
  /** The account the request is served for (logs; future per-account limits). */
  accountId: string;
  /** Aborts the upstream request at once, e.g. when the client hangs up. */
  signal?: AbortSignal;
}

/** What other capabilities need of chat: one non-streaming completion over the shared pool. */
export interface ChatCompleter {
  /** Routes a non-streaming request over the upstreams, taking one free-pool unit; throws ServiceError. */
  complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletionJson>;
}
