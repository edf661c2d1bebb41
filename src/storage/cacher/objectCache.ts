// Current objects + a bounded history of changes + watcher fan-out: the read side that both the
// stored resources (Llama) and cached upstream resources (FarmPod) serve list and watch from.
import type { KubeObject } from '../../apimachinery/types.js';
import type { CacheView, Change, Entry, WatchItem, Watcher } from '../interfaces.js';
import { makeEntry } from '../objects.js';
import { TURN_BUDGET_MS } from '../../apimachinery/turns.js';
import { Fanout } from './fanout.js';
import { SortedKeys } from './sortedKeys.js';

/** Thrown when a requested resourceVersion is older than the history kept. */
export class TooOldError extends Error {
  constructor(readonly requested: number, readonly oldest: number) {
    super(`too old resource version: ${requested} (${oldest})`);
  }
}

/** The cache's own watch request (the storage-level one names its predicate). */
export interface CacheWatchOptions {
  /** Only changes after this RV; undefined = start now. */
  fromRV?: number;
  /** Emit the current matching objects as ADDED first (RV unset or "0", or sendInitialEvents). */
  initialState?: boolean;
  /** Follow the initial state with an INITIAL_END marker (sendInitialEvents). */
  initialEndMarker?: boolean;
  /** Key prefix such as "ns/" for a namespaced watch. */
  prefix?: string;
  matches?: (obj: KubeObject) => boolean;
  /** Buffered live events before a slow watcher is dropped. */
  capacity: number;
}

export class CacheWatcher implements Watcher {
  private readonly backlog: WatchItem[] = [];
  private backlogPos = 0;
  private readonly queue: WatchItem[] = [];
  private queuePos = 0;
  private wake: (() => void) | undefined;
  private onClosed: (() => void)[] = [];
  closedReason: 'closed' | 'overflow' | undefined;

  constructor(
    private readonly owner: ObjectCache,
    readonly opts: CacheWatchOptions,
    initial: WatchItem[],
    /** Creation order, for the fan-out. */
    readonly seq: number,
    /** A watch from an RV the cache had not reached yet starts after it, not at the next change. */
    private readonly skipThrough = 0,
  ) {
    this.backlog = initial;
  }

  /** Called by the cache's fan-out for each change, in order; never blocks. */
  offer(change: Change): void {
    if (this.closedReason || change.rv <= this.skipThrough) return;
    const item = translate(change, this.opts);
    if (!item) return;
    if (this.queue.length - this.queuePos >= this.opts.capacity) {
      this.close('overflow');
      return;
    }
    this.queue.push(item);
    this.signal();
  }

  /** Next item, or undefined once closed and drained (an overflowed watcher drops what it buffered). */
  async next(): Promise<WatchItem | undefined> {
    for (;;) {
      if (this.closedReason === 'overflow') return undefined;
      if (this.backlogPos < this.backlog.length) return this.backlog[this.backlogPos++];
      if (this.queuePos < this.queue.length) {
        const item = this.queue[this.queuePos++];
        if (this.queuePos > 1024 && this.queuePos * 2 > this.queue.length) {
          this.queue.splice(0, this.queuePos);
          this.queuePos = 0;
        }
        return item;
      }
      if (this.closedReason) return undefined;
      await new Promise<void>((resolve) => { this.wake = resolve; });
    }
  }

  /** Queues a bookmark at the cache's current RV behind every change up to it (once those were offered). */
  requestBookmark(): void {
    if (this.closedReason) return;
    const rv = this.owner.resourceVersion;
    this.owner.afterDelivered(() => {
      if (this.closedReason) return;
      this.queue.push({ type: 'BOOKMARK', rv });
      this.signal();
    });
  }

  /** Resolves once the cache has offered this watcher every change applied so far. */
  delivered(): Promise<void> { return this.owner.delivered(); }

  /** Items ready to read without waiting (lets a writer batch them into one write). */
  pending(): number {
    return this.backlog.length - this.backlogPos + this.queue.length - this.queuePos;
  }

