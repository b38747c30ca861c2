/**
 * The servers' event-loop delay, read from their own /metrics: prom-client's
 * `nodejs_eventloop_lag_max_seconds` comes from perf_hooks.monitorEventLoopDelay
 * and is reset at every scrape, so scraping once a second gives the worst
 * delay of each second, which is filed under the phase the soak was in.
 */
export class EventLoopWatch {
  readonly #maxByPhase = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly targets: () => { url: string; running: boolean }[],
    private readonly phase: () => string,
    private readonly metricsToken: string,
  ) {}

  start(everyMs = 1000): void {
    this.#timer = setInterval(() => void this.#scrape(), everyMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** The worst delay seen in each phase, in ms. */
  get maxByPhase(): ReadonlyMap<string, number> {
    return this.#maxByPhase;
  }

  async #scrape(): Promise<void> {
    const phase = this.phase();
    await Promise.all(
      this.targets()
        .filter((t) => t.running)
        .map(async ({ url }) => {
          try {
            const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${this.metricsToken}` }, signal: AbortSignal.timeout(2000) });
            const text = await response.text();
            const line = text.split("\n").find((l) => l.startsWith("nodejs_eventloop_lag_max_seconds "));
            const seconds = Number(line?.split(" ")[1]);
            if (Number.isFinite(seconds)) this.#maxByPhase.set(phase, Math.max(this.#maxByPhase.get(phase) ?? 0, seconds * 1000));
          } catch {
            // An instance that is down (a fault phase) has no loop to measure.
          }
        }),
    );
  }
}
