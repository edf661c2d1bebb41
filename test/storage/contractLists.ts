// Contract cases for lists (upstream store_tests.go: RunTestList, RunTestListContinuation(+WithFilter),
// RunTestListInconsistentContinuation, RunTestNamespaceScopedList, RunTestListResourceVersionMatch).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { TOO_OLD_CONTINUE } from '../../src/storage/continueToken.js';
import type { Entry, ListOptions, ListResult, Storage } from '../../src/storage/interfaces.js';
import { CASE_TIMEOUT_MS, keysOf, llama, rejectsWithApiError, rejectsWithCode, withBackend, withLabels, type MakeStorage } from './harness.js';

const opts = { timeout: CASE_TIMEOUT_MS };

export const listOpts = (o: Partial<ListOptions> & { prefix: string }): ListOptions =>
  ({ resourceVersion: '', resourceVersionMatch: '', continue: '', limit: 0, predicate: {}, ...o });

/** Every page of a list (bounded), each checked against the limit and the first page's resourceVersion. */
export async function allPages(storage: Storage, first: ListOptions): Promise<{ pages: ListResult[]; items: Entry[] }> {
  const pages: ListResult[] = [];
  let next: ListOptions = first;
  for (let i = 0; i < 100; i++) {
    const page = await storage.list(next);
    pages.push(page);
    if (first.limit > 0) assert.ok(page.items.length <= first.limit, `page ${i} holds ${page.items.length} > limit ${first.limit}`);
    assert.equal(page.resourceVersion, pages[0].resourceVersion, 'every page is read at the first page\'s resourceVersion');
    if (!page.continue) return { pages, items: pages.flatMap((p) => p.items) };
    next = { ...first, resourceVersion: '', resourceVersionMatch: '', continue: page.continue };
  }
  throw new Error('more than 100 pages');
}

const farm = (o: KubeObject) => o.metadata.labels?.app === 'farm';

async function createAll(storage: Storage, keys: string[], labelsOf: (i: number) => Record<string, string> = () => ({})): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const [i, k] of keys.entries()) out.push(await storage.create(k, llama(k, { labels: labelsOf(i) })));
  return out;
}

