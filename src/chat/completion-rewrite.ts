import { randomUUID } from "node:crypto";
import { CHAT_ALIAS } from "../capabilities/capabilities-service.js";
import type { ChatRequest } from "./chat-router.js";

/**
 * Fields an upstream adds that name or fingerprint it. OpenAI's
 * `system_fingerprint` identifies its backend configuration; aggregators add
 * `provider`. The client sees ours or nothing.
 */
const UPSTREAM_FIELDS = ["system_fingerprint", "provider"] as const;

/** Our completion id, in OpenAI's form; one per request, shared by all chunks of a stream. */
export function newCompletionId(): string {
  return `chatcmpl-${randomUUID().replaceAll("-", "")}`;
}

/**
 * The body sent upstream: the client's request untouched except `model`
 * (the upstream's own name), `program` (ours, unknown upstream) and, for an
 * internal non-streaming call, any `stream` flag.
 */
export function upstreamRequestBody(request: ChatRequest, upstreamModel: string, stream: boolean): string {
  const body: Record<string, unknown> = { ...request, model: upstreamModel };
  delete body.program;
  if (stream) {
    body.stream = true;
  } else if (body.stream === true) {
    delete body.stream;
    delete body.stream_options;
  }
  return JSON.stringify(body);
}

/**
 * Rewrites a completion or chunk in place so it names us, not the upstream:
 * our id, the alias as model, upstream fingerprints removed. Everything else
 * (choices, tool calls, usage, logprobs) is left as the upstream wrote it.
 */
export function rewriteCompletion<T extends Record<string, unknown>>(completion: T, id: string): T {
  const target = completion as Record<string, unknown>;
  target.id = id;
  target.model = CHAT_ALIAS;
  for (const field of UPSTREAM_FIELDS) {
    if (field in target) delete target[field];
  }
  return completion;
}
