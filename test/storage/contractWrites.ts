// Contract cases for writes and point reads (upstream store_tests.go: RunTestCreate, RunTestGet,
// RunTestGuaranteedUpdate(+WithConflict), RunTestConditionalDelete, RunTestUnconditionalDelete).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { isStorageError, storageErrors } from '../../src/storage/errors.js';
import type { Entry, Storage } from '../../src/storage/interfaces.js';
import { MAX_OBJECT_BYTES } from '../../src/storage/objects.js';
import {
  assertQuiet, CASE_TIMEOUT_MS, EVENT_WAIT_MS, llama, rejectsWithApiError, rejectsWithCode, takeItems, describeItem,
  withBackend, withLabels, withSpec, within, type MakeStorage,
} from './harness.js';

const opts = { timeout: CASE_TIMEOUT_MS };

/** spec.count of a stored llama (0 when absent): what the racing updates increment. */
function count(e: Entry | undefined): number {
  const spec = e?.object.spec as { count?: number } | undefined;
  return spec?.count ?? 0;
}

const counted = (o: KubeObject, n: number): KubeObject => withSpec(o, { weight: 1, count: n });

/** A promise and the function that settles it, to hold a try-update at an await. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => { open = r; });
  return { wait, open };
}

/** A watch from now on, to prove a write emitted nothing. */
const watchFromNow = (s: Storage, prefix: string) => s.watch({ prefix, fromRV: s.resourceVersion, predicate: {}, capacity: 100 });

