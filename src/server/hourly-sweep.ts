import type { Logger } from "../observability/logger.js";

const HOUR_MS = 3600_000;

/**
 * Deletes what has outlived its use, at start and hourly: the `sweeps` run
 * together; a failure is one warning naming `what`, and the next hour tries
 * again. The timer keeps no process alive.
 */
export function hourlySweep(logger: Logger, what: string, sweeps: readonly (() => Promise<unknown>)[]): { start(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const sweep = (): void => void Promise.all(sweeps.map((run) => run())).catch((error: unknown) => logger.warn({ err: error }, `sweeping ${what} failed`));
  return {
    start() {
      sweep();
      timer = setInterval(sweep, HOUR_MS).unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
