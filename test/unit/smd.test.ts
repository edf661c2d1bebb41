// The structured-merge-diff port: field sets and their fieldsV1 form, the typed walks (compare, merge,
// remove) and the apply/update bookkeeping, as properties over generated Llama-shaped objects plus the
// exact tries kube-apiserver writes for the same requests.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import '../../src/registry/farm/llama.js';
import { kindSchemaName } from '../../src/apimachinery/schema/registry.js';
import { FieldManager } from '../../src/apimachinery/managedfields/fieldManager.js';
import { FieldSet } from '../../src/apimachinery/smd/fieldSet.js';
import { deserializeElement, serializeElement, type PathElement } from '../../src/apimachinery/smd/pathElement.js';
import { atomOfRegistered } from '../../src/apimachinery/smd/schema.js';
import { compare, isSame, merge, toFieldSet } from '../../src/apimachinery/smd/typed.js';
import type { Json } from '../../src/apimachinery/smd/value.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { ApiError } from '../../src/apimachinery/status.js';

const atom = atomOfRegistered(kindSchemaName({ group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' }));
const API = 'farm.example.com/v1alpha';
const NOW = new Date('2026-11-23T10:00:00Z');
const manager = (sub: '' | 'status' = '') => new FieldManager({ atom, group: 'farm.example.com', version: 'v1alpha', kind: 'Llama', subresource: sub,
  resetFields: sub ? [[{ field: 'spec' }]] : [[{ field: 'status' }]], now: () => NOW });

const element: fc.Arbitrary<PathElement> = fc.oneof(
  fc.string({ maxLength: 6 }).map((field) => ({ field })),
  fc.string({ maxLength: 6 }).map((uid) => ({ key: [['uid', uid]] as const })),
  fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.boolean()).map((value) => ({ value })),
  fc.nat(20).map((index) => ({ index })),
);
const fieldSet = fc.array(fc.array(element, { minLength: 1, maxLength: 4 }), { maxLength: 12 }).map((paths) => FieldSet.of(...paths));

const names = fc.constantFrom('a', 'b', 'c', 'app', 'tier');
const obj = fc.record({
  labels: fc.option(fc.dictionary(names, fc.constantFrom('x', 'y')), { nil: undefined }),
  finalizers: fc.option(fc.uniqueArray(fc.constantFrom('x/a', 'x/b', 'y/c')), { nil: undefined }),
  ownerReferences: fc.option(fc.uniqueArray(fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('ConfigMap'), name: names, uid: fc.constantFrom('u1', 'u2', 'u3') }), { selector: (o) => o.uid }), { nil: undefined }),
  spec: fc.record({ weight: fc.integer({ min: 1, max: 9 }), height: fc.integer({ min: 1, max: 3 }), color: fc.constantFrom('white', 'brown'), favoriteFood: fc.constantFrom('hay', 'oats') }, { requiredKeys: [] }),
}, { requiredKeys: ['spec'] }).map(({ spec, ...meta }) => {
  const metadata: Record<string, unknown> = { name: 'dolly', namespace: 'farm' };
  for (const [k, v] of Object.entries(meta)) if (v !== undefined) metadata[k] = v;
  return { apiVersion: API, kind: 'Llama', metadata, spec } as unknown as KubeObject;
});

describe('field sets', () => {
  it('fieldsV1 round-trips any set', () => {
    fc.assert(fc.property(fieldSet, (s) => FieldSet.fromFieldsV1(s.toFieldsV1()).equals(s)));
  });

  it('set algebra: union/difference/intersection agree with membership', () => {
    fc.assert(fc.property(fieldSet, fieldSet, (a, b) => {
      const u = a.union(b);
      const d = a.difference(b);
      const i = a.intersection(b);
      for (const p of u.paths()) assert.equal(a.has(p) || b.has(p), true);
      for (const p of d.paths()) assert.equal(a.has(p) && !b.has(p), true);
      for (const p of i.paths()) assert.equal(a.has(p) && b.has(p), true);
      for (const p of a.paths()) assert.equal(d.has(p) !== b.has(p), true);
      return u.equals(b.union(a)) && i.equals(b.intersection(a));
    }));
  });

  it('path elements serialize as upstream writes them and parse back', () => {
    assert.equal(serializeElement({ key: [['port', 80], ['name', 'x']] }), 'k:{"port":80,"name":"x"}');
    assert.equal(serializeElement(deserializeElement('k:{"port":80,"name":"x"}')!), 'k:{"name":"x","port":80}');
    assert.equal(serializeElement({ value: 'a<b' }), 'v:"a\\u003cb"');
    assert.equal(deserializeElement('z:whatever'), undefined);
    assert.throws(() => deserializeElement('f'), /key must be 2 characters long/);
  });
});

