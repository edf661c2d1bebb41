// The walks of big objects (smd/walk.ts) pause every 2,048 items and sort big nodes as merges of
// sorted chunks; these properties hold the chunked paths to what the small paths give: a stable sort,
// set algebra, the fieldsV1 trie of a create, and an apply repeated changing nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import '../../src/registry/farm/llama.js';
import { kindSchemaName } from '../../src/apimachinery/schema/registry.js';
import { FieldManager } from '../../src/apimachinery/managedfields/fieldManager.js';
import { FieldSet } from '../../src/apimachinery/smd/fieldSet.js';
import { atomOfRegistered } from '../../src/apimachinery/smd/schema.js';
import { runNow, sortWalk } from '../../src/apimachinery/smd/walk.js';
import type { KubeObject } from '../../src/apimachinery/types.js';

const CHUNK = 2048;
const atom = atomOfRegistered(kindSchemaName({ group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' }));
const API = 'farm.example.com/v1alpha';
const manager = () => new FieldManager({ atom, group: 'farm.example.com', version: 'v1alpha', kind: 'Llama', subresource: '',
  resetFields: [[{ field: 'status' }]], now: () => new Date('2026-11-23T10:00:00Z') });

/** Label names: many, distinct, sizes on both sides of one and several chunks. */
const labelNames = fc.integer({ min: CHUNK - 10, max: 3 * CHUNK + 10 }).chain((n) =>
  fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/), { minLength: n, maxLength: n }));

const llama = (labels: Record<string, string>): KubeObject =>
  ({ apiVersion: API, kind: 'Llama', metadata: { name: 'dolly', namespace: 'farm', labels }, spec: { weight: 1, height: 2 } }) as unknown as KubeObject;

describe('walks past one chunk', () => {
  it('sortWalk is a stable sort for any length, across chunk and merge boundaries', () => {
    // The length is drawn first: fc.array alone keeps arrays short, and would never reach a chunk.
    const keyLists = fc.integer({ min: 0, max: 5 * CHUNK }).chain((n) => fc.array(fc.integer({ min: 0, max: 50 }), { minLength: n, maxLength: n }));
    fc.assert(fc.property(keyLists, (keys) => {
      const items = keys.map((key, at) => ({ key, at }));
      const expected = [...items].sort((a, b) => a.key - b.key);
      const sorted = runNow(sortWalk(items, (a, b) => a.key - b.key));
      assert.deepEqual(sorted, expected);
    }), { numRuns: 40 });
  });

  it('big field sets: fieldsV1 round-trips; union, difference and intersection agree with membership', () => {
    fc.assert(fc.property(labelNames, fc.integer({ min: 2, max: 5 }), (names, stride) => {
      const path = (n: string) => [{ field: 'metadata' }, { field: 'labels' }, { field: n }];
      const a = FieldSet.of(...names.filter((_, i) => i % stride !== 0).map(path));
      const b = FieldSet.of(...names.filter((_, i) => i % 2 === 0).map(path));
      assert.ok(FieldSet.fromFieldsV1(a.toFieldsV1()).equals(a));
      const u = a.union(b);
      const d = a.difference(b);
      const x = a.intersection(b);
      for (const [i, n] of names.entries()) {
        const inA = i % stride !== 0;
        const inB = i % 2 === 0;
        assert.equal(u.has(path(n)), inA || inB);
        assert.equal(d.has(path(n)), inA && !inB);
        assert.equal(x.has(path(n)), inA && inB);
      }
      assert.ok(u.equals(b.union(a)));
    }), { numRuns: 6 });
  });

  it('a create of a big object: its trie lists every label in upstream\'s order; applying it twice changes nothing', async () => {
    await fc.assert(fc.asyncProperty(labelNames, async (names) => {
      const labels = Object.fromEntries(names.map((n) => [n, 'x']));
      const fm = manager();
      const created = await fm.update(undefined, llama(labels), 'creator');
      const entry = created.metadata.managedFields?.[0];
      const trie = (entry?.fieldsV1 as { 'f:metadata': { 'f:labels': Record<string, unknown> } })['f:metadata']['f:labels'];
      assert.deepEqual(Object.keys(trie), ['.', ...[...names].sort().map((n) => `f:${n}`)]);
      const stored = { ...created, metadata: { ...created.metadata, uid: 'u' } };
      const once = await fm.apply(stored, llama(labels), 'applier', true);
      assert.deepEqual(await fm.apply(once, llama(labels), 'applier', false), once);
    }), { numRuns: 4 });
  });
});
