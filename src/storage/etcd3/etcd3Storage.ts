// The etcd3 backend (k8s.io/apiserver pkg/storage/etcd3/store.go behind its cacher): writes are etcd
// transactions that compare the key's mod_revision, reads are served from a watch cache that one
// etcd watch feeds. Consistent reads (resourceVersion "") first learn etcd's current revision and wait
// for the cache to reach it, so a write acknowledged by any replica is seen by the next read on another.
// While the cache is being filled (KEP-4568, as k8s.io/apiserver's CacheDelegator), gets and plain
// paginated lists are read from etcd and other lists and watches get 429, so a replica serves at once.
import { parseRV } from '../../apimachinery/resourceVersion.js';
import { errors } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { CacheReader, exactResourceVersion, FRESHNESS_WAIT_MS } from '../cacher/cacheReader.js';
import { ObjectCache } from '../cacher/objectCache.js';
import { CONTINUE_LATEST, type ContinueFrom, parseContinue } from '../continueToken.js';
import { storageErrors } from '../errors.js';
import type { CacheView, Entry, ListOptions, ListResult, Preconditions, Storage, TryUpdate, UpdateOptions, Watcher, WatchOptions } from '../interfaces.js';
import { checkJsonSize, checkPreconditions, sameObject, stamped } from '../objects.js';
import { CacheFeed } from './cacheFeed.js';
import { SharedRead } from './sharedRead.js';
import type { EtcdClient, IRangeResponse, ITxnResponse } from './client.js';
import { decodeEntry, etcdCall, EtcdKeys, encodeValue, resourceVersionFieldLength } from './codec.js';
import { EtcdReads } from './etcdReads.js';

/** The size bound on a value as stored, measured as the object served at `rv` (without serializing it again). */
function checkValueSize(value: string, rv: number, prev: Entry | undefined, allowGrowth?: boolean): void {
  const field = resourceVersionFieldLength(rv);
  checkJsonSize(value.length + field, () => Buffer.byteLength(value) + field, prev, allowGrowth);
}

/** Re-runs of a try-update whose object kept changing under it before giving up with a conflict. */
const maxUpdateAttempts = 10;

export interface Etcd3StorageOptions {
  client: EtcdClient;
  /** Where this resource's keys live, without a trailing "/" (e.g. "/registry/farm.example.com/llamas"). */
  prefix: string;
  /** Changes kept in the watch cache for watches and lists at an older resourceVersion. */
  historyLimit: number;
  /** How long start() waits for the first sync with etcd (default 10 s; Infinity: until it syncs or stop()). */
  startTimeoutMs?: number;
}

export class Etcd3Storage extends CacheReader implements Storage {
  /** Read-only to everyone else: only the etcd watch feeds the cache. */
  readonly view: CacheView;
  private readonly objects: ObjectCache;
  private readonly feed: CacheFeed;
  private readonly keys: EtcdKeys;
  private readonly client: EtcdClient;
  private readonly startTimeoutMs: number;
  /** etcd's current revision, one Range shared by the consistent reads that wait on it. */
  private readonly currentRevision: SharedRead<number>;
  /** What the cache cannot serve, read from etcd itself. */
  private readonly etcd: EtcdReads;

  constructor(opts: Etcd3StorageOptions) {
    const keys = new EtcdKeys(opts.prefix);
    const cache = new ObjectCache(opts.historyLimit, 0);
    const feed = new CacheFeed(opts.client, keys, cache);
    // Being filled is not unavailable: reads go to etcd or get 429 (unavailable answers every verb 503).
    super(cache, () => (feed.initializing() ? undefined : feed.unavailable()));
    this.objects = cache;
    this.view = cache;
    this.feed = feed;
    this.keys = keys;
    this.client = opts.client;
    this.startTimeoutMs = opts.startTimeoutMs ?? 10_000;
    const range = { key: keys.range().key, keys_only: true };
    this.currentRevision = new SharedRead(async () => (await etcdCall(() => opts.client.range(range))).header.revision);
    this.etcd = new EtcdReads(opts.client, keys, () => this.currentRevision.read());
  }

  /** Lists the prefix into the cache and starts following etcd; resolves once the cache is synced. */
  start(): Promise<void> { return this.feed.start(this.startTimeoutMs); }

  /** Stops following etcd (the client is the caller's to close). */
  stop(): Promise<void> { return this.feed.stop(); }

  /** Compacts etcd's history up to `revision` (kube's compactor, run by tests until ours exists). */
  compact(revision: number): Promise<void> { return etcdCall(() => this.client.compact(revision)); }

