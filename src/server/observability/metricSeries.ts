// prom-client validates and hashes a label set on every inc/observe (~3–5 µs each here, four per
// request). A request's label set repeats, so each is resolved once into the metric's own entry and
// later observations add to that entry directly. The entry is made by prom-client's public API
// (inc with 0, zero); only the additions touch its fields, which metricSeries.test.ts holds to what
// the public observe/inc produce, so a prom-client upgrade that changes them fails there.
import type { Counter, Histogram } from 'prom-client';

type Labels = Record<string, string>;
interface CounterEntry { value: number; labels: Labels }
interface HistogramEntry { sum: number; count: number; bucketValues: Record<number, number>; labels: Labels }
interface Internals<E> { hashMap: Record<string, E>; upperBounds?: number[] }

const sameLabels = (a: Labels, b: Labels): boolean => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
};

/** The entry of `labels` in the metric's map, made by `create` when there is none yet. */
function entryOf<E extends { labels: Labels }>(internals: Internals<E>, labels: Labels, create: () => void): E {
  const find = () => Object.values(internals.hashMap).find((e) => sameLabels(e.labels, labels));
  let entry = find();
  if (!entry) {
    create();
    entry = find();
  }
  if (!entry) throw new Error(`prom-client made no entry for ${JSON.stringify(labels)}`);
  return entry;
}

/** One label set of a metric: its entry, found again after a reset (registry.resetMetrics replaces the map). */
abstract class Series<E extends { labels: Labels }> {
  private map: Record<string, E> | undefined;
  private entry: E | undefined;

  protected constructor(protected readonly internals: Internals<E>, private readonly labels: Labels, private readonly create: (labels: Labels) => void) {}

  protected current(): E {
    if (this.map !== this.internals.hashMap || !this.entry) {
      this.entry = entryOf(this.internals, this.labels, () => this.create(this.labels));
      this.map = this.internals.hashMap;
    }
    return this.entry;
  }
}

/** One label set of a counter. */
export class CounterSeries extends Series<CounterEntry> {
  constructor(counter: Counter<string>, labels: Labels) {
    super(counter as unknown as Internals<CounterEntry>, labels, (l) => counter.inc(l, 0));
  }

  inc(): void {
    this.current().value += 1;
  }
}

/** One label set of a histogram. */
export class HistogramSeries extends Series<HistogramEntry> {
  private readonly bounds: number[];

  constructor(histogram: Histogram<string>, labels: Labels) {
    super(histogram as unknown as Internals<HistogramEntry>, labels, (l) => histogram.zero(l));
    const bounds = this.internals.upperBounds;
    if (!Array.isArray(bounds)) throw new Error('prom-client: a Histogram without upperBounds (its internals changed)');
    this.bounds = bounds;
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const e = this.current();
    e.sum += value;
    e.count += 1;
    // prom-client's findBound: the first upper bound at or above the value; past the last, +Inf (count only).
    for (const bound of this.bounds) {
      if (value <= bound) {
        e.bucketValues[bound] += 1;
        return;
      }
    }
  }
}
