// What feeds the watch cache from etcd (the cacher's reflector over etcd3's watcher): a paged list at
// one revision resets the ObjectCache, then one raw Watch stream from the next revision, with prev_kv
// and progress notifications, applies every change in revision order. A lost stream resumes from the
// cache's revision + 1, so no change is missed; a resume etcd has compacted away relists, which
// restarts the cache's history and closes its watchers (their clients relist, as the watch cache's do).
import { Pacer } from '../../apimachinery/pacer.js';
import { CacheContent, type ObjectCache } from '../cacher/objectCache.js';
import type { Entry } from '../interfaces.js';
import { stamped } from '../objects.js';
import type { EtcdClient, IEvent, IWatchResponse, WatchStream } from './client.js';
import { decodeEntry, keyAfter, type EtcdKeys } from './codec.js';

/** The most keys per page of the initial list, as kube's watch cache lists (gRPC messages have no size cap here). */
const LIST_PAGE = 10_000;
/**
 * The first page's size; each next page is twice the last, up to LIST_PAGE. A 10,000-object first page
 * is ~50 ms of etcd's work and ~6 MB to take in at once, which a just-started server's first requests
 * (its /readyz) waited behind where etcd shares its core.
 */
const FIRST_PAGE = 500;
/** Pages of one list before giving up (at least 1 million keys), far past anything this cache holds. */
const MAX_LIST_PAGES = 1_000_000;
/** Decoded objects between two looks at the clock (~10 µs each). */
const DECODE_CHECK = 32;
/**
 * How long the fill's decoding holds the event loop at a time. Requests are served from etcd meanwhile,
 * and each of their turns (handshake, read, etcd's answer, write) waits for one slice: at 10 ms a first
 * LIST during a 100,000-object fill took ~180–300 ms, at 1 ms ~55–180 ms. A slice costs one setImmediate.
 */
const FILL_SLICE_MS = 1;
/** Retry delays after etcd failed: doubling from the first to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2_000;

/** How often a read waiting for the cache asks etcd for progress (kube's progress requester). */
export const PROGRESS_INTERVAL_MS = 100;

/** How one watch stream ended. */
interface StreamEnd { reason: string; relist: boolean }

