// What the storage contract suites share: the backend factory every backend implements, minimal objects,
// and waits that are bounded so a backend that hangs fails its case instead of hanging the run.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { ApiError } from '../../src/apimachinery/status.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { isStorageError, type StorageError, type StorageErrorCode } from '../../src/storage/errors.js';
import type { CacheView, Entry, Storage, WatchItem, Watcher } from '../../src/storage/interfaces.js';

export interface BackendOptions {
  /** Changes the backend keeps for older resourceVersions; a backend without such a bound may ignore it. */
  historyLimit?: number;
}

export interface Backend {
  storage: Storage;
  /** The backend's in-process cache, when it has one. */
  view?: CacheView;
  /**
   * Makes every resourceVersion older than the current one too old (etcd: compact at the current
   * revision; memory: write past its history). May write keys under COMPACTION_PREFIX, never elsewhere.
   */
  compact(): Promise<void>;
  close(): Promise<void>;
}

export type MakeStorage = (opts?: BackendOptions) => Promise<Backend>;

/** Where a backend's compact() may write; the cases use other prefixes. */
export const COMPACTION_PREFIX = 'compaction/';

/** Per case: generous for a real etcd, short enough that a hang fails fast. */
export const CASE_TIMEOUT_MS = 15_000;
/** How long a watch item or a write may take to show up. */
export const EVENT_WAIT_MS = 2_000;

export function llama(key: string, extra: { labels?: Record<string, string>; spec?: Record<string, unknown>; uid?: string } = {}): KubeObject {
  const [namespace, name] = key.includes('/') ? key.split('/') : [undefined, key];
  return {
    apiVersion: 'farm.example.com/v1alpha',
    kind: 'Llama',
    metadata: { name, ...(namespace ? { namespace } : {}), ...(extra.uid ? { uid: extra.uid } : {}), ...(extra.labels ? { labels: extra.labels } : {}) },
    spec: extra.spec ?? { weight: 1 },
  };
}

/** The object with its spec replaced (labels and the rest kept). */
export function withSpec(o: KubeObject, spec: Record<string, unknown>): KubeObject {
  return { ...o, spec };
}

export function withLabels(o: KubeObject, labels: Record<string, string>): KubeObject {
  return { ...o, metadata: { ...o.metadata, labels } };
}

/** Rejects with `what` if `p` has not settled within `ms`. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms); });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const nextItem = (w: Watcher, ms = EVENT_WAIT_MS): Promise<WatchItem | undefined> => within(w.next(), ms, 'watch item');

/** The next `n` items, each within the bounded wait. */
export async function takeItems(w: Watcher, n: number): Promise<WatchItem[]> {
  const out: WatchItem[] = [];
  for (let i = 0; i < n; i++) {
    const item = await nextItem(w);
    if (!item) throw new Error(`watch ended after ${out.length} of ${n} items (closedReason ${w.closedReason})`);
    out.push(item);
  }
  return out;
}

/** Nothing arrives within a short wait (checked without reading, so nothing is consumed). */
export async function assertQuiet(w: Watcher, ms = 100): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
  assert.equal(w.pending(), 0, 'expected no watch item');
}

export const describeItem = (i: WatchItem): string => ('entry' in i ? `${i.type} ${i.entry.key}@${i.entry.rv}` : `${i.type}@${i.rv}`);

export const keysOf = (entries: readonly Entry[]): string[] => entries.map((e) => e.key);

/** Resolves to the storage error `code` that `p` rejects with; fails on anything else. */
export async function rejectsWithCode(p: Promise<unknown>, code: StorageErrorCode): Promise<StorageError> {
  let got: StorageError | undefined;
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isStorageError(e), `expected a StorageError ${code}, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    got = e;
    return true;
  });
  return got!;
}

/** Resolves once `p` rejects with an ApiError of HTTP `code` (what the registry passes through untouched). */
export async function rejectsWithApiError(p: Promise<unknown>, code: number, message?: string | RegExp): Promise<ApiError> {
  let caught: ApiError | undefined;
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ApiError, `expected an ApiError ${code}, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (typeof message === 'string') assert.equal(e.message, message);
    else if (message) assert.match(e.message, message);
    caught = e;
    return true;
  });
  return caught!;
}

/** A fresh backend per case, closed whatever the case does. */
export function withBackend(make: MakeStorage, opts: BackendOptions | undefined, body: (b: Backend, t: TestContext) => Promise<void>): (t: TestContext) => Promise<void> {
  return async (t) => {
    const b = await make(opts);
    try {
      await body(b, t);
    } finally {
      await b.close();
    }
  };
}