  close(reason: 'closed' | 'overflow' = 'closed'): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    this.owner.unsubscribe(this);
    // At once, not after the current callback: a shutdown ends the watches, then closes idle connections.
    this.wakeNow();
    for (const f of this.onClosed.splice(0)) f();
  }

  closed(): Promise<void> {
    return this.closedReason ? Promise.resolve() : new Promise((resolve) => { this.onClosed.push(resolve); });
  }

  private signal(): void {
    if (this.wake) wakeSoon(this);
  }

  /** Hands a waiting reader what was queued (see wakeSoon). */
  wakeNow(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/**
 * Readers are woken once the current callback and its microtasks are done, not at once: the request whose
 * write made the change answers its client first, then the fan-out to possibly thousands of watchers runs
 * (upstream's cacher fans out on goroutines of its own, so a write's latency does not grow with them).
 */
const toWake = new Set<CacheWatcher>();
function wakeSoon(w: CacheWatcher): void {
  if (toWake.size === 0) setImmediate(wakeAll);
  toWake.add(w);
}
function wakeAll(): void {
  for (const w of toWake) {
    toWake.delete(w);
    w.wakeNow();
  }
}

/** A selector-filtered watch sees an object entering/leaving the selection as ADDED/DELETED, as upstream does. */
function translate(c: Change, opts: CacheWatchOptions): WatchItem | undefined {
  const { prefix, matches } = opts;
  if (prefix && !c.entry.key.startsWith(prefix)) return undefined;
  if (!matches) return itemOf(c, c.type);
  const now = c.type !== 'DELETED' && matches(c.entry.object);
  const before = c.type !== 'ADDED' && matches((c.prev ?? c.entry).object);
  if (c.type === 'DELETED') return before ? itemOf(c, 'DELETED') : undefined;
  if (now && before) return itemOf(c, 'MODIFIED');
  if (now) return itemOf(c, 'ADDED');
  // cacheWatcher.convertToWatchEvent: leaving the selection is a DELETED of the previous content at the event's RV.
  if (before) return itemOf(c, 'LEFT');
  return undefined;
}

/**
 * A change becomes at most four distinct items, each shared by every watcher it goes to: a silent watcher
 * keeps its queue until it is closed, and one item per watcher and event filled the old space with them.
 */
const itemsOf = new WeakMap<Change, Partial<Record<WatchItem['type'] | 'LEFT', WatchItem>>>();
function itemOf(c: Change, how: 'ADDED' | 'MODIFIED' | 'DELETED' | 'LEFT'): WatchItem {
  let items = itemsOf.get(c);
  if (!items) itemsOf.set(c, (items = {}));
  return items[how] ??= how === 'LEFT'
    ? { type: 'DELETED', entry: c.prev ? leftSelection(c, c.prev) : c.entry }
    : { type: how, entry: c.entry };
}

/** The previous content stamped with the change's RV: made once per change (itemOf keeps it), shared with its encoded line. */
const leftSelection = (c: Change, prev: Entry): Entry =>
  makeEntry(prev.key, { ...prev.object, metadata: { ...prev.object.metadata, resourceVersion: String(c.rv) } }, c.rv);

/**
 * What a relist puts into a cache, gathered before the reset (e.g. between a fill's paced slices), so
 * the reset itself only swaps it in: building it at once held the event loop 25-50 ms at 100,000 entries.
 */
export class CacheContent {
  private objects: Map<string, Entry> | undefined = new Map();
  private readonly keys: string[] = [];
  /** Keys came in ascending order (etcd's, for ASCII keys), so no sort is needed. */
  private ascending = true;

  static of(entries: Iterable<Entry>): CacheContent {
    const c = new CacheContent();
    for (const e of entries) c.add(e);
    return c;
  }

  /** Adds an entry; a key added again replaces the earlier one. */
  add(e: Entry): void {
    const objects = this.open();
    const last = this.keys[this.keys.length - 1];
    if (!objects.has(e.key)) {
      if (last !== undefined && e.key < last) this.ascending = false;
      this.keys.push(e.key);
    }
    objects.set(e.key, e);
  }

  /** The entries by key and the keys in order, handed over once: a cache then owns them. */
  take(): { objects: Map<string, Entry>; sortedKeys: string[] } {
    const objects = this.open();
    this.objects = undefined;
    return { objects, sortedKeys: this.ascending ? this.keys : [...this.keys].sort() };
  }

  private open(): Map<string, Entry> {
    if (!this.objects) throw new Error('this content was already taken by a cache');
    return this.objects;
  }
}

/** Changes the fan-out may hold before writers wait, however short the history: upstream's incoming channel (100). */
const MIN_FANOUT_LAG = 100;

export class ObjectCache implements CacheView {
  private objects = new Map<string, Entry>();
  private readonly keys = new SortedKeys();
  private history: Change[] = [];
  private readonly watchers = new Set<CacheWatcher>();
  private readonly fanout: Fanout<CacheWatcher>;
  private watcherSeq = 0;
  private readonly listeners = new Set<(c: Change) => void>();
  private readonly resetListeners = new Set<() => void>();
  private rv: number;
  /** Every change after this RV is in `history`. */
  private compactedRV: number;
  /** Readers waiting for the cache to reach a resourceVersion (a client's RV from another process, or the future). */
  private freshWaiters: { rv: number; done: (fresh: boolean) => void }[] = [];

  /** `fanoutBudgetMs`: how long delivering changes to watchers may hold the event loop per turn. */
  constructor(readonly historyLimit: number, initialRV = 0, fanoutBudgetMs = TURN_BUDGET_MS) {
    this.fanout = new Fanout(this.watchers, fanoutBudgetMs, Math.max(historyLimit, MIN_FANOUT_LAG));
    this.rv = initialRV;
    this.compactedRV = initialRV;
  }

  get resourceVersion(): number { return this.rv; }
  get size(): number { return this.objects.size; }
  get watcherCount(): number { return this.watchers.size; }

  get(key: string): Entry | undefined { return this.objects.get(key); }

  /** Records a change (its rv must not go backwards) and fans it out to watchers. */
  apply(change: Change): void {
    if (change.rv < this.rv) throw new Error(`resourceVersion went backwards: ${change.rv} < ${this.rv}`);
    const { key } = change.entry;
    if (change.type === 'DELETED') {
      if (this.objects.delete(key)) this.removeKey(key);
    } else {
      if (!this.objects.has(key)) this.insertKey(key);
      this.objects.set(key, change.entry);
    }
    this.rv = change.rv;
    this.wakeFresh();
    this.history.push(change);
    if (this.history.length > this.historyLimit * 2) this.compact();
    // Watchers get it in paced turns, after the writing request's own callback; in-process listeners now.
    if (this.watchers.size) this.fanout.push(change, this.watcherSeq);
    for (const l of this.listeners) l(change);
  }

  /** In-process observers of every change (e.g. another resource that embeds this one's data). */
  subscribe(listener: (c: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onReset(listener: () => void): () => void {
    this.resetListeners.add(listener);
    return () => this.resetListeners.delete(listener);
  }

  /**
   * Replaces everything (an upstream relist): history restarts at `rv`, so older resourceVersions
   * get 410, and open watchers are closed to make their clients relist, as the watch cache does.
   */
  reset(content: CacheContent | Entry[], rv: number): void {
    const next = (content instanceof CacheContent ? content : CacheContent.of(content)).take();
    this.objects = next.objects;
    this.keys.reset(next.sortedKeys);
    this.history = [];
    this.rv = rv;
    this.compactedRV = rv;
    this.wakeFresh();
    this.closeAllWatchers();
    this.fanout.clear();
    for (const l of this.resetListeners) l();
  }

  /** Advances the RV without a change (e.g. an upstream bookmark). */
  advance(rv: number): void {
    if (rv > this.rv) this.rv = rv;
    this.wakeFresh();
  }

  /**
   * Resolves true once the cache has reached `rv`, or false after `timeoutMs` (the watch cache's
   * waitUntilFreshAndBlock: its caller then answers "Too large resource version").
   */
  waitUntilFresh(rv: number, timeoutMs: number): Promise<boolean> {
    if (rv <= this.rv) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { rv, done: (fresh: boolean) => { clearTimeout(timer); resolve(fresh); } };
      const timer = setTimeout(() => {
        this.freshWaiters = this.freshWaiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      this.freshWaiters.push(waiter);
    });
  }

  private wakeFresh(): void {
    if (this.freshWaiters.length === 0) return;
    const ready = this.freshWaiters.filter((w) => w.rv <= this.rv);
    if (ready.length === 0) return;
    this.freshWaiters = this.freshWaiters.filter((w) => w.rv > this.rv);
    for (const w of ready) w.done(true);
  }

  /** Sorted entries under `prefix` as of `atRV` (default: now), starting after `startAfter`. */
  list(opts: { prefix?: string; atRV?: number; startAfter?: string } = {}): Entry[] {
    const { prefix = '', atRV, startAfter } = opts;
    const afterStart = startAfter !== undefined && startAfter >= prefix;
    const result: Entry[] = [];
    for (const k of this.keys.from(afterStart ? startAfter : prefix, afterStart)) {
      if (!k.startsWith(prefix)) break;
      result.push(this.objects.get(k)!);
    }
    if (atRV === undefined || atRV >= this.rv) return result;
    return this.rewind(result, atRV, prefix, startAfter);
  }

  /** The oldest RV a watch or consistent list can start from. */
  get oldestRV(): number { return this.compactedRV; }

  checkRV(rv: number): void {
    if (rv < this.compactedRV) {
      // watchCache: with no event kept (just reset), the oldest deliverable event is rv + 1.
      const oldestEvent = this.history[0]?.rv ?? this.rv + 1;
      throw new TooOldError(rv, Math.max(oldestEvent - 1, 0));
    }
  }

  watch(opts: CacheWatchOptions): CacheWatcher {
    const initial: WatchItem[] = [];
    if (opts.fromRV !== undefined) {
      this.checkRV(opts.fromRV);
      for (let i = this.firstAfter(opts.fromRV); i < this.history.length; i++) {
        const item = translate(this.history[i], opts);
        if (item) initial.push(item);
      }
    } else if (opts.initialState) {
      for (const entry of this.list({ prefix: opts.prefix })) {
        if (!opts.matches || opts.matches(entry.object)) initial.push({ type: 'ADDED', entry });
      }
      if (opts.initialEndMarker) initial.push({ type: 'INITIAL_END', rv: this.rv });
    }
    const ahead = opts.fromRV !== undefined && opts.fromRV > this.rv ? opts.fromRV : 0;
    const watcher = new CacheWatcher(this, opts, initial, ++this.watcherSeq, ahead);
    this.watchers.add(watcher);
    return watcher;
  }

  unsubscribe(w: CacheWatcher): void { this.watchers.delete(w); }

  /** Resolves once every change applied so far has been offered to the watchers it was for. */
  delivered(): Promise<void> { return new Promise((resolve) => this.fanout.afterQueued(resolve)); }

  /**
   * Resolves when the fan-out has room for another change: a writer of this process awaits it before it
   * commits, so writes slow down to what the watchers take instead of queueing changes without bound.
   */
  room(): Promise<void> { return this.fanout.room(); }

  /** Runs `then` once every change applied so far has been offered (at once when none is in flight). */
  afterDelivered(then: () => void): void { this.fanout.afterQueued(then); }

  closeAllWatchers(): void {
    for (const w of [...this.watchers]) w.close();
  }

  private firstAfter(rv: number): number {
    let lo = 0, hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.history[mid].rv <= rv) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  private compact(): void {
    const drop = this.history.length - this.historyLimit;
    this.compactedRV = this.history[drop - 1].rv;
    this.history = this.history.slice(drop);
  }

  /** Undo the changes after `atRV`: each key takes the state before its earliest later change. */
  private rewind(current: Entry[], atRV: number, prefix: string, startAfter: string | undefined): Entry[] {
    this.checkRV(atRV);
    const before = new Map<string, Entry | undefined>();
    for (let i = this.history.length - 1; i >= 0 && this.history[i].rv > atRV; i--) {
      const c = this.history[i];
      before.set(c.entry.key, c.type === 'ADDED' ? undefined : c.prev);
    }
    if (before.size === 0) return current;
    const inRange = (k: string) => k.startsWith(prefix) && (startAfter === undefined || k > startAfter);
    const out = current.filter((e) => !before.has(e.key));
    for (const [k, e] of before) if (e && inRange(k)) out.push(e);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private insertKey(key: string): void { this.keys.insert(key); }
  private removeKey(key: string): void { this.keys.delete(key); }
}