  override async waitUntilFresh(resourceVersion: string): Promise<void> {
    // The cacher checks readiness before any wait (a watch from an RV during a fill is 429 at once).
    if (this.feed.initializing()) throw this.notReady();
    const rv = parseRV(resourceVersion);
    if (rv === undefined || rv <= this.objects.resourceVersion) return;
    if (!(await this.waitForCache(rv))) throw storageErrors.tooLargeResourceVersion(resourceVersion, this.objects.resourceVersion);
  }

  override async get(key: string, resourceVersion = ''): Promise<Entry | undefined> {
    if (this.feed.initializing()) return this.etcd.get(key, resourceVersion);
    if (resourceVersion === '' && !(await this.consistentRead())) return this.etcd.get(key, '');
    return super.get(key, resourceVersion);
  }

  /**
   * CacheDelegator.GetList: from the cache, except what it cannot serve, which is read from etcd: a
   * page after one from outside the cache's window, an Exact list before its window, and,
   * while it is being filled, a list with a limit and no selector (a client's first page, a
   * reflector's paginated list). Any other list gets 429 until the cache is filled.
   */
  override async list(opts: ListOptions): Promise<ListResult> {
    if (opts.continue) return this.listContinued(opts, parseContinue(opts));
    const initializing = this.feed.initializing();
    const exact = exactResourceVersion(opts);
    if (exact && (initializing || exact < this.objects.oldestRV)) return this.etcd.list(opts, exact);
    if (initializing) {
      if (opts.limit <= 0 || opts.predicate.matches || opts.predicate.onlyKey !== undefined) throw this.notReady();
      return this.etcd.list(opts, undefined, undefined, parseRV(opts.resourceVersion) ? opts.resourceVersion : undefined);
    }
    if (opts.resourceVersion === '' && !(await this.consistentRead())) return this.etcd.list(opts, undefined);
    return super.list(opts);
  }

  /**
   * Pages the cache cannot serve are read from etcd: from before its window, or ahead of it (another
   * replica's page). The cache reader serves the rest (and answers a window that moved meanwhile as expired).
   */
  protected override async listContinued(opts: ListOptions, c: ContinueFrom): Promise<ListResult> {
    const at = c.rv === CONTINUE_LATEST ? undefined : c.rv;
    // "The latest state" is a consistent read (the cacher's shouldDelegateContinue).
    const fromEtcd = this.feed.initializing()
      || (at === undefined ? !(await this.consistentRead()) : at < this.objects.oldestRV || at > this.objects.resourceVersion);
    if (fromEtcd) return this.etcd.list(opts, at, c.startAfter);
    return super.listContinued(opts, c);
  }

  override async watch(opts: WatchOptions): Promise<Watcher> {
    if (this.feed.initializing()) throw this.notReady();
    return super.watch(opts);
  }

  async create(key: string, object: KubeObject): Promise<Entry> {
    // This replica's writers wait while its watchers are far behind (another replica's come through the feed).
    await this.objects.room();
    const value = encodeValue(object);
    checkValueSize(value, this.objects.resourceVersion + 1, undefined);
    const k = this.keys.key(key);
    const txn = await this.txn({
      compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [{ request_put: { key: k, value: Buffer.from(value) } }],
    });
    if (!txn.succeeded) throw storageErrors.exists(key);
    return this.committed(key, value, txn.header.revision);
  }

