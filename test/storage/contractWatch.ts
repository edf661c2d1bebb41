// Contract cases for watches and the in-process CacheView (upstream watcher_tests.go: RunTestWatch,
// RunTestWatchFromZero/NonZero, RunTestDeleteTriggerWatch, RunTestWatchDeleteEventObjectHaveLatestRV,
// RunTestWatchInitializationSignal, RunTestWatchDispatchBookmarkEvents, RunWatchSemantics).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/apimachinery/types.js';
import type { Change, Entry, Storage, WatchItem, WatchOptions } from '../../src/storage/interfaces.js';
import {
  assertQuiet, CASE_TIMEOUT_MS, describeItem, EVENT_WAIT_MS, llama, nextItem, rejectsWithCode, takeItems, within,
  withBackend, withLabels, withSpec, type MakeStorage,
} from './harness.js';

const opts = { timeout: CASE_TIMEOUT_MS };

const watchOpts = (o: Partial<WatchOptions> & { prefix: string }): WatchOptions => ({ predicate: {}, capacity: 100, ...o });

const entryOf = (i: WatchItem | undefined): Entry => {
  assert.ok(i && 'entry' in i, `expected an object event, got ${i ? describeItem(i) : 'the end'}`);
  return i.entry;
};

const modify = (s: Storage, key: string, change: (o: KubeObject) => KubeObject) =>
  s.guaranteedUpdate(key, async (c) => ({ object: change(c!.object), result: 0 })).then((r) => r.entry);

