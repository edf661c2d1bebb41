// The FarmPod watch cache's reads in FarmPod resourceVersions ("<pod>.<llama>", farmPodRV.ts). The
// ObjectCache underneath orders changes by a local step number; the PositionLog maps each step to its
// position, so a client's position resolves to the step after which its view of the world ends.
import { paginate, FRESHNESS_WAIT_MS } from '../../storage/cacher/cacheReader.js';
import { TooOldError, type CacheWatcher, type ObjectCache } from '../../storage/cacher/objectCache.js';
import { CONTINUE_EXPIRED, checkNoResourceVersion, continueJson, continueStart, encodeContinue, invalidContinue } from '../../storage/continueToken.js';
import { storageErrors } from '../../storage/errors.js';
import type { Entry, ListOptions, ListResult, Reader, Watcher, WatchItem, WatchOptions } from '../../storage/interfaces.js';
import { formatPosition, notAfter, parseFarmPodRV, type Position, type RequestedRV } from './farmPodRV.js';

/** What made a step: a Pod event (its RV is the pod coordinate) or a Llama change (the llama one). */
export type StepCause = 'pod' | 'llama';
interface Step { readonly seq: number; readonly pos: Position; readonly by: StepCause }

/** Where a client's position falls in this cache's history. */
export type Resolution = { seq: number } | 'tooOld' | 'tooNew' | 'elsewhere';

/**
 * The positions of the cache's steps, oldest first; each coordinate only grows along them. The state
 * after step s holds until the next step's cause: a position between the two (in both coordinates)
 * saw exactly the steps up to s. A position no step sequence of ours passes through (another replica
 * interleaved a Pod and a Llama change the other way round) cannot be resumed here exactly: 410.
 */
export class PositionLog {
  private base: { seq: number; pos: Position } = { seq: 0, pos: { pod: 0, llama: 0 } };
  private steps: Step[] = [];

  constructor(readonly current: () => Position) {}

  /** A relist: history restarts at `pos`. */
  reset(seq: number, pos: Position): void {
    this.base = { seq, pos };
    this.steps = [];
  }

  record(seq: number, pos: Position, by: StepCause): void {
    const last = this.steps.at(-1)?.pos ?? this.base.pos;
    if (!notAfter(last, pos)) throw new Error(`FarmPod position went backwards: ${formatPosition(pos)} after ${formatPosition(last)}`);
    this.steps.push({ seq, pos, by });
  }

  /** Forgets steps the cache compacted away (seq ≤ `oldestSeq`): the oldest resumable position moves up. */
  prune(oldestSeq: number): void {
    let n = 0;
    while (n < this.steps.length && this.steps[n].seq <= oldestSeq) n++;
    if (n === 0) return;
    const last = this.steps[n - 1];
    this.base = { seq: last.seq, pos: last.pos };
    this.steps = this.steps.slice(n);
  }

  get oldest(): Position { return this.base.pos; }

  resolve(x: Position): Resolution {
    if (!notAfter(this.base.pos, x)) return 'tooOld';
    // Steps at or before x form a prefix (positions only grow): binary search its end.
    let lo = 0, hi = this.steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (notAfter(this.steps[mid].pos, x)) lo = mid + 1; else hi = mid;
    }
    const seq = lo > 0 ? this.steps[lo - 1].seq : this.base.seq;
    const next = this.steps[lo];
    if (!next) return notAfter(x, this.current()) ? { seq } : 'tooNew';
    // Just before the next step's cause: one less in the coordinate that made it.
    const before = next.by === 'pod' ? { pod: next.pos.pod - 1, llama: next.pos.llama } : { pod: next.pos.pod, llama: next.pos.llama - 1 };
    return notAfter(x, before) ? { seq } : 'elsewhere';
  }
}

function decodeContinue(s: string, prefix: string): { rv: RequestedRV & { kind: 'at' }; startAfter: string } {
  const token = continueJson(s);
  if (typeof token.rv !== 'string') throw invalidContinue.startRV();
  let rv: RequestedRV;
  try { rv = parseFarmPodRV(token.rv); } catch { throw invalidContinue.startRV(); }
  if (rv.kind !== 'at') throw invalidContinue.startRV();
  return { rv, startAfter: continueStart(token.start, prefix) };
}

export class FarmPodReader implements Reader {
  constructor(
    private readonly cache: ObjectCache,
    private readonly log: PositionLog,
    private readonly whyUnavailable: () => string | undefined,
  ) {}

  /** The local step number (what a client sees is `currentText`). */
  get resourceVersion(): number { return this.cache.resourceVersion; }

  get currentText(): string { return formatPosition(this.log.current()); }

  unavailable(): string | undefined { return this.whyUnavailable(); }

  async waitUntilFresh(resourceVersion: string): Promise<void> {
    await this.waitFor(parseFarmPodRV(resourceVersion));
  }

