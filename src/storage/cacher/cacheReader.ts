// The Reader of the storage contract served from an ObjectCache (the watch cache): gets, lists at
// one resourceVersion with continue tokens and limits, watches from any RV still in its window.
import { errors } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { parseRV } from '../../apimachinery/resourceVersion.js';
import { CONTINUE_LATEST, type ContinueFrom, encodeContinue, parseContinue } from '../continueToken.js';
import { storageErrors } from '../errors.js';
import type { Entry, ListOptions, ListResult, Reader, Watcher, WatchOptions } from '../interfaces.js';
import { TooOldError, type ObjectCache } from './objectCache.js';

/** How long a read waits for a resourceVersion the cache has not reached (the watch cache's 3 s). */
export const FRESHNESS_WAIT_MS = 3000;

export class CacheReader implements Reader {
  constructor(
    private readonly cache: ObjectCache,
    private readonly whyUnavailable: () => string | undefined = () => undefined,
  ) {}

  get resourceVersion(): number { return this.cache.resourceVersion; }

  unavailable(): string | undefined { return this.whyUnavailable(); }

  async waitUntilFresh(resourceVersion: string): Promise<void> {
    const rv = parseRV(resourceVersion);
    if (rv === undefined || rv <= this.cache.resourceVersion) return;
    // The message quotes the client's digits: past 2^53 the number itself is not exact.
    if (!(await this.cache.waitUntilFresh(rv, FRESHNESS_WAIT_MS))) {
      throw storageErrors.tooLargeResourceVersion(resourceVersion, this.cache.resourceVersion);
    }
  }

  async get(key: string, resourceVersion = ''): Promise<Entry | undefined> {
    if (resourceVersion) await this.waitUntilFresh(resourceVersion);
    return this.cache.get(key);
  }

  /** A list as of one resourceVersion, paginated like the etcd3 storage: keys in order, continue = last key + rv. */
  async list(opts: ListOptions): Promise<ListResult> {
    // The token carries its own resourceVersion (etcd3 store.GetList).
    if (opts.continue) return this.listContinued(opts, parseContinue(opts));
    await this.waitUntilFresh(opts.resourceVersion);
    const rv = exactResourceVersion(opts);
    if (rv !== undefined && rv < this.cache.oldestRV) throw storageErrors.tooOld(rv, this.cache.oldestRV);
    return this.listAt(opts, rv);
  }

  /** The page after a decoded continue token, read at the token's resourceVersion (or the latest state). */
  protected async listContinued(opts: ListOptions, c: ContinueFrom): Promise<ListResult> {
    if (c.rv === CONTINUE_LATEST) return this.listAt(opts, undefined, c.startAfter);
    if (c.rv < this.cache.oldestRV) throw storageErrors.tooOldContinue(c.startAfter);
    // A page another replica (or etcd) answered may be ahead of this cache: the rest must include what it did.
    await this.waitUntilFresh(String(c.rv));
    return this.listAt(opts, c.rv, c.startAfter);
  }

  /** The page of the cache at `atRV` (undefined: its newest state) after `startAfter`; TooOld if the window moved past `atRV`. */
  private listAt(opts: ListOptions, atRV: number | undefined, startAfter?: string): ListResult {
    const { predicate } = opts;
    const cache = this.cache;
    const listRV = atRV ?? cache.resourceVersion;
    let candidates: Entry[];
    if (predicate.onlyKey !== undefined && atRV === undefined) {
      const e = cache.get(predicate.onlyKey);
      candidates = e && (startAfter === undefined || e.key > startAfter) ? [e] : [];
    } else {
      candidates = this.cacheRead(() => cache.list({ prefix: opts.prefix, atRV, startAfter }), startAfter);
    }
    return paginate(candidates, opts.limit, predicate.matches, listRV, (lastKey) => encodeContinue(listRV, lastKey));
  }

  async watch(opts: WatchOptions): Promise<Watcher> {
    return this.cacheRead(() => this.cache.watch({
      fromRV: opts.fromRV,
      initialState: opts.initialState,
      initialEndMarker: opts.initialEndMarker,
      prefix: opts.prefix,
      matches: opts.predicate.matches,
      capacity: opts.capacity,
    }));
  }

  /** The cache's own "too old" becomes the storage contract's (a continued page's: with a token for the rest). */
  private cacheRead<T>(read: () => T, startAfter?: string): T {
    try {
      return read();
    } catch (e) {
      if (e instanceof TooOldError) throw startAfter === undefined ? storageErrors.tooOld(e.requested, e.oldest) : storageErrors.tooOldContinue(startAfter);
      throw e;
    }
  }
}

/**
 * The resourceVersion a list is read at exactly (storage.ValidateListOptions): with
 * resourceVersionMatch=Exact, and in the legacy form, a resourceVersion above 0 with a limit.
 */
export function exactResourceVersion(opts: ListOptions): number | undefined {
  const rv = parseRV(opts.resourceVersion);
  if (rv === undefined) return undefined;
  if (opts.resourceVersionMatch === 'Exact') return rv;
  return opts.resourceVersionMatch === '' && opts.limit > 0 && rv > 0 ? rv : undefined;
}

/**
 * The page of `candidates` (sorted entries) a list answers: those `matches` accepts, at most `limit`
 * (0 = all), with a continue token (made by `token` from the last key) when more would match.
 */
export function paginate(candidates: Entry[], limit: number, matches: ((obj: KubeObject) => boolean) | undefined, resourceVersion: number, token: (lastKey: string) => string): ListResult {
  const max = limit > 0 ? limit : Infinity;
  // Nothing to filter or cut: the candidates are the list (a fresh array from the cache, not copied again).
  if (!matches && candidates.length <= max) return { items: candidates, resourceVersion };
  const items: Entry[] = [];
  let i = 0;
  for (; i < candidates.length && items.length < max; i++) {
    if (!matches || matches(candidates[i].object)) items.push(candidates[i]);
  }
  const result: ListResult = { items, resourceVersion };
  if (items.length === max && i < candidates.length) {
    const more = matches ? candidates.slice(i).some((e) => matches(e.object)) : true;
    if (more) {
      result.continue = token(items[items.length - 1].key);
      // etcd can count what remains only when no selector filters it; upstream omits it otherwise.
      if (!matches) result.remainingItemCount = candidates.length - i;
    }
  }
  return result;
}
