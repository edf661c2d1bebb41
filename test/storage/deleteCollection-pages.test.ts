// DeleteCollection of more than one page (deleteCollectionPageSize, 10,000) over the in-memory backend,
// at the server's default watch history (10,000 changes). Upstream's later pages are read at the first
// page's revision from etcd, which keeps it until compaction; here the pages come from the cache's window,
// which its own deletions move. And the deletions, each settling without I/O, must not hold the event loop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ListOptions } from '../../src/apimachinery/options.js';
import { llamaDescriptor } from '../../src/registry/farm/llama.js';
import { Store } from '../../src/registry/generic/store.js';
import { MemoryStorage } from '../../src/storage/memory/memoryStorage.js';
import { objectKey } from '../../src/storage/objects.js';

/** config.ts's default --watch-history. */
const DEFAULT_WATCH_HISTORY = 10_000;
const ALL: ListOptions = { labelSelector: '', fieldSelector: '', watch: false, allowWatchBookmarks: false, resourceVersion: '', resourceVersionMatch: '', limit: 0, continue: '' };

async function collectionOf(n: number): Promise<{ storage: MemoryStorage; store: Store }> {
  const storage = new MemoryStorage({ historyLimit: DEFAULT_WATCH_HISTORY });
  const store = new Store(llamaDescriptor(), storage, { garbageCollection: false, now: () => new Date('2024-05-06T07:08:09Z') });
  for (let i = 0; i < n; i++) {
    const name = `l${String(i).padStart(6, '0')}`;
    await storage.create(objectKey('big', name), { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, namespace: 'big' }, spec: { weight: 1, height: 1 } });
  }
  return { storage, store };
}

const left = async (store: Store) => (await store.list({ namespace: 'big' }, ALL)).items.length;

describe('deleteCollection of several pages over the in-memory backend', () => {
  it('deletes a collection of 25,000 (three pages) and answers all of it, at the default watch history', { timeout: 120_000 }, async () => {
    const { storage, store } = await collectionOf(25_000);
    const rv = storage.resourceVersion;
    const answered = await store.deleteCollection({ namespace: 'big' }, {}, false, ALL);
    assert.equal(answered.items.length, 25_000);
    // The first page's list metadata, as upstream answers (its continue token and remaining count kept).
    assert.equal(answered.resourceVersion, rv);
    assert.equal(answered.remainingItemCount, 15_000);
    assert.equal(await left(store), 0);
  });

  it('lets other callbacks run while it deletes', { timeout: 120_000 }, async () => {
    const { store } = await collectionOf(10_050);
    let turns = 0;
    let running = true;
    const count = () => { turns++; if (running) setImmediate(count); };
    setImmediate(count);
    const t0 = performance.now();
    await store.deleteCollection({ namespace: 'big' }, {}, false, ALL);
    running = false;
    const ms = performance.now() - t0;
    assert.equal(await left(store), 0);
    assert.ok(turns > 1, `the event loop turned ${turns} time(s) in ${ms.toFixed(0)} ms of deleting`);
  });
});
