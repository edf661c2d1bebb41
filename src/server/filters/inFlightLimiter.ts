// The two in-flight counters of kube's WithMaxInFlightLimit (k8s.io/apiserver
// pkg/server/filters/maxinflight.go): read-only (get, list, watch) and mutating requests, each with
// its own limit (0 = unlimited). Counting happens even without a limit, so metrics always see the
// load (apiserver_current_inflight_requests{request_kind="readOnly"|"mutating"}).

export type RequestKind = 'readOnly' | 'mutating';
export type InFlightCounts = Record<RequestKind, number>;

/** maxinflight.go:46 nonMutatingRequestVerbs. */
const NON_MUTATING_VERBS = new Set(['get', 'list', 'watch']);

export function requestKindOf(verb: string): RequestKind {
  return NON_MUTATING_VERBS.has(verb) ? 'readOnly' : 'mutating';
}

export class InFlightLimiter {
  private readonly current: InFlightCounts = { readOnly: 0, mutating: 0 };
  private readonly watermark: InFlightCounts = { readOnly: 0, mutating: 0 };

  constructor(readonly limits: Readonly<InFlightCounts>) {}

  /** Takes a seat of `kind`; false when all of them are taken. */
  tryAcquire(kind: RequestKind): boolean {
    const limit = this.limits[kind];
    if (limit !== 0 && this.current[kind] >= limit) return false;
    this.record(kind, this.current[kind] + 1);
    return true;
  }

  release(kind: RequestKind): void {
    this.record(kind, Math.max(0, this.current[kind] - 1));
  }

  /** Requests being served right now, by kind. */
  counts(): Readonly<InFlightCounts> {
    return { ...this.current };
  }

  /**
   * The highest count since the previous call, then reset to 0: what upstream's watermark
   * maintenance reports each second as apiserver_current_inflight_requests (maxinflight.go:92-104).
   */
  takeWatermarks(): InFlightCounts {
    const taken = { ...this.watermark };
    this.watermark.readOnly = 0;
    this.watermark.mutating = 0;
    return taken;
  }

  private record(kind: RequestKind, value: number): void {
    this.current[kind] = value;
    if (this.watermark[kind] < value) this.watermark[kind] = value;
  }
}
