// kube-apiserver's metric families, with k8s.io/apiserver v0.33's names, label names, buckets and help
// (pkg/endpoints/metrics/metrics.go; apiserver_storage_objects: pkg/storage/etcd3/metrics/metrics.go).
// The help text carries the stability prefix component-base adds ("[STABLE] ...").
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const REQUEST = ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;
const SLI = ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;
const WATCH = ['group', 'version', 'kind'] as const;

export type RequestLabels = Record<(typeof REQUEST)[number], string>;
export type SliLabels = Record<(typeof SLI)[number], string>;
export type WatchLabels = Record<(typeof WATCH)[number], string>;
export type RequestKind = 'readOnly' | 'mutating';

/** requestLatencies */
export const REQUEST_DURATION_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** requestSliLatencies */
export const REQUEST_SLI_BUCKETS = [0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** responseSizes: ExponentialBuckets(1000, 10.0, 7) */
export const RESPONSE_SIZE_BUCKETS = exponential(1000, 10, 7);
/** WatchEventsSizes: ExponentialBuckets(1024, 2.0, 8) */
export const WATCH_EVENT_SIZE_BUCKETS = exponential(1024, 2, 8);

function exponential(start: number, factor: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start * factor ** i);
}

export interface KubeMetrics {
  requests: Counter<keyof RequestLabels | 'code'>;
  duration: Histogram<keyof RequestLabels>;
  sliDuration: Histogram<keyof SliLabels>;
  responseSizes: Histogram<keyof SliLabels>;
  longRunning: Gauge<keyof SliLabels>;
  watchEvents: Counter<keyof WatchLabels>;
  watchEventSizes: Histogram<keyof WatchLabels>;
  inflight: InflightWatermark;
  /** apiserver_storage_objects{resource}: read at each scrape from the registered counters. */
  storedObjects: StoredObjects;
  /** Stops the once-a-second in-flight maintenance (the server's onClose). */
  stop(): void;
}

export function createKubeMetrics(registry: Registry): KubeMetrics {
  const registers = [registry];
  const requests = new Counter({
    name: 'apiserver_request_total',
    help: '[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
    labelNames: [...REQUEST, 'code'] as const, registers,
  });
  const longRunning = new Gauge({
    name: 'apiserver_longrunning_requests',
    help: '[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.',
    labelNames: SLI, registers,
  });
  const duration = new Histogram({
    name: 'apiserver_request_duration_seconds',
    help: '[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
    labelNames: REQUEST, buckets: REQUEST_DURATION_BUCKETS, registers,
  });
  const sliDuration = new Histogram({
    name: 'apiserver_request_sli_duration_seconds',
    help: '[ALPHA] Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.',
    labelNames: SLI, buckets: REQUEST_SLI_BUCKETS, registers,
  });
  const responseSizes = new Histogram({
    name: 'apiserver_response_sizes',
    help: '[STABLE] Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.',
    labelNames: SLI, buckets: RESPONSE_SIZE_BUCKETS, registers,
  });
  const watchEvents = new Counter({
    name: 'apiserver_watch_events_total',
    help: '[ALPHA] Number of events sent in watch clients',
    labelNames: WATCH, registers,
  });
  const watchEventSizes = new Histogram({
    name: 'apiserver_watch_events_sizes',
    help: '[ALPHA] Watch event size distribution in bytes',
    labelNames: WATCH, buckets: WATCH_EVENT_SIZE_BUCKETS, registers,
  });
  const inflightGauge = new Gauge({
    name: 'apiserver_current_inflight_requests',
    help: '[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
    labelNames: ['request_kind'] as const, registers,
  });
  const inflight = new InflightWatermark((kind, max) => inflightGauge.set({ request_kind: kind }, max));
  const storedObjects = new StoredObjects();
  new Gauge({
    name: 'apiserver_storage_objects',
    help: '[STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.',
    labelNames: ['resource'] as const, registers,
    collect() {
      for (const [resource, count] of storedObjects.read()) this.set({ resource }, count);
    },
  });
  return { requests, duration, sliDuration, responseSizes, longRunning, watchEvents, watchEventSizes, inflight, storedObjects, stop: () => inflight.stop() };
}

/**
 * maxinflight.go's watermark maintenance: once a second, publish the highest number of executing
 * (not long-running) requests of each kind seen in that second. The counts come from the in-flight
 * limiter (src/server/filters/), which counts where WithMaxInFlightLimit does: after authentication.
 */
export class InflightWatermark {
  private source: () => Record<RequestKind, number> = () => ({ readOnly: 0, mutating: 0 });
  private readonly timer: NodeJS.Timeout;

  constructor(publish: (kind: RequestKind, max: number) => void) {
    const tick = () => {
      const max = this.source();
      for (const kind of ['readOnly', 'mutating'] as const) publish(kind, max[kind]);
    };
    tick();
    this.timer = setInterval(tick, 1000).unref();
  }

  /** Where each second's high-water marks come from (taken: each call resets them, as upstream's). */
  feed(takeWatermarks: () => Record<RequestKind, number>): void { this.source = takeWatermarks; }

  stop(): void { clearInterval(this.timer); }
}

/** What apiserver_storage_objects reports: resource ("llamas.farm.example.com") → count (-1: cannot count now). */
export class StoredObjects {
  private readonly sources = new Map<string, () => number>();
  add(resource: string, count: () => number): void { this.sources.set(resource, count); }
  *read(): Iterable<[string, number]> {
    for (const [resource, count] of this.sources) yield [resource, count()];
  }
}
