import type { Logger } from "../observability/logger.js";

/** The shapes every door of the chat gateway, and the writers that draw on it, share. */

/** OpenAI chat completion request as a plain JSON object; every field is passed through. */
export type ChatRequest = GatewayRequest & { messages: unknown[] };

/** Any request the gateway routes (chat, embeddings): a plain JSON object naming a model. */
export type GatewayRequest = Record<string, unknown> & { model: string };

/** OpenAI chat completion response as a plain JSON object, already rewritten to the alias. */
export type ChatCompletionJson = Record<string, unknown> & { choices: { message: { content: string | null } }[] };

/** Where a request's lines go: its own logger (bound to its id), made on first use (RequestInfo is one). */
export interface RequestLog {
  readonly log: Logger;
}

/** Per-call options shared by `complete` and `stream`. */
export interface ChatCallOptions {
  /** The account the request is served for. */
  accountId: string;
  /** Aborts the upstream request at once, e.g. when the client hangs up. */
  signal?: AbortSignal;
  /**
   * Set by the gateway's own doors (REST and RPC): the request counts against
   * the account's daily cap when one is configured. The service's stage
   * writers leave it unset.
   */
  fromClient?: boolean;
  /** The request's logger, for the lines about its upstream attempts; unset (a stage writer), the chat component's. */
  requestLog?: RequestLog;
}

/** What other capabilities need of chat: one non-streaming completion over the shared pool. */
export interface ChatCompleter {
  /** Routes a non-streaming request over the upstreams, taking one free-pool unit; throws ServiceError. */
  complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletionJson>;
}

/** One chunk of a streamed completion, already rewritten to the alias. */
export type ChatChunkJson = Record<string, unknown> & { choices?: unknown[] };