describe('typed walks', () => {
  it('an object compared with itself is the same; merged into itself, unchanged', () => {
    fc.assert(fc.property(obj, (o) => {
      const v = o as unknown as Json;
      return isSame(compare(v, v, atom)) && JSON.stringify(merge(v, v, atom)) !== undefined
        && toFieldSet(merge(v, v, atom)!, atom).equals(toFieldSet(v, atom));
    }));
  });

  it('compare: added, removed and modified partition the change', () => {
    fc.assert(fc.property(obj, obj, (a, b) => {
      const c = compare(a as unknown as Json, b as unknown as Json, atom);
      const sa = toFieldSet(a as unknown as Json, atom);
      const sb = toFieldSet(b as unknown as Json, atom);
      for (const p of c.added.paths()) if (sa.has(p)) return false;
      for (const p of c.removed.paths()) if (sb.has(p)) return false;
      return c.modified.intersection(c.added).empty() && c.modified.intersection(c.removed).empty();
    }));
  });
});

describe('managed fields', () => {
  it('a create records kube-apiserver\'s trie: "." on maps and sets it created, list items by key or value', async () => {
    const created = await manager().update(undefined, { apiVersion: API, kind: 'Llama',
      metadata: { name: 'dolly', namespace: 'farm', uid: 'x', labels: { app: 'farm' }, finalizers: ['example.com/f'], ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: 'u1' }] },
      spec: { weight: 1, height: 2 } }, 'kubectl-create');
    assert.deepEqual(created.metadata.managedFields, [{
      manager: 'kubectl-create', operation: 'Update', apiVersion: API, time: '2026-11-23T10:00:00Z', fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': {
          'f:finalizers': { '.': {}, 'v:"example.com/f"': {} },
          'f:labels': { '.': {}, 'f:app': {} },
          'f:ownerReferences': { '.': {}, 'k:{"uid":"u1"}': {} },
        },
        'f:spec': { '.': {}, 'f:height': {}, 'f:weight': {} },
      },
    }]);
  });

  it('applying the same configuration twice: the second apply changes nothing', async () => {
    await fc.assert(fc.asyncProperty(obj, obj, fc.constantFrom('alpha', 'beta'), async (live, cfg, who) => {
      const fm = manager();
      const start = await fm.update(undefined, { ...live, metadata: { ...live.metadata } }, 'creator');
      const stored = { ...start, metadata: { ...start.metadata, uid: 'u' } };
      const once = await fm.apply(stored, cfg, who, true);
      const twice = await fm.apply(once, cfg, who, false);
      assert.deepEqual(twice, once);
    }), { numRuns: 200 });
  });

  it('an applier that drops a field it alone owned removes it; one another manager owns stays', async () => {
    const fm = manager();
    const base = { apiVersion: API, kind: 'Llama', metadata: { name: 'dolly', namespace: 'farm', uid: 'u' } };
    let o = await fm.apply({ ...base, metadata: { ...base.metadata } } as KubeObject, { ...base, metadata: { name: 'dolly' }, spec: { weight: 1, height: 2, color: 'brown' } }, 'alpha', false);
    o = await fm.apply(o, { ...base, metadata: { name: 'dolly' }, spec: { weight: 1, favoriteFood: 'hay' } }, 'beta', false);
    o = await fm.apply(o, { ...base, metadata: { name: 'dolly' }, spec: { height: 2 } }, 'alpha', false);
    assert.deepEqual(o.spec, { weight: 1, favoriteFood: 'hay', height: 2 });
  });

  it('a conflict is a 409 with upstream\'s message and FieldManagerConflict causes; force takes the field', async () => {
    const fm = manager();
    const base = { apiVersion: API, kind: 'Llama', metadata: { name: 'dolly' } };
    const created = await fm.update(undefined, { ...base, metadata: { name: 'dolly', namespace: 'farm' }, spec: { weight: 1, height: 2, color: 'white' } } as KubeObject, 'kubectl-edit');
    const live = { ...created, metadata: { ...created.metadata, uid: 'u' } };
    const err = await fm.apply(live, { ...base, spec: { color: 'brown', weight: 2 } }, 'alpha', false).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.deepEqual(err.toStatus(), {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Conflict', code: 409,
      message: 'Apply failed with 2 conflicts: conflicts with "kubectl-edit" using farm.example.com/v1alpha:\n- .spec.color\n- .spec.weight',
      details: { causes: [
        { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-edit" using farm.example.com/v1alpha', field: '.spec.color' },
        { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-edit" using farm.example.com/v1alpha', field: '.spec.weight' },
      ] },
    });
    const forced = await fm.apply(live, { ...base, spec: { color: 'brown', weight: 2 } }, 'alpha', true);
    assert.deepEqual(forced.metadata.managedFields?.map((e) => [e.manager, e.operation, e.fieldsV1]), [
      ['alpha', 'Apply', { 'f:spec': { 'f:color': {}, 'f:weight': {} } }],
      ['kubectl-edit', 'Update', { 'f:spec': { '.': {}, 'f:height': {} } }],
    ]);
  });

  it('past 10 update managers the oldest merge into ancient-changes', async () => {
    const fm = new FieldManager({ atom, group: 'farm.example.com', version: 'v1alpha', kind: 'Llama', subresource: '', resetFields: [], now: () => NOW });
    let o = await fm.update(undefined, { apiVersion: API, kind: 'Llama', metadata: { name: 'd', labels: {} }, spec: { weight: 1, height: 1 } } as KubeObject, 'm00');
    o = { ...o, metadata: { ...o.metadata, uid: 'u' } };
    for (let i = 1; i <= 11; i++) {
      o = await fm.update(o, { ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, [`l${i}`]: 'x' } } }, `m${String(i).padStart(2, '0')}`);
    }
    const managers = o.metadata.managedFields!.map((e) => e.manager);
    assert.equal(managers.length, 10);
    assert.ok(managers.includes('ancient-changes'));
    assert.ok(!managers.includes('m00') && !managers.includes('m01') && !managers.includes('m02'));
  });

  it('request managedFields: [{}] resets, a valid list replaces, /status ignores them', async () => {
    const fm = manager();
    const created = await fm.update(undefined, { apiVersion: API, kind: 'Llama', metadata: { name: 'd' }, spec: { weight: 1, height: 1 } } as KubeObject, 'a');
    const live = { ...created, metadata: { ...created.metadata, uid: 'u' } };
    const reset = await fm.update(live, { ...live, metadata: { ...live.metadata, managedFields: [{}] }, spec: { weight: 2, height: 1 } }, 'b');
    // Reset on an existing object: nothing is tracked until its next apply (skipNonApplied).
    assert.equal(reset.metadata.managedFields, undefined);
    const replaced = await fm.update(live, { ...live, metadata: { ...live.metadata, managedFields: [{ manager: 'z', operation: 'Update', apiVersion: API, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:height': {} } } }] }, spec: { weight: 2, height: 1 } }, 'b');
    assert.deepEqual(replaced.metadata.managedFields?.map((e) => [e.manager, e.fieldsV1]), [['z', { 'f:spec': { 'f:height': {} } }], ['b', { 'f:spec': { 'f:weight': {} } }]]);
    const status = await manager('status').update(live, { ...live, metadata: { ...live.metadata, managedFields: [{}] }, status: { observedGeneration: 1 } }, 'c');
    assert.deepEqual(status.metadata.managedFields?.map((e) => [e.manager, e.subresource]), [['a', undefined], ['c', 'status']]);
  });
});