/** Polls (bounded) until `cond` holds: what a backend delivers asynchronously may take a moment. */
async function eventually(cond: () => boolean, what: string, ms = EVENT_WAIT_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function watchCases(make: MakeStorage): void {
  describe('watch', () => {
    it('from a resourceVersion: exactly the later changes under the prefix, in order, then live ones; DELETED is the last state at the deletion RV', opts, withBackend(make, undefined, async ({ storage }) => {
      await storage.create('ns/old', llama('ns/old'));
      const rv0 = storage.resourceVersion;
      const a = await storage.create('ns/a', llama('ns/a'));
      const a2 = await modify(storage, 'ns/a', (o) => withLabels(o, { v: '2' }));
      await storage.create('nsx/a', llama('nsx/a'));
      const gone = await storage.delete('ns/a');
      const b = await storage.create('ns/b', llama('ns/b'));
      const w = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: rv0 }));
      try {
        const replay = await takeItems(w, 4);
        assert.deepEqual(replay.map(describeItem), [`ADDED ns/a@${a.rv}`, `MODIFIED ns/a@${a2.rv}`, `DELETED ns/a@${gone.rv}`, `ADDED ns/b@${b.rv}`]);
        assert.deepEqual(replay.map(entryOf), [a, a2, gone, b]);
        assert.deepEqual(entryOf(replay[2]).object.metadata.labels, { v: '2' }, 'the last state');
        assert.equal(entryOf(replay[2]).object.metadata.resourceVersion, String(gone.rv));
        await assertQuiet(w);
        const b2 = await modify(storage, 'ns/b', (o) => withSpec(o, { weight: 2 }));
        assert.deepEqual(entryOf(await nextItem(w)), b2);
      } finally {
        w.close();
      }
      const fromNow = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion }));
      try {
        await assertQuiet(fromNow);
      } finally {
        fromNow.close();
      }
    }));

    it('initial state: ADDED for each current object under the prefix that matches, in key order, then INITIAL_END at the current RV', opts, withBackend(make, undefined, async ({ storage }) => {
      const b = await storage.create('ns/b', llama('ns/b', { labels: { app: 'farm' } }));
      const a = await storage.create('ns/a', llama('ns/a', { labels: { app: 'farm' } }));
      await storage.create('ns/c', llama('ns/c', { labels: { app: 'zoo' } }));
      await storage.create('other/a', llama('other/a', { labels: { app: 'farm' } }));
      const rv = storage.resourceVersion;
      const matches = (o: KubeObject) => o.metadata.labels?.app === 'farm';
      const w = await storage.watch(watchOpts({ prefix: 'ns/', initialState: true, initialEndMarker: true, predicate: { matches } }));
      const plain = await storage.watch(watchOpts({ prefix: 'ns/', initialState: true }));
      try {
        const items = await takeItems(w, 3);
        assert.deepEqual(items.map(describeItem), [`ADDED ns/a@${a.rv}`, `ADDED ns/b@${b.rv}`, `INITIAL_END@${rv}`]);
        assert.deepEqual(items.slice(0, 2).map(entryOf), [a, b]);
        assert.deepEqual((await takeItems(plain, 3)).map((i) => entryOf(i).key), ['ns/a', 'ns/b', 'ns/c'], 'no marker unless asked');
        const a2 = await modify(storage, 'ns/a', (o) => withSpec(o, { weight: 5 }));
        assert.equal(describeItem((await nextItem(w))!), `MODIFIED ns/a@${a2.rv}`);
        assert.equal(describeItem((await nextItem(plain))!), `MODIFIED ns/a@${a2.rv}`);
      } finally {
        w.close();
        plain.close();
      }
    }));

    it('neither a resourceVersion nor initial state: only the changes from now on', opts, withBackend(make, undefined, async ({ storage }) => {
      await storage.create('ns/a', llama('ns/a'));
      const w = await storage.watch(watchOpts({ prefix: 'ns/' }));
      try {
        await assertQuiet(w);
        const b = await storage.create('ns/b', llama('ns/b'));
        assert.deepEqual(entryOf(await nextItem(w)), b);
      } finally {
        w.close();
      }
    }));

    it('a predicate turns entering the selection into ADDED and leaving it into DELETED (the content that matched, at the new RV)', opts, withBackend(make, undefined, async ({ storage }) => {
      const x = await storage.create('ns/x', llama('ns/x', { labels: { app: 'farm' } }));
      await storage.create('ns/y', llama('ns/y', { labels: { app: 'zoo' } }));
      const matches = (o: KubeObject) => o.metadata.labels?.app === 'farm';
      const live = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion, predicate: { matches } }));
      try {
        const m = await modify(storage, 'ns/x', (o) => withSpec(o, { weight: 2 }));      // stays inside: MODIFIED
        const left = await modify(storage, 'ns/x', (o) => withLabels(o, { app: 'zoo' }));  // leaves: DELETED
        await modify(storage, 'ns/x', (o) => withSpec(o, { weight: 3 }));                  // outside: nothing
        const entered = await modify(storage, 'ns/y', (o) => withLabels(o, { app: 'farm' })); // enters: ADDED
        const gone = await storage.delete('ns/y');                                          // deleted inside: DELETED
        await storage.delete('ns/x');                                                       // deleted outside: nothing
        const expected = [`MODIFIED ns/x@${m.rv}`, `DELETED ns/x@${left.rv}`, `ADDED ns/y@${entered.rv}`, `DELETED ns/y@${gone.rv}`];
        const items = await takeItems(live, 4);
        assert.deepEqual(items.map(describeItem), expected);
        const leaving = entryOf(items[1]).object;
        assert.deepEqual(leaving.metadata.labels, { app: 'farm' }, 'the content that matched');
        assert.deepEqual(leaving.spec, { weight: 2 });
        assert.equal(leaving.metadata.resourceVersion, String(left.rv));
        await assertQuiet(live);
        const replay = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: x.rv, predicate: { matches } }));
        try {
          assert.deepEqual((await takeItems(replay, 4)).map(describeItem), expected, 'a replay translates the same way');
        } finally {
          replay.close();
        }
      } finally {
        live.close();
      }
    }));

    it('TooOld for a watch from a resourceVersion older than the compacted history', opts, withBackend(make, { historyLimit: 4 }, async ({ storage, compact }) => {
      await storage.create('ns/a', llama('ns/a'));
      const old = storage.resourceVersion;
      await storage.create('ns/b', llama('ns/b'));
      await compact();
      await rejectsWithCode(storage.watch(watchOpts({ prefix: 'ns/', fromRV: old })), 'TooOld');
      const now = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion }));
      now.close();
    }));

    it('requestBookmark queues a BOOKMARK at the current resourceVersion behind the changes already queued', opts, withBackend(make, undefined, async ({ storage }) => {
      const w = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion }));
      try {
        const a = await storage.create('ns/a', llama('ns/a'));
        await storage.create('elsewhere/b', llama('elsewhere/b'));
        w.requestBookmark();
        assert.deepEqual((await takeItems(w, 2)).map(describeItem), [`ADDED ns/a@${a.rv}`, `BOOKMARK@${storage.resourceVersion}`]);
      } finally {
        w.close();
      }
    }));

    it('a watcher that does not read is closed for overflow and ends; writers are never blocked; a reading watcher sees every change', opts, withBackend(make, undefined, async ({ storage }) => {
      const slow = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion, capacity: 3 }));
      const reader = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion, capacity: 3 }));
      try {
        const written: string[] = [];
        const seen: string[] = [];
        for (let i = 0; i < 30; i++) {
          const e = await within(storage.create(`ns/o${i}`, llama(`ns/o${i}`)), EVENT_WAIT_MS, `write ${i} with a stuck watcher`);
          written.push(`ADDED ns/o${i}@${e.rv}`);
          seen.push(describeItem((await nextItem(reader))!));
        }
        assert.deepEqual(seen, written);
        await eventually(() => slow.closedReason === 'overflow', 'the slow watcher is closed for overflow');
        assert.equal(await nextItem(slow), undefined, 'an overflowed watcher ends without what it buffered');
        assert.equal(reader.closedReason, undefined);
      } finally {
        slow.close();
        reader.close();
      }
    }));

    it('close(): a pending next() resolves to the end, closedReason is "closed", nothing arrives after', opts, withBackend(make, undefined, async ({ storage }) => {
      const w = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: storage.resourceVersion }));
      const pending = w.next();
      w.close();
      assert.equal(await within(pending, EVENT_WAIT_MS, 'next() after close'), undefined);
      assert.equal(w.closedReason, 'closed');
      await storage.create('ns/a', llama('ns/a'));
      assert.equal(await nextItem(w), undefined);
    }));

    it('from a resourceVersion the store has not reached: only changes after it', opts, withBackend(make, undefined, async ({ storage }) => {
      const from = storage.resourceVersion + 2;
      const w = await storage.watch(watchOpts({ prefix: 'ns/', fromRV: from }));
      try {
        await storage.create('ns/a', llama('ns/a'));
        await storage.create('ns/b', llama('ns/b'));
        const c = await storage.create('ns/c', llama('ns/c'));
        assert.ok(c.rv > from);
        assert.deepEqual(entryOf(await nextItem(w)), c);
      } finally {
        w.close();
      }
    }));
  });

  describe('CacheView', () => {
    it('get and subscribe see every committed change at once, in order, with the previous state; unsubscribe stops them', opts, withBackend(make, undefined, async ({ storage, view }, t) => {
      if (!view) return t.skip('this backend has no in-process CacheView');
      const changes: Change[] = [];
      const unsubscribe = view.subscribe((c) => changes.push(c));
      const size0 = view.size;
      const a = await storage.create('ns/a', llama('ns/a'));
      assert.deepEqual(view.get('ns/a'), a);
      assert.equal(view.resourceVersion, a.rv);
      assert.equal(view.size, size0 + 1);
      const a2 = await modify(storage, 'ns/a', (o) => withLabels(o, { v: '2' }));
      assert.deepEqual(view.get('ns/a'), a2);
      await storage.guaranteedUpdate('ns/a', async (c) => ({ object: c!.object, result: 0 }));
      const gone = await storage.delete('ns/a');
      assert.equal(view.get('ns/a'), undefined);
      assert.equal(view.size, size0);
      assert.equal(view.resourceVersion, gone.rv);
      assert.deepEqual(changes.map((c) => `${c.type}@${c.rv}`), [`ADDED@${a.rv}`, `MODIFIED@${a2.rv}`, `DELETED@${gone.rv}`], 'the no-op emitted nothing');
      assert.deepEqual(changes.map((c) => c.entry), [a, a2, gone]);
      assert.deepEqual(changes.map((c) => c.prev), [undefined, a, a2]);
      unsubscribe();
      await storage.create('ns/b', llama('ns/b'));
      assert.equal(changes.length, 3);
    }));
  });
}
