import { invalidRequest } from "./errors.js";

/** The longest quiet a stream's heartbeat may be asked to cover (`heartbeat_seconds` of WatchExecution and StreamChatCompletion). */
export const MAX_HEARTBEAT_SECONDS = 300;

/**
 * A server stream's `heartbeat_seconds` as milliseconds (0: no heartbeats);
 * refused as invalid past MAX_HEARTBEAT_SECONDS. The heartbeat lets a client
 * tell a stream that is quiet from a connection that died without a word.
 */
export function heartbeatMs(seconds: number): number {
  if (seconds > MAX_HEARTBEAT_SECONDS) throw invalidRequest(`heartbeat_seconds must be at most ${MAX_HEARTBEAT_SECONDS}`, "heartbeat_seconds");
  return seconds * 1000;
}

/**
 * What `opened` yields, with `beat()` yielded after each `everyMs` in which
 * it yielded nothing (0: never), the wait for its opening included. Ending
 * early (the client left) ends the source too.
 */
export async function* withHeartbeats<T, H>(opened: Promise<AsyncIterable<T>>, everyMs: number, beat: () => H): AsyncGenerator<T | H> {
  if (everyMs <= 0) {
    yield* await opened;
    return;
  }
  let iterator: AsyncIterator<T> | undefined;
  let ended = false;
  const step = async (): Promise<IteratorResult<T>> => {
    if (iterator === undefined) {
      const source = (await opened)[Symbol.asyncIterator]();
      // Opened after the reader left: closed at once, never read.
      if (ended) {
        await source.return?.();
        return { done: true, value: undefined };
      }
      iterator = source;
    }
    return iterator.next();
  };
  let pending: Promise<IteratorResult<T>> | undefined;
  try {
    for (;;) {
      pending ??= step();
      let timer: NodeJS.Timeout | undefined;
      const quiet = new Promise<"quiet">((resolve) => (timer = setTimeout(() => resolve("quiet"), everyMs)));
      const next = await Promise.race([pending, quiet]).finally(() => clearTimeout(timer));
      if (next === "quiet") {
        yield beat();
        continue;
      }
      pending = undefined;
      if (next.done) return;
      yield next.value;
    }
  } finally {
    ended = true;
    // Not awaited: a step still pending ends when the call's signal does, and the return waits for it.
    iterator?.return?.().catch(() => {});
  }
}
