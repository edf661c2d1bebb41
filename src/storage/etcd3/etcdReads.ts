// Reads straight from etcd (k8s.io/apiserver pkg/storage/etcd3/store.go Get and GetList) for what
// the watch cache cannot serve: everything while it is being filled, and pages older than its window.
import { parseRV } from '../../apimachinery/resourceVersion.js';
import { encodeContinue } from '../continueToken.js';
import { isStorageError, storageErrors } from '../errors.js';
import type { Entry, ListOptions, ListResult } from '../interfaces.js';
import type { EtcdClient, IRangeResponse } from './client.js';
import { decodeEntry, etcdCall, keyAfter, type EtcdKeys } from './codec.js';

/** The most keys asked for in one Range while filling a page (store.go's maxLimit). */
const MAX_PAGE = 10_000;

export class EtcdReads {
  constructor(
    private readonly client: EtcdClient,
    private readonly keys: EtcdKeys,
    /** etcd's revision now (for the error of a resourceVersion it has not reached). */
    private readonly currentRevision: () => Promise<number>,
  ) {}

  /** etcd3 store.Get: the key now; a resourceVersion etcd has not reached is too large. */
  async get(key: string, resourceVersion: string): Promise<Entry | undefined> {
    const min = parseRV(resourceVersion);
    const res = await etcdCall(() => this.client.range({ key: this.keys.key(key) }));
    const current = res.header.revision;
    if (min !== undefined && min > current) throw storageErrors.tooLargeResourceVersion(resourceVersion, current, 0);
    const kv = res.kvs[0];
    return kv ? decodeEntry(this.keys, kv) : undefined;
  }

  /**
   * etcd3 store.GetList: keys in order from `startAfter`, at revision `rev` (default: now, no older
   * than `minRV`), pages of `limit` until it is filled with what the predicate accepts; the continue
   * token carries the revision, so every page is read at the first one's.
   */
  async list(opts: ListOptions, rev: number | undefined, startAfter?: string, minRV?: string): Promise<ListResult> {
    const { key: first, range_end } = this.keys.rangeOf(opts.prefix);
    const { limit, predicate: { matches } } = opts;
    const items: Entry[] = [];
    let start = startAfter === undefined ? first : this.keys.key(`${startAfter}\u0000`);
    let pageSize = limit > 0 ? Math.min(limit, MAX_PAGE) : 0;
    let more = false;
    let remaining: number | undefined;
    // Past int64 no etcd revision can be, nor can the request carry it: etcd's "future revision" answer, without asking.
    if (rev !== undefined && rev >= 2 ** 63) throw storageErrors.tooLargeResourceVersion(String(rev), await this.currentRevision().catch(() => 0), 0);
    for (;;) {
      let res: IRangeResponse;
      try {
        res = await etcdCall(() => this.client.range({ key: start, range_end, limit: pageSize, ...(rev ? { revision: rev } : {}) }));
      } catch (e) {
        if (startAfter !== undefined && isStorageError(e, 'TooOld')) throw storageErrors.tooOldContinue(startAfter);
        // An Exact resourceVersion etcd has not reached yet.
        if (rev !== undefined && /future revision/.test((e as Error).message)) throw storageErrors.tooLargeResourceVersion(String(rev), await this.currentRevision().catch(() => 0), 0);
        throw e;
      }
      if (rev === undefined) {
        rev = res.header.revision;
        const min = minRV === undefined ? undefined : parseRV(minRV);
        if (min !== undefined && min > rev) throw storageErrors.tooLargeResourceVersion(minRV ?? '', rev, 0);
      }
      for (const kv of res.kvs) {
        if (limit > 0 && items.length === limit) { more = true; break; }
        const entry = decodeEntry(this.keys, kv);
        if (!matches || matches(entry.object)) items.push(entry);
      }
      const last = res.kvs[res.kvs.length - 1];
      if (more || !res.more || last === undefined) break;
      if (limit > 0 && items.length === limit) {
        more = true;
        if (!matches) remaining = Number(res.count) - res.kvs.length;
        break;
      }
      start = keyAfter(last.key);
      // store.go's pagedChunks: a selector that matched too little asks for twice as many keys next time.
      pageSize = Math.min(pageSize * 2, MAX_PAGE);
    }
    const result: ListResult = { items, resourceVersion: rev };
    const lastItem = items[items.length - 1];
    if (more && lastItem) {
      result.continue = encodeContinue(rev, lastItem.key);
      if (remaining !== undefined) result.remainingItemCount = remaining;
    }
    return result;
  }
}