export function writeCases(make: MakeStorage): void {
  describe('create', () => {
    it('stores the object at a new, larger resourceVersion; get and the reader see it', opts, withBackend(make, undefined, async ({ storage }) => {
      const before = storage.resourceVersion;
      const e = await storage.create('ns/a', llama('ns/a', { labels: { app: 'farm' } }));
      assert.equal(e.key, 'ns/a');
      assert.ok(e.rv > before, `${e.rv} > ${before}`);
      assert.equal(e.object.metadata.resourceVersion, String(e.rv));
      assert.deepEqual(e.object.metadata.labels, { app: 'farm' });
      assert.deepEqual(e.object.spec, { weight: 1 });
      assert.deepEqual(JSON.parse(e.json), e.object, 'json is the object as stored');
      assert.equal(storage.resourceVersion, e.rv);
      assert.deepEqual(await storage.get('ns/a'), e);
    }));

    it('KeyExists for a key that is taken; nothing is written', opts, withBackend(make, undefined, async ({ storage }) => {
      const first = await storage.create('ns/a', llama('ns/a'));
      const w = await watchFromNow(storage, 'ns/');
      try {
        await rejectsWithCode(storage.create('ns/a', llama('ns/a', { spec: { weight: 2 } })), 'KeyExists');
        assert.equal(storage.resourceVersion, first.rv);
        assert.deepEqual(await storage.get('ns/a'), first);
        await assertQuiet(w);
      } finally {
        w.close();
      }
    }));
  });

  describe('get', () => {
    it('undefined for a missing key; resourceVersion "0", the object\'s and the current one all read the object', opts, withBackend(make, undefined, async ({ storage }) => {
      assert.equal(await storage.get('ns/missing'), undefined);
      const e = await storage.create('ns/a', llama('ns/a'));
      await storage.create('ns/b', llama('ns/b'));
      for (const rv of ['', '0', String(e.rv), String(storage.resourceVersion)]) {
        assert.deepEqual(await storage.get('ns/a', rv), e, `resourceVersion "${rv}"`);
      }
      assert.equal(await storage.get('ns/missing', String(storage.resourceVersion)), undefined);
    }));

    it('a resourceVersion not reached yet waits for it: the get answers once a write reaches it', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a'));
      const pending = storage.get('ns/a', String(e.rv + 1));
      let settled = false;
      void pending.then(() => { settled = true; }, () => { settled = true; });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(settled, false, 'it waits');
      await storage.create('ns/b', llama('ns/b'));
      assert.deepEqual(await within(pending, EVENT_WAIT_MS, 'get at a reached RV'), e);
    }));

    it('400 for a resourceVersion that is not a number', opts, withBackend(make, undefined, async ({ storage }) => {
      await rejectsWithApiError(storage.get('ns/a', 'abc'), 400, 'invalid resource version: "abc"');
    }));

    it('TooLargeResourceVersion for get, list and waitUntilFresh at an RV never reached, after waiting', opts, withBackend(make, undefined, async ({ storage }) => {
      await storage.create('ns/a', llama('ns/a'));
      const future = String(storage.resourceVersion + 1000);
      const started = Date.now();
      const list = storage.list({ prefix: 'ns/', resourceVersion: future, resourceVersionMatch: '', continue: '', limit: 0, predicate: {} });
      const exact = storage.list({ prefix: 'ns/', resourceVersion: future, resourceVersionMatch: 'Exact', continue: '', limit: 0, predicate: {} });
      await Promise.all([
        rejectsWithCode(storage.get('ns/a', future), 'TooLargeResourceVersion'),
        rejectsWithCode(list, 'TooLargeResourceVersion'),
        rejectsWithCode(exact, 'TooLargeResourceVersion'),
        assert.rejects(storage.waitUntilFresh(future), (e: unknown) => {
          assert.ok(isStorageError(e, 'TooLargeResourceVersion'), String(e));
          assert.equal(e.detail.requested, future, 'the client\'s digits, for the Status message');
          return true;
        }),
      ]);
      assert.ok(Date.now() - started >= 500, 'the reads waited for the resourceVersion before giving up');
    }));

    it('waitUntilFresh resolves at once for "" and reached RVs, and when a write reaches a future one', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a'));
      await within(storage.waitUntilFresh(''), 100, 'waitUntilFresh("")');
      await within(storage.waitUntilFresh(String(e.rv)), 100, 'waitUntilFresh(current)');
      await within(storage.waitUntilFresh('1'), 100, 'waitUntilFresh(old)');
      const waiting = storage.waitUntilFresh(String(e.rv + 2));
      await storage.create('ns/b', llama('ns/b'));
      await storage.create('ns/c', llama('ns/c'));
      await within(waiting, EVENT_WAIT_MS, 'waitUntilFresh(future) after writes');
    }));
  });

  describe('guaranteedUpdate', () => {
    it('stores what the try-update returns at a new resourceVersion and hands back its result', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a'));
      const seen: (Entry | undefined)[] = [];
      const r = await storage.guaranteedUpdate('ns/a', async (cur) => {
        seen.push(cur);
        return { object: withLabels(cur!.object, { v: '2' }), result: 'ok' as const };
      });
      assert.deepEqual(seen, [e], 'the try-update saw the stored state once');
      assert.equal(r.result, 'ok');
      assert.equal(r.created, false);
      assert.ok(r.entry.rv > e.rv);
      assert.equal(r.entry.object.metadata.resourceVersion, String(r.entry.rv));
      assert.deepEqual(r.entry.object.metadata.labels, { v: '2' });
      assert.deepEqual(await storage.get('ns/a'), r.entry);
      assert.equal(storage.resourceVersion, r.entry.rv);
    }));

    it('an update that changes nothing is not written: same resourceVersion, no event (a stale RV or another key order in it changes nothing)', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'a', namespace: 'ns' }, spec: { weight: 1, height: 2 } });
      const w = await watchFromNow(storage, 'ns/');
      try {
        const same = await storage.guaranteedUpdate('ns/a', async (cur) => ({ object: cur!.object, result: 1 }));
        const reordered = await storage.guaranteedUpdate('ns/a', async () => ({
          object: { spec: { height: 2, weight: 1 }, metadata: { namespace: 'ns', resourceVersion: '1', name: 'a' }, kind: 'Llama', apiVersion: 'farm.example.com/v1alpha' },
          result: 2,
        }));
        for (const r of [same, reordered]) {
          assert.equal(r.entry.rv, e.rv);
          assert.equal(r.entry.object.metadata.resourceVersion, String(e.rv));
          assert.equal(r.created, false);
        }
        assert.equal(reordered.result, 2);
        assert.equal(storage.resourceVersion, e.rv);
        await assertQuiet(w);
      } finally {
        w.close();
      }
    }));

    it('a missing key: the try-update sees undefined and what it returns is created', opts, withBackend(make, undefined, async ({ storage }) => {
      const r = await storage.guaranteedUpdate('ns/new', async (cur) => {
        assert.equal(cur, undefined);
        return { object: llama('ns/new'), result: 'made' };
      });
      assert.equal(r.created, true);
      assert.equal(r.result, 'made');
      assert.deepEqual(await storage.get('ns/new'), r.entry);
      await rejectsWithCode(storage.create('ns/new', llama('ns/new')), 'KeyExists');
    }));

    it('an error from the try-update propagates and nothing is written', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a'));
      const w = await watchFromNow(storage, 'ns/');
      try {
        await rejectsWithCode(storage.guaranteedUpdate('ns/missing', async (cur) => {
          if (!cur) throw storageErrors.notFound('ns/missing');
          return { object: cur.object, result: 0 };
        }), 'KeyNotFound');
        await assert.rejects(storage.guaranteedUpdate('ns/a', async () => { throw new Error('refused by the registry'); }), /refused by the registry/);
        assert.equal(await storage.get('ns/missing'), undefined);
        assert.deepEqual(await storage.get('ns/a'), e);
        assert.equal(storage.resourceVersion, e.rv);
        await assertQuiet(w);
      } finally {
        w.close();
      }
    }));

    it('two racing updates: the loser\'s try-update runs again on the winner\'s state, so no update is lost', opts, withBackend(make, undefined, async ({ storage }) => {
      await storage.create('ns/a', counted(llama('ns/a'), 0));
      const entered = gate();
      const release = gate();
      let calls = 0;
      const slow = storage.guaranteedUpdate('ns/a', async (cur) => {
        calls++;
        const n = count(cur);
        if (calls === 1) { entered.open(); await release.wait; }
        return { object: counted(cur!.object, n + 1), result: `attempt ${calls}` };
      });
      await within(entered.wait, EVENT_WAIT_MS, 'the first try-update');
      const fast = await storage.guaranteedUpdate('ns/a', async (cur) => ({ object: counted(cur!.object, count(cur) + 1), result: 'fast' }));
      assert.equal(count(fast.entry), 1);
      release.open();
      const r = await within(slow, EVENT_WAIT_MS, 'the slow update');
      assert.equal(calls, 2, 'the try-update ran again after the race was lost');
      assert.equal(r.result, 'attempt 2', 'the committed attempt\'s result comes back');
      assert.equal(count(r.entry), 2, 'both increments are stored');
      assert.ok(r.entry.rv > fast.entry.rv);
      assert.equal(count(await storage.get('ns/a')), 2);
    }));

    it('an object deleted while the try-update awaits: it runs again and sees the key missing', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a'));
      const entered = gate();
      const release = gate();
      const seen: (Entry | undefined)[] = [];
      const update = storage.guaranteedUpdate('ns/a', async (cur) => {
        seen.push(cur);
        if (seen.length === 1) { entered.open(); await release.wait; }
        if (!cur) throw storageErrors.notFound('ns/a');
        return { object: withLabels(cur.object, { late: 'yes' }), result: 0 };
      });
      await within(entered.wait, EVENT_WAIT_MS, 'the try-update');
      await storage.delete('ns/a');
      release.open();
      await rejectsWithCode(within(update, EVENT_WAIT_MS, 'the update'), 'KeyNotFound');
      assert.deepEqual(seen, [e, undefined]);
      assert.equal(await storage.get('ns/a'), undefined, 'the stale attempt did not resurrect it');
    }));

    it('Conflict when the object changes under every attempt; the try-update\'s object is never stored', opts, withBackend(make, undefined, async ({ storage }) => {
      await storage.create('ns/a', counted(llama('ns/a'), 0));
      const maxInterference = 50;
      let attempts = 0;
      const outer = storage.guaranteedUpdate('ns/a', async (cur) => {
        attempts++;
        // Another writer commits while this attempt is in flight.
        if (attempts <= maxInterference) await storage.guaranteedUpdate('ns/a', async (c) => ({ object: counted(c!.object, count(c) + 1), result: 0 }));
        return { object: withLabels(cur!.object, { outer: 'won' }), result: attempts };
      });
      await rejectsWithCode(within(outer, 5_000, 'the contended update'), 'Conflict');
      assert.ok(attempts >= 2 && attempts <= maxInterference, `gave up after ${attempts} attempts`);
      const stored = await storage.get('ns/a');
      assert.equal(stored?.object.metadata.labels, undefined);
      assert.equal(count(stored), attempts, 'every interfering write is stored');
    }));

    it('TooLarge for an object past the size bound; allowGrowthPastLimit lets an update finish; an object over it may shrink', opts, withBackend(make, undefined, async ({ storage }) => {
      const big = 'x'.repeat(MAX_OBJECT_BYTES);
      await rejectsWithCode(storage.create('ns/huge', llama('ns/huge', { spec: { weight: 1, favoriteFood: big } })), 'TooLarge');
      assert.equal(await storage.get('ns/huge'), undefined);
      const e = await storage.create('ns/a', llama('ns/a'));
      const grow = (extra: string, allowGrowthPastLimit?: boolean) => storage.guaranteedUpdate('ns/a',
        async (cur) => ({ object: withSpec(cur!.object, { weight: 1, favoriteFood: extra }), result: 0 }), { allowGrowthPastLimit });
      await rejectsWithCode(grow(big), 'TooLarge');
      assert.deepEqual(await storage.get('ns/a'), e, 'nothing written');
      const grown = await grow(big, true);
      assert.ok(grown.entry.rv > e.rv);
      await rejectsWithCode(grow(`${big}more`), 'TooLarge');
      const shrunk = await grow('hay');
      assert.ok(shrunk.entry.rv > grown.entry.rv);
      assert.equal((shrunk.entry.object.spec as { favoriteFood: string }).favoriteFood, 'hay');
    }));
  });

  describe('delete', () => {
    it('answers the last state stamped with the deletion\'s resourceVersion; the key is gone; KeyNotFound when missing', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a', { labels: { app: 'farm' } }));
      const d = await storage.delete('ns/a');
      assert.ok(d.rv > e.rv);
      assert.equal(d.key, 'ns/a');
      assert.equal(d.object.metadata.resourceVersion, String(d.rv));
      assert.deepEqual(d.object.metadata.labels, { app: 'farm' });
      assert.deepEqual(d.object.spec, e.object.spec);
      assert.equal(storage.resourceVersion, d.rv);
      assert.equal(await storage.get('ns/a'), undefined);
      await rejectsWithCode(storage.delete('ns/a'), 'KeyNotFound');
      assert.equal(storage.resourceVersion, d.rv, 'a failed delete writes nothing');
    }));

    it('preconditions: a uid or resourceVersion that does not hold is InvalidObj and deletes nothing; matching ones delete', opts, withBackend(make, undefined, async ({ storage }) => {
      const e = await storage.create('ns/a', llama('ns/a', { uid: 'uid-a' }));
      const w = await watchFromNow(storage, 'ns/');
      try {
        await rejectsWithCode(storage.delete('ns/a', { uid: 'uid-b' }), 'InvalidObj');
        await rejectsWithCode(storage.delete('ns/a', { resourceVersion: String(e.rv - 1) }), 'InvalidObj');
        await rejectsWithCode(storage.delete('ns/a', { uid: 'uid-a', resourceVersion: String(e.rv + 1) }), 'InvalidObj');
        assert.deepEqual(await storage.get('ns/a'), e);
        await assertQuiet(w);
        const d = await storage.delete('ns/a', { uid: 'uid-a', resourceVersion: String(e.rv) });
        assert.equal(d.object.metadata.uid, 'uid-a');
        assert.deepEqual((await takeItems(w, 1)).map(describeItem), [`DELETED ns/a@${d.rv}`]);
      } finally {
        w.close();
      }
    }));
  });

  it('resourceVersions strictly increase across keys and kinds of write; the reader follows the last write', opts, withBackend(make, undefined, async ({ storage }) => {
    const rvs: number[] = [storage.resourceVersion];
    for (let i = 0; i < 5; i++) {
      rvs.push((await storage.create(`ns${i % 2}/o${i}`, llama(`ns${i % 2}/o${i}`))).rv);
      rvs.push((await storage.guaranteedUpdate(`ns${i % 2}/o${i}`, async (c) => ({ object: counted(c!.object, i + 1), result: 0 }))).entry.rv);
      if (i % 2) rvs.push((await storage.delete(`ns1/o${i}`)).rv);
      assert.equal(storage.resourceVersion, rvs[rvs.length - 1]);
    }
    for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i] > rvs[i - 1], `rv ${i}: ${rvs[i]} > ${rvs[i - 1]}`);
  }));
}