export function listCases(make: MakeStorage): void {
  describe('list', () => {
    it('a prefix lists only its keys, in key order ("a/" is not "ab/"); "" lists every key', opts, withBackend(make, undefined, async ({ storage }) => {
      await createAll(storage, ['b/z', 'a/y', 'ab/x', 'a/a', 'b/a']);
      const a = await storage.list(listOpts({ prefix: 'a/' }));
      assert.deepEqual(keysOf(a.items), ['a/a', 'a/y']);
      assert.equal(a.resourceVersion, storage.resourceVersion);
      assert.equal(a.continue, undefined);
      assert.deepEqual(keysOf((await storage.list(listOpts({ prefix: 'ab/' }))).items), ['ab/x']);
      assert.deepEqual(keysOf((await storage.list(listOpts({ prefix: '' }))).items), ['a/a', 'a/y', 'ab/x', 'b/a', 'b/z']);
      assert.deepEqual((await storage.list(listOpts({ prefix: 'nothing/' }))).items, []);
    }));

    it('limit + continue: every key once, all pages at the first page\'s resourceVersion even with writes between pages', opts, withBackend(make, undefined, async ({ storage }) => {
      const original = await createAll(storage, ['ns/o0', 'ns/o1', 'ns/o2', 'ns/o3', 'ns/o4', 'ns/o5', 'ns/o6']);
      const p1 = await storage.list(listOpts({ prefix: 'ns/', limit: 3 }));
      assert.deepEqual(p1.items, original.slice(0, 3));
      assert.equal(p1.remainingItemCount, 4);
      assert.ok(p1.continue);
      await storage.guaranteedUpdate('ns/o4', async (c) => ({ object: withLabels(c!.object, { changed: 'yes' }), result: 0 }));
      await storage.delete('ns/o5');
      await storage.create('ns/o3a', llama('ns/o3a'));
      await storage.create('other/x', llama('other/x'));
      const p2 = await storage.list(listOpts({ prefix: 'ns/', limit: 3, continue: p1.continue }));
      assert.deepEqual(p2.items, original.slice(3, 6), 'the snapshot of the first page: o4 unchanged, o5 still there, no o3a');
      assert.equal(p2.resourceVersion, p1.resourceVersion);
      assert.equal(p2.remainingItemCount, 1);
      const p3 = await storage.list(listOpts({ prefix: 'ns/', limit: 3, continue: p2.continue! }));
      assert.deepEqual(p3.items, original.slice(6));
      assert.equal(p3.continue, undefined);
      assert.equal(p3.remainingItemCount, undefined);
      // A continue token with resourceVersion "0" is read as the token says (upstream ignores the 0).
      const again = await storage.list(listOpts({ prefix: 'ns/', limit: 3, resourceVersion: '0', continue: p1.continue }));
      assert.deepEqual(again.items, original.slice(3, 6));
      assert.deepEqual(keysOf((await storage.list(listOpts({ prefix: 'ns/' }))).items), ['ns/o0', 'ns/o1', 'ns/o2', 'ns/o3', 'ns/o3a', 'ns/o4', 'ns/o6']);
    }));

    it('a predicate filters before the limit: pages of matches only, no remainingItemCount, together exactly the matches', opts, withBackend(make, undefined, async ({ storage }) => {
      const keys = Array.from({ length: 10 }, (_, i) => `ns/o${i}`);
      const entries = await createAll(storage, keys, (i) => ({ app: i % 3 === 0 ? 'farm' : 'zoo' }));
      const matching = entries.filter((e) => farm(e.object));
      for (const limit of [1, 2, 3, 4, 100]) {
        const { pages, items } = await allPages(storage, listOpts({ prefix: 'ns/', limit, predicate: { matches: farm } }));
        assert.deepEqual(items, matching, `limit ${limit}`);
        for (const p of pages) assert.equal(p.remainingItemCount, undefined, 'etcd cannot count what a predicate keeps');
        if (limit >= matching.length + 1) assert.equal(pages.length, 1, `limit ${limit}: one page`);
      }
      const rare = await storage.list(listOpts({ prefix: 'ns/', limit: 2, predicate: { matches: (o) => o.metadata.name === 'o7' } }));
      assert.deepEqual(keysOf(rare.items), ['ns/o7'], 'a rare match is found past many non-matching keys');
    }));

    it('onlyKey narrows the list to one key (when it matches)', opts, withBackend(make, undefined, async ({ storage }) => {
      await createAll(storage, ['ns/a', 'ns/b', 'ns/c'], (i) => ({ app: i === 1 ? 'farm' : 'zoo' }));
      const named = (name: string) => (o: KubeObject) => o.metadata.name === name;
      assert.deepEqual(keysOf((await storage.list(listOpts({ prefix: 'ns/', predicate: { onlyKey: 'ns/b', matches: named('b') } }))).items), ['ns/b']);
      assert.deepEqual((await storage.list(listOpts({ prefix: 'ns/', predicate: { onlyKey: 'ns/zz', matches: named('zz') } }))).items, []);
      const both = (o: KubeObject) => named('a')(o) && farm(o);
      assert.deepEqual((await storage.list(listOpts({ prefix: 'ns/', predicate: { onlyKey: 'ns/a', matches: both } }))).items, []);
    }));

    it('Exact lists the state as of an older resourceVersion (paged too); NotOlderThan and "" list the current state', opts, withBackend(make, undefined, async ({ storage }) => {
      const before = await createAll(storage, ['ns/a', 'ns/b', 'ns/c']);
      const rv0 = storage.resourceVersion;
      const a1 = await storage.guaranteedUpdate('ns/a', async (c) => ({ object: withLabels(c!.object, { v: '1' }), result: 0 }));
      await storage.delete('ns/b');
      const d = await storage.create('ns/d', llama('ns/d'));
      const c = before[2];
      const exact = await storage.list(listOpts({ prefix: 'ns/', resourceVersion: String(rv0), resourceVersionMatch: 'Exact' }));
      assert.deepEqual(exact.items, before);
      assert.equal(exact.resourceVersion, rv0);
      const paged = await allPages(storage, listOpts({ prefix: 'ns/', resourceVersion: String(rv0), resourceVersionMatch: 'Exact', limit: 2 }));
      assert.deepEqual(paged.items, before);
      assert.equal(paged.pages[0].resourceVersion, rv0);
      const beforeA = await storage.list(listOpts({ prefix: 'ns/', resourceVersion: String(before[0].rv), resourceVersionMatch: 'Exact' }));
      assert.deepEqual(beforeA.items, [before[0]], 'as of the first write');
      const now = [a1.entry, c, d];
      assert.deepEqual((await storage.list(listOpts({ prefix: 'ns/', resourceVersion: String(rv0), resourceVersionMatch: 'NotOlderThan' }))).items, now);
      assert.deepEqual((await storage.list(listOpts({ prefix: 'ns/', resourceVersion: String(rv0) }))).items, now, 'an RV without Exact is "not older than"');
      // ValidateListOptions' legacy case: an RV above 0 with a limit (a reflector's relist) is read exactly there.
      const legacy = await allPages(storage, listOpts({ prefix: 'ns/', resourceVersion: String(rv0), limit: 2 }));
      assert.deepEqual(legacy.items, before, 'an RV with a limit is Exact');
      assert.equal(legacy.pages[0].resourceVersion, rv0);
      assert.deepEqual((await storage.list(listOpts({ prefix: 'ns/', resourceVersion: '0', limit: 2 }))).items, now.slice(0, 2), '"0" with a limit is any');
      const latest = await storage.list(listOpts({ prefix: 'ns/' }));
      assert.deepEqual(latest.items, now);
      assert.equal(latest.resourceVersion, d.rv);
    }));

    it('after compaction, Exact at an older resourceVersion and a continue token from before it are TooOld', opts, withBackend(make, { historyLimit: 4 }, async ({ storage, compact }) => {
      await createAll(storage, ['ns/a', 'ns/b', 'ns/c']);
      const rvOld = (await storage.create('ns/d', llama('ns/d'))).rv - 1;
      const p1 = await storage.list(listOpts({ prefix: 'ns/', limit: 1 }));
      assert.ok(p1.continue);
      await storage.guaranteedUpdate('ns/a', async (c) => ({ object: withLabels(c!.object, { v: '1' }), result: 0 }));
      await compact();
      await rejectsWithCode(storage.list(listOpts({ prefix: 'ns/', resourceVersion: String(rvOld), resourceVersionMatch: 'Exact' })), 'TooOld');
      const expired = await rejectsWithCode(storage.list(listOpts({ prefix: 'ns/', limit: 1, continue: p1.continue })), 'TooOld');
      assert.deepEqual(keysOf((await storage.list(listOpts({ prefix: 'ns/' }))).items), ['ns/a', 'ns/b', 'ns/c', 'ns/d'], 'the current state still lists');
      // The 410 hands out a token for the rest at the latest state (store.go handleCompactedErrorForPaging): after the same key, pages at one revision.
      assert.equal(expired.message, TOO_OLD_CONTINUE);
      const latest = expired.detail.continue;
      assert.ok(latest, 'a continue token in the expired error');
      await storage.create('ns/e', llama('ns/e'));
      const rest = await allPages(storage, listOpts({ prefix: 'ns/', limit: 2, continue: latest }));
      assert.deepEqual(keysOf(rest.items), ['ns/b', 'ns/c', 'ns/d', 'ns/e'], 'everything after the expired page\'s key, written before or after the 410');
      assert.equal(rest.pages[0].resourceVersion, storage.resourceVersion);
    }));

    it('400 for continue with a resourceVersion, for a token that is not one, and for one outside the prefix', opts, withBackend(make, undefined, async ({ storage }) => {
      await createAll(storage, ['ns/a', 'ns/b', 'other/a', 'other/b']);
      const p1 = await storage.list(listOpts({ prefix: 'ns/', limit: 1 }));
      await rejectsWithApiError(storage.list(listOpts({ prefix: 'ns/', continue: p1.continue!, resourceVersion: String(p1.resourceVersion) })), 400,
        'specifying resource version is not allowed when using continue');
      await rejectsWithApiError(storage.list(listOpts({ prefix: 'ns/', continue: 'not-a-token' })), 400, /^invalid continue token: continue key is not valid: /);
      await rejectsWithApiError(storage.list(listOpts({ prefix: 'other/', continue: p1.continue! })), 400, /^invalid continue token: continue key is not valid: ns\/a\u0000$/);
      // The token is decoded before the resourceVersion beside it is looked at (ValidateListOptions).
      await rejectsWithApiError(storage.list(listOpts({ prefix: 'ns/', continue: 'not-a-token', resourceVersion: '5' })), 400, /^invalid continue token: /);
      // A forged revision no int64 (or no exact JS number) is: malformed, not a revision to wait for or ask etcd about.
      for (const rv of [1.5, 1e300, 2 ** 53 + 2, 0, '7']) {
        const forged = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: 'ns/a\u0000' })).toString('base64url');
        await rejectsWithApiError(storage.list(listOpts({ prefix: 'ns/', continue: forged })), 400, /^invalid continue token: continue key is not valid: /);
      }
    }));
  });
}