  /**
   * store.go GuaranteedUpdate: the cached state is a guess, the transaction's compare on mod_revision is
   * the truth. A lost race re-runs the try-update on the state etcd answered with; an error or a no-op
   * on cached state is confirmed against etcd first, since the cache may be behind.
   */
  async guaranteedUpdate<R>(key: string, tryUpdate: TryUpdate<R>, opts: UpdateOptions = {}) {
    await this.objects.room();
    const k = this.keys.key(key);
    let current = this.objects.get(key);
    let confirmed = false;
    if (!current) [current, confirmed] = [await this.fetch(key), true];
    for (let attempt = 1; ; attempt++) {
      let out: Awaited<ReturnType<TryUpdate<R>>>;
      try {
        out = await tryUpdate(current);
      } catch (e) {
        if (confirmed) throw e;
        const fresh = await this.fetch(key);
        confirmed = true;
        if (fresh?.rv === current?.rv) throw e;
        current = fresh;
        continue;
      }
      const { object, result } = out;
      if (current && sameObject(object, current)) {
        // An update that changes nothing is not written (same resourceVersion, no event), once etcd agrees on the state.
        if (!confirmed) {
          const fresh = await this.fetch(key);
          confirmed = true;
          if (fresh?.rv !== current.rv) { current = fresh; continue; }
        }
        return { entry: current, created: false, result };
      }
      const value = encodeValue(object);
      checkValueSize(value, current?.rv ?? this.objects.resourceVersion + 1, current, opts.allowGrowthPastLimit);
      const txn = await this.txn({
        compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: current?.rv ?? 0 }],
        success: [{ request_put: { key: k, value: Buffer.from(value) } }],
        failure: [{ request_range: { key: k } }],
      });
      if (txn.succeeded) return { entry: await this.committed(key, value, txn.header.revision), created: !current, result };
      if (attempt >= maxUpdateAttempts) throw storageErrors.conflict(key);
      [current, confirmed] = [this.entryOf(txn.responses[0]?.response_range), true];
    }
  }

  async delete(key: string, preconditions: Preconditions = {}): Promise<Entry> {
    await this.objects.room();
    const k = this.keys.key(key);
    let current = this.objects.get(key);
    let confirmed = false;
    if (!current) [current, confirmed] = [await this.fetch(key), true];
    for (let attempt = 1; ; attempt++) {
      if (!current) throw storageErrors.notFound(key);
      try {
        checkPreconditions(key, current, preconditions);
      } catch (e) {
        // A precondition that fails on cached state is checked again on etcd's.
        if (confirmed) throw e;
        const fresh = await this.fetch(key);
        confirmed = true;
        if (fresh?.rv === current.rv) throw e;
        current = fresh;
        continue;
      }
      const txn = await this.txn({
        compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: current.rv }],
        success: [{ request_delete_range: { key: k } }],
        failure: [{ request_range: { key: k } }],
      });
      if (txn.succeeded) {
        const rv = txn.header.revision;
        await this.caughtUp(rv);
        // The deleted state (the compare proved it was the last one), at the deletion's revision.
        return stamped(key, current.object, rv);
      }
      if (attempt >= maxUpdateAttempts) throw storageErrors.conflict(key);
      [current, confirmed] = [this.entryOf(txn.responses[0]?.response_range), true];
    }
  }

  /** The cacher's answer while it is not ready: 429, Retry-After growing with the downtime (1 s to 30 s). */
  private notReady() {
    const retryAfter = Math.trunc(Math.min(30, Math.max(1, Math.exp(0.06 * this.feed.downtimeMs() / 1000))));
    return errors.tooManyRequests('storage is (re)initializing', retryAfter);
  }

  /**
   * A write is acknowledged once this replica's cache has it (unless the cache is being filled, when
   * reads go to etcd), so the writer's next read here sees it; the cache's own entry is handed back
   * when it is the one written.
   */
  private async committed(key: string, value: string, rv: number): Promise<Entry> {
    await this.caughtUp(rv);
    const cached = this.objects.get(key);
    return cached?.rv === rv ? cached : stamped(key, JSON.parse(value) as KubeObject, rv);
  }

  /**
   * Waits (at most the watch cache's 3 s) until the cache has `rv`. Not while it is being filled: reads
   * go to etcd then, and a write must not wait for a fill of any length.
   */
  private async caughtUp(rv: number): Promise<void> {
    if (!this.feed.initializing()) await this.objects.waitUntilFresh(rv, FRESHNESS_WAIT_MS);
  }

  /**
   * KEP-2340 consistent read from the cache: etcd's current revision, then wait for the cache to reach
   * it, asking for progress meanwhile. Any linearizable range's header carries the store's revision:
   * a single key costs less than the prefix (etcd counts a range even with a limit). Concurrent reads
   * share one Range sent after they all arrived (at 16 connections ~10 reads per Range). False when
   * the cache did not get there within the watch cache's 3 s: the caller reads etcd instead (the
   * delegator's fallback), as the cache may be stuck behind a slow watch while etcd answers.
   */
  private async consistentRead(): Promise<boolean> {
    const down = this.feed.unavailable();
    if (down) throw storageErrors.unavailable(down);
    const rev = await this.currentRevision.read();
    if (await this.waitForCache(rev)) return true;
    // A relist begun meanwhile is no outage (etcd just answered): the caller reads etcd, as upstream's fallback.
    if (this.feed.initializing()) return false;
    const why = this.feed.unavailable();
    if (why) throw storageErrors.unavailable(why);
    return false;
  }

  /** True once the cache reached `rv`, false after the watch cache's 3 s; asks etcd for progress meanwhile. */
  private async waitForCache(rv: number): Promise<boolean> {
    if (rv <= this.objects.resourceVersion) return true;
    const done = this.feed.wantProgress();
    try {
      return await this.objects.waitUntilFresh(rv, FRESHNESS_WAIT_MS);
    } finally {
      done();
    }
  }

  /** The key's state in etcd now (linearizable). */
  private fetch(key: string): Promise<Entry | undefined> {
    return this.etcd.get(key, '');
  }

  private entryOf(res: IRangeResponse | undefined): Entry | undefined {
    const kv = res?.kvs[0];
    return kv ? decodeEntry(this.keys, kv) : undefined;
  }

  private txn(req: Parameters<EtcdClient['txn']>[0]): Promise<ITxnResponse> {
    return etcdCall(() => this.client.txn(req));
  }
}