export class CacheFeed {
  private whyNot: string | undefined = 'the watch cache has not synced with etcd yet';
  /** When the cache last stopped following etcd (the cacher's downtime, which sets a 429's Retry-After). */
  private downSince = performance.now();
  /** A list into the cache is under way (the first one, or a relist) and etcd has not failed it. */
  private filling = true;
  private stream: WatchStream | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private syncWaiters: (() => void)[] = [];
  private stopWaiters: (() => void)[] = [];
  private wakeRetry: (() => void) | undefined;
  private progressWaiters = 0;
  private progressTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: EtcdClient,
    private readonly keys: EtcdKeys,
    private readonly cache: ObjectCache,
  ) {}

  /** Why the cache may be behind etcd right now (not synced, relisting, etcd unreachable); undefined when it follows etcd. */
  unavailable(): string | undefined { return this.why; }

  /** True while the cache is being filled from an etcd that answers (KEP-4568: reads go to etcd or get 429 meanwhile). */
  initializing(): boolean { return this.filling && this.why !== undefined; }

  /** ms since the cache stopped following etcd (0 while it follows). */
  downtimeMs(): number { return this.why === undefined ? 0 : performance.now() - this.downSince; }

  private get why(): string | undefined { return this.whyNot; }

  private set why(reason: string | undefined) {
    if (reason !== undefined && this.whyNot === undefined) this.downSince = performance.now();
    this.whyNot = reason;
  }

  /** Resolves once the cache follows etcd; rejects (and stops) if that takes longer than `timeoutMs` (Infinity: never). */
  async start(timeoutMs: number): Promise<void> {
    if (this.loop) throw new Error('the etcd cache feed is already started');
    this.loop = this.run();
    const synced = new Promise<boolean>((resolve) => {
      const timer = Number.isFinite(timeoutMs) ? setTimeout(() => resolve(false), timeoutMs) : undefined;
      this.syncWaiters.push(() => { clearTimeout(timer); resolve(true); });
      // stop() before the first sync ends the wait too.
      this.stopWaiters.push(() => { clearTimeout(timer); resolve(false); });
    });
    if (!(await synced)) {
      if (this.stopped) throw new Error('stopped before the watch cache synced with etcd');
      const why = this.why;
      await this.stop();
      throw new Error(`etcd watch cache not synced within ${timeoutMs} ms: ${why}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.why = 'stopped';
    this.stream?.cancel();
    this.wakeRetry?.();
    for (const w of this.stopWaiters.splice(0)) w();
    await this.loop;
  }

  /**
   * While some read waits for the cache: asks etcd for a progress notification now and every 100 ms
   * (kube's progress requester), one ticker for all waiters. The answer carries etcd's revision once
   * every change up to it was sent, which moves the cache when nothing under the prefix changed.
   * Call the returned function when done waiting.
   */
  wantProgress(): () => void {
    if (this.progressWaiters++ === 0) {
      this.requestProgress();
      this.progressTimer = setInterval(() => this.requestProgress(), PROGRESS_INTERVAL_MS);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.progressWaiters === 0) clearInterval(this.progressTimer);
    };
  }

  /** RequestWatchProgress on the stream; etcd answers only once the watch is synced. */
  private requestProgress(): void {
    if (this.stream && !this.why) this.stream.write({ progress_request: {} });
  }

  private async run(): Promise<void> {
    let relist = true;
    let delay = RETRY_FIRST_MS;
    while (!this.stopped) {
      let again = false;
      try {
        if (relist) {
          this.why = 'relisting from etcd';
          this.filling = true;
          await this.relist();
          relist = false;
        }
        const end = await this.follow(this.cache.resourceVersion + 1, () => { delay = RETRY_FIRST_MS; });
        // A compacted resume relists at once; a lost connection waits before trying again.
        relist = again = end.relist;
        if (!this.stopped) this.why = end.reason;
        this.filling = end.relist;
      } catch (e) {
        if (!this.stopped) this.why = `etcd: ${(e as Error).message}`;
        this.filling = false;
      }
      if (this.stopped || again) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.wakeRetry = () => { clearTimeout(timer); resolve(); };
      });
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  /**
   * Every key under the prefix at one revision (the first page's), then the cache restarts from it.
   * Pages are asked for one after another, as the reflector's pager does: a page asked for while the
   * last one is decoded made etcd work on both at once, and where etcd shares a core with this
   * server, a client's read from etcd during the fill (a first LIST) waited behind both.
   */
  private async relist(): Promise<void> {
    const { key, range_end } = this.keys.range();
    const content = new CacheContent();
    let cap = LIST_PAGE;
    let limit = FIRST_PAGE;
    const page = async (start: Buffer, rev?: number) => {
      for (;;) {
        try {
          return await this.client.rangePage({ key: start, range_end, limit, ...(rev ? { revision: rev } : {}) });
        } catch (e) {
          // A page of big objects past gRPC's 2 GiB message bound: smaller pages (10,000 objects of 3 MiB would be 30 GiB).
          if (limit === 1 || !/larger than max|RESOURCE_EXHAUSTED/i.test((e as Error).message)) throw e;
          cap = limit = Math.max(1, Math.floor(limit / 10));
        }
      }
    };
    const pacer = new Pacer(FILL_SLICE_MS);
    let res = await page(key);
    const rev = res.header.revision;
    for (let pages = 1; ; pages++) {
      const { kvs } = res;
      // A page is up to 10,000 objects (~0.1 s of decoding and JSON.parse): requests, /readyz among them, run between slices.
      for (let i = 0; i < kvs.length; i++) {
        if (i % DECODE_CHECK === 0) {
          await pacer.breathe();
          if (this.stopped) return;
        }
        content.add(decodeEntry(this.keys, kvs.at(i)));
      }
      if (!res.more || kvs.length === 0) break;
      if (pages >= MAX_LIST_PAGES) throw new Error(`more than ${MAX_LIST_PAGES} pages under ${this.keys.prefix}`);
      limit = Math.min(limit * 2, cap);
      res = await page(keyAfter(kvs.at(kvs.length - 1).key), rev);
    }
    this.cache.reset(content, rev);
  }

  /** One watch stream from `from` until it ends; `onSynced` when etcd has created the watch. */
  private async follow(from: number, onSynced: () => void): Promise<StreamEnd> {
    const stream = await this.client.watchStream();
    if (this.stopped) {
      stream.cancel();
      return { reason: 'stopped', relist: false };
    }
    this.stream = stream;
    return new Promise<StreamEnd>((resolve) => {
      let ended = false;
      const end = (e: StreamEnd) => {
        if (ended) return;
        ended = true;
        if (this.stream === stream) this.stream = undefined;
        stream.cancel();
        resolve(e);
      };
      stream.on('data', (res: IWatchResponse) => {
        if (ended) return;
        try {
          const next = this.onResponse(res);
          if (next === 'synced') {
            this.why = undefined;
            this.filling = false;
            onSynced();
            for (const w of this.syncWaiters.splice(0)) w();
            this.stopWaiters.length = 0;
          } else if (next) end(next);
        } catch (e) {
          // A change the cache cannot apply (no previous state of a delete, revisions out of order): start over.
          end({ reason: `watch cache out of step with etcd, relisting: ${(e as Error).message}`, relist: true });
        }
      });
      stream.on('error', (e: Error) => end({ reason: `etcd watch stream failed: ${e.message}`, relist: false }));
      stream.on('end', () => end({ reason: 'etcd watch stream ended', relist: false }));
      stream.write({ create_request: { ...this.keys.range(), start_revision: from, prev_kv: true, progress_notify: true } });
    });
  }

  private onResponse(res: IWatchResponse): 'synced' | StreamEnd | undefined {
    const rev = res.header.revision;
    if (res.canceled) {
      const compacted = res.compact_revision;
      if (compacted > 0) return { reason: `etcd compacted past revision ${this.cache.resourceVersion + 1} (compact revision ${compacted}), relisting`, relist: true };
      return { reason: `etcd canceled the watch: ${res.cancel_reason || 'no reason given'}`, relist: false };
    }
    if (res.created) {
      // An etcd whose revision is behind the cache was replaced (restored or wiped): what the cache holds is not its state.
      if (rev < this.cache.resourceVersion) return { reason: `etcd revision ${rev} is behind the cache's ${this.cache.resourceVersion}, relisting`, relist: true };
      return 'synced';
    }
    const events = res.events ?? [];
    // A progress notification: every change up to the header's revision has been sent.
    if (events.length === 0) this.cache.advance(rev);
    for (const ev of events) this.apply(ev);
    return undefined;
  }

  private apply(ev: IEvent): void {
    const rv = ev.kv.mod_revision;
    const key = this.keys.storageKey(ev.kv.key);
    const cached = this.cache.get(key);
    if (ev.type === 'Put') {
      const entry = decodeEntry(this.keys, ev.kv, rv);
      // etcd3 watcher: a put that created the key (create_revision == mod_revision) is ADDED.
      if (ev.kv.create_revision === ev.kv.mod_revision) this.cache.apply({ type: 'ADDED', rv, entry });
      else this.cache.apply({ type: 'MODIFIED', rv, entry, prev: cached ?? this.prevOf(ev) });
      return;
    }
    const last = cached ?? this.prevOf(ev);
    if (!last) throw new Error(`the delete of ${key} at revision ${rv} came without its previous state`);
    // The deleted object is the last state, stamped with the deletion's revision.
    this.cache.apply({ type: 'DELETED', rv, entry: stamped(key, last.object, rv), prev: last });
  }

  private prevOf(ev: IEvent): Entry | undefined {
    return ev.prev_kv?.value?.length ? decodeEntry(this.keys, ev.prev_kv) : undefined;
  }
}
