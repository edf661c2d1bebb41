// DeleteCollection over any backend: it deletes exactly what a list with the same options returns and
// answers that list (store.go DeleteCollection lists with the request's ListOptions: one page when a
// limit is set, every page otherwise). The options are generated, so every list option it accepts is
// checked to mean what it means for a list: limit, continue (real, older, garbage), label and field
// selectors (valid and not), resourceVersion and its match, with and without dry run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { ListOptions } from '../../src/apimachinery/options.js';
import { ApiError } from '../../src/apimachinery/status.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { llamaDescriptor } from '../../src/registry/farm/llama.js';
import { Store } from '../../src/registry/generic/store.js';
import type { ListResult } from '../../src/storage/interfaces.js';
import { withBackend, type MakeStorage } from './harness.js';

interface Member { name: string; app?: 'x' | 'y'; finalizer: boolean }
type Ref = 'none' | 'current' | 'older' | 'garbage';
interface Generated {
  limit: number;
  continueFrom: Ref;
  /** The limit of the list whose continue token is used. */
  tokenPage: number;
  labelSelector: string;
  fieldSelector: string;
  resourceVersion: Ref | '0';
  resourceVersionMatch: '' | 'Exact' | 'NotOlderThan';
}

const NAMES = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
const population = fc.uniqueArray(fc.record({
  name: fc.constantFrom(...NAMES), app: fc.option(fc.constantFrom('x' as const, 'y' as const), { nil: undefined }), finalizer: fc.boolean(),
}), { selector: (m) => m.name, maxLength: NAMES.length });
const generated: fc.Arbitrary<Generated> = fc.record({
  limit: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
  continueFrom: fc.constantFrom<Ref>('none', 'none', 'current', 'older', 'garbage'),
  tokenPage: fc.integer({ min: 1, max: 3 }),
  labelSelector: fc.constantFrom('', 'app=x', 'app!=x', '!app', 'app in (x,y)', 'app notin (y)', 'app==', 'a b'),
  fieldSelector: fc.constantFrom('', 'metadata.name=b', 'metadata.name!=a', 'metadata.namespace!=x', 'spec.bogus=1'),
  resourceVersion: fc.constantFrom<Ref | '0'>('none', 'none', '0', 'current', 'older', 'garbage'),
  resourceVersionMatch: fc.constantFrom<'' | 'Exact' | 'NotOlderThan'>('', '', 'Exact', 'NotOlderThan'),
});

const SELECT_ALL: ListOptions = {
  labelSelector: '', fieldSelector: '', watch: false, allowWatchBookmarks: false, resourceVersion: '', resourceVersionMatch: '', limit: 0, continue: '',
};

type Outcome = { error: string } | { names: string[]; resourceVersion: number; continue?: string; remainingItemCount?: number };

async function outcome(f: () => Promise<ListResult>): Promise<Outcome> {
  try {
    const l = await f();
    return { names: l.items.map((e) => e.key), resourceVersion: l.resourceVersion, continue: l.continue, remainingItemCount: l.remainingItemCount };
  } catch (e) {
    if (e instanceof ApiError) return { error: `${e.code} ${e.reason} ${e.message}` };
    throw e;
  }
}

const member = (ns: string, m: Member): KubeObject => ({
  apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
  metadata: { name: m.name, namespace: ns, ...(m.app ? { labels: { app: m.app } } : {}), ...(m.finalizer ? { finalizers: ['farm.example.com/keep'] } : {}) },
  spec: { weight: 1, height: 1 },
});

export function deleteCollectionContract(name: string, make: MakeStorage): void {
  describe(`deleteCollection over ${name}`, () => {
    it('deletes exactly what a list with the same options returns, and answers that list (generated options)', { timeout: 180_000 }, withBackend(make, undefined, async ({ storage }) => {
      const store = new Store(llamaDescriptor(), storage, { garbageCollection: false, now: () => new Date('2024-05-06T07:08:09Z') });
      const write = { dryRun: false, fieldValidation: 'Warn' as const };
      let run = 0;
      await fc.assert(fc.asyncProperty(population, generated, fc.boolean(), async (members, g, dryRun) => {
        const ctx = { namespace: `dc-${++run}` };
        let olderRV = storage.resourceVersion;
        let olderToken = 'garbage';
        for (const [i, m] of members.entries()) {
          await store.create(ctx, { object: member(ctx.namespace, m), findings: [] }, write);
          // Half-way: an older resourceVersion, and a continue token taken there.
          if (i === Math.floor(members.length / 2)) {
            olderRV = storage.resourceVersion;
            olderToken = (await store.list(ctx, { ...SELECT_ALL, limit: g.tokenPage })).continue ?? olderToken;
          }
        }
        const currentToken = (await store.list(ctx, { ...SELECT_ALL, limit: g.tokenPage })).continue ?? 'garbage';
        const rvs = { none: '', '0': '0', current: String(storage.resourceVersion), older: String(olderRV), garbage: 'abc' };
        const tokens = { none: '', current: currentToken, older: olderToken, garbage: 'garbage' };
        const opts: ListOptions = {
          ...SELECT_ALL, limit: g.limit, continue: tokens[g.continueFrom], labelSelector: g.labelSelector, fieldSelector: g.fieldSelector,
          resourceVersion: rvs[g.resourceVersion], resourceVersionMatch: g.resourceVersionMatch,
        };
        const before = (await store.list(ctx, SELECT_ALL)).items;
        const listed = await outcome(() => store.list(ctx, opts));
        const answered = await outcome(() => store.deleteCollection(ctx, {}, dryRun, opts));
        assert.deepEqual(answered, listed, 'deleteCollection answers what the list answers');
        const gone = new Set('names' in listed && !dryRun ? listed.names : []);
        const after = new Map((await store.list(ctx, SELECT_ALL)).items.map((e) => [e.key, e]));
        for (const e of before) {
          const now = after.get(e.key);
          if (!gone.has(e.key)) assert.equal(now?.rv, e.rv, `${e.key} was not listed: unchanged`);
          else if (e.object.metadata.finalizers?.length) assert.ok(now?.object.metadata.deletionTimestamp, `${e.key}: kept by its finalizer, marked`);
          else assert.equal(now, undefined, `${e.key} was listed: deleted`);
        }
      }), { seed: 20261129, numRuns: 120, endOnFailure: true, includeErrorInReport: true });
    }));
  });
}
