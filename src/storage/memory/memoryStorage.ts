// The in-memory backend: a resourceVersion counter feeding an ObjectCache, which it reads from too.
// Everything between reading the current state and storing the next happens in one turn of the
// event loop, so its writes are atomic without transactions; a try-update that awaits is re-run
// when the object changed meanwhile, as etcd3's GuaranteedUpdate re-runs it on a lost race.
import type { KubeObject } from '../../apimachinery/types.js';
import { CacheReader } from '../cacher/cacheReader.js';
import { ObjectCache } from '../cacher/objectCache.js';
import { storageErrors } from '../errors.js';
import type { CacheView, Change, Entry, Preconditions, Storage, TryUpdate, UpdateOptions } from '../interfaces.js';
import { checkPreconditions, checkSize, sameObject, stamped } from '../objects.js';

/** Re-runs of a try-update whose object kept changing under it before giving up with a conflict. */
const maxUpdateAttempts = 10;

export interface MemoryStorageOptions {
  /** Changes kept for watches and lists at an older resourceVersion. */
  historyLimit: number;
  /** Where this process's resourceVersions start; defaults to one no earlier process can have reached. */
  initialRV?: number;
}

/**
 * Microseconds since the epoch: resourceVersions of a new process start above any an earlier one could
 * have issued (it would need a million writes a second), so a client resuming from an old process's RV
 * gets 410 Expired and relists instead of being accepted with a stale view. Stays below 2^53 until 2255.
 */
export function startingResourceVersion(now = Date.now()): number {
  return now * 1000;
}

export class MemoryStorage extends CacheReader implements Storage {
  /** Read-only to everyone else: only this backend feeds the cache. */
  readonly view: CacheView;
  private readonly objects: ObjectCache;
  private rv: number;

  constructor(opts: MemoryStorageOptions) {
    const cache = new ObjectCache(opts.historyLimit, opts.initialRV ?? startingResourceVersion());
    super(cache);
    this.objects = cache;
    this.view = cache;
    this.rv = cache.resourceVersion;
  }

  async create(key: string, object: KubeObject): Promise<Entry> {
    // Before the state is read: what follows stays in one turn.
    await this.objects.room();
    if (this.objects.get(key)) throw storageErrors.exists(key);
    return this.commit('ADDED', key, object, undefined);
  }

  async guaranteedUpdate<R>(key: string, tryUpdate: TryUpdate<R>, opts: UpdateOptions = {}) {
    await this.objects.room();
    for (let attempt = 1; ; attempt++) {
      const current = this.objects.get(key);
      const { object, result } = await tryUpdate(current);
      if (this.objects.get(key) !== current) {
        if (attempt >= maxUpdateAttempts) throw storageErrors.conflict(key);
        continue;
      }
      if (!current) return { entry: this.commit('ADDED', key, object, undefined), created: true, result };
      // etcd3 GuaranteedUpdate: an update that changes nothing is not written (same resourceVersion, no event).
      if (sameObject(object, current)) return { entry: current, created: false, result };
      return { entry: this.commit('MODIFIED', key, object, current, opts.allowGrowthPastLimit), created: false, result };
    }
  }

  async delete(key: string, preconditions: Preconditions = {}): Promise<Entry> {
    await this.objects.room();
    const current = this.objects.get(key);
    if (!current) throw storageErrors.notFound(key);
    checkPreconditions(key, current, preconditions);
    return this.commit('DELETED', key, current.object, current);
  }

  /** Stamps the next resourceVersion and records the change. */
  private commit(type: Change['type'], key: string, obj: KubeObject, prev: Entry | undefined, allowGrowth = false): Entry {
    const entry = stamped(key, obj, this.rv + 1);
    if (type !== 'DELETED') checkSize(entry, prev, allowGrowth);
    this.rv = entry.rv;
    this.objects.apply({ type, rv: entry.rv, entry, prev });
    return entry;
  }
}
