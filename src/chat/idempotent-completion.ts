import { checkAlias } from "./chat-request.js";
import type { ChatRouter } from "./chat-router.js";
import type { ChatRequest, RequestLog } from "./chat-types.js";
import { type CompletionResult, IdempotencyStore, runIdempotently } from "../server/idempotency.js";

/**
 * One non-streaming completion for REST and RPC alike. With an
 * `Idempotency-Key`, the first request is served and recorded, a retry with
 * the same body replays the recorded JSON (taking no pool unit), and a failed
 * request leaves no record so it can be retried with the same key.
 */
export async function completeIdempotently(
  deps: { router: ChatRouter; idempotency: IdempotencyStore },
  request: ChatRequest,
  options: { accountId: string; idempotencyKey: string | undefined; signal?: AbortSignal; requestLog?: RequestLog },
): Promise<CompletionResult> {
  const { accountId, signal, requestLog } = options;
  const complete = async () => JSON.stringify(await deps.router.complete(request, { accountId, signal, fromClient: true, requestLog }));
  if (options.idempotencyKey === undefined) return { json: await complete(), replayed: false };
  const key = IdempotencyStore.validKey(options.idempotencyKey);
  // A refused model is refused with or without a key, and records nothing.
  checkAlias(request);
  return runIdempotently(deps.idempotency, { accountId, key, request }, complete);
}
