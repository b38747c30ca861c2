import { checkAlias } from "./chat-request.js";
import type { ChatRouter } from "./chat-router.js";
import type { ChatRequest } from "./chat-types.js";
import { IdempotencyStore } from "./idempotency.js";

/** A non-streaming completion as sent to the client: the JSON text, and whether it is a replay. */
export interface CompletionResult {
  json: string;
  replayed: boolean;
}

/**
 * One non-streaming completion for REST and RPC alike. With an
 * `Idempotency-Key`, the first request is served and recorded, a retry with
 * the same body replays the recorded JSON (taking no pool unit), and a failed
 * request leaves no record so it can be retried with the same key.
 */
export async function completeIdempotently(
  deps: { router: ChatRouter; idempotency: IdempotencyStore },
  request: ChatRequest,
  options: { accountId: string; idempotencyKey: string | undefined; signal?: AbortSignal },
): Promise<CompletionResult> {
  const { accountId, signal } = options;
  if (options.idempotencyKey === undefined) {
    return { json: JSON.stringify(await deps.router.complete(request, { accountId, signal, fromClient: true })), replayed: false };
  }
  const key = IdempotencyStore.validKey(options.idempotencyKey);
  // A refused model is refused with or without a key, and records nothing.
  checkAlias(request);
  return runIdempotently(deps.idempotency, { accountId, key, request }, async () =>
    JSON.stringify(await deps.router.complete(request, { accountId, signal, fromClient: true })),
  );
}

/**
 * Serves a non-streaming answer under an `Idempotency-Key`: the first
 * request runs `produce` and its JSON is recorded; a retry with the same
 * body replays it (taking no pool unit); a failure records nothing, so the
 * same key can be retried.
 */
export async function runIdempotently(
  idempotency: IdempotencyStore,
  call: { accountId: string; key: string; request: unknown },
  produce: () => Promise<string>,
): Promise<CompletionResult> {
  const key = IdempotencyStore.validKey(call.key);
  const claim = await idempotency.begin(call.accountId, key, IdempotencyStore.hash(call.request));
  if (claim.kind === "replay") return { json: claim.response, replayed: true };
  let json: string;
  try {
    json = await produce();
  } catch (error) {
    await idempotency.release(call.accountId, key).catch(() => {});
    throw error;
  }
  await idempotency.complete(call.accountId, key, json);
  return { json, replayed: false };
}