  /** Waits (the watch cache's 3 s) until both streams have reached the position, then 504. */
  private async waitFor(rv: RequestedRV): Promise<void> {
    if (rv.kind !== 'at') return;
    const deadline = Date.now() + FRESHNESS_WAIT_MS;
    // Polled: a Pod bookmark or a Llama progress notification moves the position without a change.
    while (!notAfter(rv.pos, this.log.current())) {
      if (Date.now() >= deadline) throw storageErrors.tooLargeResourceVersion(rv.text, this.log.current().pod);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async get(key: string, resourceVersion = ''): Promise<Entry | undefined> {
    await this.waitUntilFresh(resourceVersion);
    return this.cache.get(key);
  }

  /** The step a position resolves to, or the 410 a client relists on. */
  private stepOf(rv: RequestedRV & { kind: 'at' }, tooOldMessage?: string): number {
    const r = this.log.resolve(rv.pos);
    if (typeof r === 'object') return r.seq;
    // 'tooNew' cannot follow a successful wait (positions only grow); 'elsewhere' is another interleaving.
    throw storageErrors.tooOldMessage(tooOldMessage ?? `too old resource version: ${rv.text} (${formatPosition(this.log.oldest)})`);
  }

  async list(opts: ListOptions): Promise<ListResult> {
    let seq: number | undefined;
    let text: string | undefined;
    let startAfter: string | undefined;
    if (opts.continue) {
      const c = decodeContinue(opts.continue, opts.prefix);
      checkNoResourceVersion(opts.resourceVersion);
      // No latest-state token here (FarmPod positions are per replica): upstream's wording for that case.
      seq = this.stepOf(c.rv, CONTINUE_EXPIRED);
      text = c.rv.text;
      startAfter = c.startAfter;
    } else {
      const rv = parseFarmPodRV(opts.resourceVersion);
      await this.waitFor(rv);
      if (opts.resourceVersionMatch === 'Exact' && rv.kind === 'at') {
        seq = this.stepOf(rv);
        text = rv.text;
      }
    }
    // Read synchronously with the position it is reported at.
    const listText = text ?? this.currentText;
    const atRV = seq !== undefined && seq < this.cache.resourceVersion ? seq : undefined;
    let candidates: Entry[];
    if (opts.predicate.onlyKey !== undefined && atRV === undefined) {
      const e = this.cache.get(opts.predicate.onlyKey);
      candidates = e && (startAfter === undefined || e.key > startAfter) ? [e] : [];
    } else {
      candidates = this.tooOldAsStorage(() => this.cache.list({ prefix: opts.prefix, atRV, startAfter }));
    }
    const page = paginate(candidates, opts.limit, opts.predicate.matches, atRV ?? this.cache.resourceVersion, (lastKey) => encodeContinue(listText, lastKey));
    return { ...page, resourceVersionText: listText };
  }

  /** The storage contract's watch; `fromRV` can only be a Pod resourceVersion of the earlier scheme. */
  async watch(opts: WatchOptions): Promise<Watcher> {
    const rv: RequestedRV = opts.fromRV === undefined ? { kind: 'none' } : { kind: 'at', pos: { pod: opts.fromRV, llama: 0 }, text: String(opts.fromRV) };
    return this.watchFrom(rv, opts);
  }

  /** A watch from a FarmPod resourceVersion: every change after it (410 if this cache cannot tell which), or the current state first. */
  async watchFrom(rv: RequestedRV, opts: Omit<WatchOptions, 'fromRV'>): Promise<Watcher> {
    await this.waitFor(rv);
    const fromRV = !opts.initialState && rv.kind === 'at' ? this.stepOf(rv) : undefined;
    const initialEnd = this.currentText;
    const inner = this.tooOldAsStorage(() => this.cache.watch({
      fromRV, initialState: opts.initialState, initialEndMarker: opts.initialEndMarker,
      prefix: opts.prefix, matches: opts.predicate.matches, capacity: opts.capacity,
    }));
    return new PositionedWatcher(inner, () => this.currentText, initialEnd);
  }

  private tooOldAsStorage<T>(read: () => T): T {
    try {
      return read();
    } catch (e) {
      if (e instanceof TooOldError) throw storageErrors.tooOldMessage(`too old resource version: ${formatPosition(this.log.oldest)}`);
      throw e;
    }
  }
}

/** Bookmarks in FarmPod positions: each is the position when it was asked for, behind every change queued by then. */
class PositionedWatcher implements Watcher {
  private readonly bookmarks: string[] = [];

  constructor(private readonly inner: CacheWatcher, private readonly position: () => string, private readonly initialEnd: string) {}

  get closedReason(): 'closed' | 'overflow' | undefined { return this.inner.closedReason; }

  async next(): Promise<WatchItem | undefined> {
    const item = await this.inner.next();
    if (!item || 'entry' in item) return item;
    if (item.type === 'INITIAL_END') return { type: 'INITIAL_END', rv: this.initialEnd };
    return { type: 'BOOKMARK', rv: this.bookmarks.shift() ?? this.position() };
  }

  pending(): number { return this.inner.pending(); }

  requestBookmark(): void {
    if (this.inner.closedReason) return;
    this.bookmarks.push(this.position());
    this.inner.requestBookmark();
  }

  close(): void { this.inner.close(); }

  closed(): Promise<void> { return this.inner.closed(); }
}
