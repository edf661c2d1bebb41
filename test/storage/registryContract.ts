// The generic registry Store (store.go's Create/Update/Delete with rest/create.go, update.go, delete.go)
// over any backend the storage contract accepts, with the Llama descriptor. What the HTTP tests
// (test/integration/llama-rest.test.ts) assert through a server is asserted here at the registry,
// worded as kube-apiserver words it, so a new backend gets the same write semantics checked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeleteOptions } from '../../src/apimachinery/options.js';
import type { KubeObject, ObjectMeta } from '../../src/apimachinery/types.js';
import { llamaDescriptor } from '../../src/registry/farm/llama.js';
import { Store } from '../../src/registry/generic/store.js';
import type { Strategy } from '../../src/registry/generic/strategy.js';
import type { Decoded, UpdateOptions } from '../../src/registry/rest.js';
import type { Storage } from '../../src/storage/interfaces.js';
import {
  assertQuiet, CASE_TIMEOUT_MS, describeItem, rejectsWithApiError, takeItems, withBackend, type Backend, type MakeStorage,
} from './harness.js';

const opts = { timeout: CASE_TIMEOUT_MS };
const NS = 'default';
const ctx = { namespace: NS };
const NOW = new Date('2024-05-06T07:08:09.123Z');
const CONFLICT = 'the object has been modified; please apply your changes to the latest version and try again';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const write = { dryRun: false, fieldValidation: 'Warn' as const };
const put: UpdateOptions = { ...write, patch: false };
const patch: UpdateOptions = { ...write, patch: true };

function llamaObj(name: string, spec: Record<string, unknown> = { weight: 120, height: 1.7 }, metadata: ObjectMeta = {}): KubeObject {
  return { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, namespace: NS, ...metadata }, spec };
}

const decoded = (object: KubeObject, findings: string[] = []): Decoded => ({ object, findings });

/** objInfo of a PUT: the caller's object whatever the current one is. */
const replaceWith = (object: KubeObject) => async () => decoded(object);
/** objInfo of a patch: the current object changed by `f`. */
const patchWith = (f: (cur: KubeObject) => KubeObject) => async (cur: KubeObject) => decoded(f(cur));

const withMeta = (o: KubeObject, m: ObjectMeta): KubeObject => ({ ...o, metadata: { ...o.metadata, ...m } });
const specOf = (o: KubeObject) => o.spec as Record<string, unknown>;

interface Fixture extends Backend { store: Store; strategy: Strategy }

function withStore(make: MakeStorage, strategy: Partial<Strategy>, body: (f: Fixture) => Promise<void>) {
  return withBackend(make, undefined, async (b) => {
    const s: Strategy = { garbageCollection: false, now: () => NOW, ...strategy };
    await body({ ...b, store: new Store(llamaDescriptor(), b.storage, s), strategy: s });
  });
}

const watchNamespace = (s: Storage) => s.watch({ prefix: `${NS}/`, fromRV: s.resourceVersion, predicate: {}, capacity: 100 });

async function create(store: Store, object: KubeObject) {
  return (await store.create(ctx, decoded(object), write)).entry;
}

const del = (store: Store, name: string, o: DeleteOptions = {}, dryRun = false) => store.delete(ctx, name, o, dryRun);

export function registryContract(name: string, make: MakeStorage): void {
  describe(`generic registry Store over ${name}`, () => {
    createCases(make);
    updateCases(make);
    deleteCases(make);
    dryRunCases(make);
  });
}

function createCases(make: MakeStorage): void {
  describe('create', () => {
    it('stores the prepared object: new uid, the strategy\'s clock, generation 1, defaults; client-sent server fields ignored', opts, withStore(make, {}, async ({ store, storage }) => {
      const before = storage.resourceVersion;
      const forged = { uid: 'forged', resourceVersion: '999', generation: 9, creationTimestamp: '2001-02-03T04:05:06Z', deletionTimestamp: '2001-02-03T04:05:06Z' };
      const { entry, warnings } = await store.create(ctx, decoded(llamaObj('dolly', undefined, forged)), write);
      const m = entry.object.metadata;
      assert.match(m.uid!, UUID);
      assert.equal(m.creationTimestamp, '2024-05-06T07:08:09Z');
      assert.equal(m.generation, 1);
      assert.equal(m.deletionTimestamp, undefined);
      assert.ok(entry.rv > before);
      assert.equal(m.resourceVersion, String(entry.rv));
      assert.deepEqual(entry.object.spec, { weight: 120, height: 1.7, color: 'white', shorn: false });
      assert.deepEqual(warnings, []);
      assert.deepEqual(await store.get(ctx, 'dolly', ''), entry);
    }));

    it('AlreadyExists for a taken name, worded as upstream; nothing written', opts, withStore(make, {}, async ({ store, storage }) => {
      await create(store, llamaObj('dolly'));
      const rv = storage.resourceVersion;
      const e = await rejectsWithApiError(store.create(ctx, decoded(llamaObj('dolly')), write), 409, 'llamas.farm.example.com "dolly" already exists');
      assert.equal(e.reason, 'AlreadyExists');
      assert.deepEqual(e.details, { name: 'dolly', group: 'farm.example.com', kind: 'llamas' });
      assert.equal(storage.resourceVersion, rv);
    }));

    it('generateName: a taken generated name is drawn again, 8 attempts in all, then AlreadyExists', opts, async (t) => {
      const drawn: string[] = [];
      let script: string[] = [];
      const generateName = (prefix: string) => { const n = script[drawn.length] ?? `${prefix}taken`; drawn.push(n); return n; };
      await withStore(make, { generateName }, async ({ store, storage }) => {
        await create(store, llamaObj('cria-taken'));
        const rv = storage.resourceVersion;
        const generated = llamaObj('', undefined, { generateName: 'cria-' });
        await rejectsWithApiError(store.create(ctx, decoded(generated), write), 409, 'llamas.farm.example.com "cria-taken" already exists');
        assert.equal(drawn.length, 8, 'maxNameGenerationCreateAttempts');
        assert.equal(storage.resourceVersion, rv);
        drawn.length = 0;
        script = ['cria-taken', 'cria-taken', 'cria-fresh'];
        const { entry } = await store.create(ctx, decoded(generated), write);
        assert.equal(entry.object.metadata.name, 'cria-fresh');
        assert.equal(entry.object.metadata.generateName, 'cria-');
        assert.deepEqual(drawn, script);
        drawn.length = 0;
        await rejectsWithApiError(store.create(ctx, decoded(llamaObj('cria-taken')), write), 409);
        assert.equal(drawn.length, 0, 'a name the client chose is not drawn again');
      })(t);
    });

    it('warnings come back as values: findings under Warn, none under Ignore, 400 under Strict (nothing stored)', opts, withStore(make, {}, async ({ store, storage }) => {
      const withUnknown = (name: string) => llamaObj(name, { weight: 1, height: 1, foo: 'bar' });
      const warn = await store.create(ctx, decoded(withUnknown('warned'), ['duplicate field "spec.weight"']), write);
      assert.deepEqual(warn.warnings, ['duplicate field "spec.weight"', 'unknown field "spec.foo"']);
      assert.equal(specOf(warn.entry.object).foo, undefined, 'the unknown field is dropped');
      const ignore = await store.create(ctx, decoded(withUnknown('ignored'), ['duplicate field "spec.weight"']), { ...write, fieldValidation: 'Ignore' });
      assert.deepEqual(ignore.warnings, []);
      const rv = storage.resourceVersion;
      await rejectsWithApiError(store.create(ctx, decoded(withUnknown('strict')), { ...write, fieldValidation: 'Strict' }), 400,
        'Llama in version "v1alpha" cannot be handled as a Llama: strict decoding error: unknown field "spec.foo"');
      assert.equal(storage.resourceVersion, rv);
    }));
  });
}

function updateCases(make: MakeStorage): void {
  describe('update', () => {
    it('NotFound for a missing object: no create on update, with or without resourceVersion', opts, withStore(make, {}, async ({ store, storage }) => {
      await rejectsWithApiError(store.update(ctx, 'ghost', replaceWith(llamaObj('ghost')), put), 404, 'llamas.farm.example.com "ghost" not found');
      await rejectsWithApiError(store.update(ctx, 'ghost', replaceWith(llamaObj('ghost', undefined, { resourceVersion: '5' })), put), 404);
      await rejectsWithApiError(store.update(ctx, 'ghost', patchWith((c) => c), patch), 404);
      assert.equal(await storage.get(`${NS}/ghost`), undefined);
    }));

    it('Invalid without resourceVersion on a PUT (a patch needs none); Conflict for a stale one; nothing stored', opts, withStore(make, {}, async ({ store, storage }) => {
      const cur = await create(store, llamaObj('putter'));
      const { resourceVersion: _, ...noRV } = cur.object.metadata;
      const heavier = (m: ObjectMeta) => ({ ...cur.object, metadata: m, spec: { ...specOf(cur.object), weight: 1 } });
      const invalid = await rejectsWithApiError(store.update(ctx, 'putter', replaceWith(heavier(noRV)), put), 422,
        'llamas.farm.example.com "putter" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
      assert.deepEqual(invalid.details, {
        name: 'putter', group: 'farm.example.com', kind: 'llamas',
        causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' }],
      });
      const stale = { ...noRV, resourceVersion: String(cur.rv - 1) };
      const conflict = await rejectsWithApiError(store.update(ctx, 'putter', replaceWith(heavier(stale)), put), 409,
        `Operation cannot be fulfilled on llamas.farm.example.com "putter": ${CONFLICT}`);
      assert.deepEqual(conflict.details, { name: 'putter', group: 'farm.example.com', kind: 'llamas' });
      assert.deepEqual(await storage.get(`${NS}/putter`), cur);
      const patched = await store.update(ctx, 'putter', replaceWith(heavier(noRV)), patch);
      assert.equal(specOf(patched.entry.object).weight, 1);
    }));

    it('an update that changes nothing keeps the resourceVersion and emits nothing', opts, withStore(make, {}, async ({ store, storage }) => {
      const cur = await create(store, llamaObj('same'));
      const w = await watchNamespace(storage);
      try {
        const r = await store.update(ctx, 'same', replaceWith(cur.object), put);
        assert.equal(r.entry.rv, cur.rv);
        assert.equal(r.entry.object.metadata.resourceVersion, cur.object.metadata.resourceVersion);
        assert.equal(storage.resourceVersion, cur.rv);
        await assertQuiet(w);
      } finally {
        w.close();
      }
    }));

    it('generation moves with the spec only; uid and creationTimestamp stay whatever the client sends', opts, withStore(make, {}, async ({ store }) => {
      const cur = await create(store, llamaObj('gen'));
      const labelled = await store.update(ctx, 'gen', replaceWith(withMeta(cur.object, { labels: { shorn: 'soon' }, generation: 42, creationTimestamp: '2001-01-01T00:00:00Z' })), put);
      const m = labelled.entry.object.metadata;
      assert.equal(m.generation, 1, 'a label is not the spec');
      assert.equal(m.creationTimestamp, cur.object.metadata.creationTimestamp);
      assert.ok(labelled.entry.rv > cur.rv);
      const black = await store.update(ctx, 'gen', replaceWith({ ...labelled.entry.object, spec: { ...specOf(cur.object), color: 'black' } }), put);
      assert.equal(black.entry.object.metadata.generation, 2);
      assert.equal(black.entry.object.metadata.uid, cur.object.metadata.uid);
    }));

    it('removing the last finalizer of an object being deleted deletes it', opts, withStore(make, {}, async ({ store, storage }) => {
      await create(store, llamaObj('keeper', undefined, { finalizers: ['farm.example.com/shear'] }));
      const w = await watchNamespace(storage);
      try {
        const marked = await del(store, 'keeper');
        assert.equal(marked.deleted, false);
        const r = await store.update(ctx, 'keeper', patchWith((c) => withMeta(c, { finalizers: [] })), patch);
        // deleteWithoutFinalizers answers with the object the update asked for (at the last stored RV).
        assert.equal(r.entry.object.metadata.name, 'keeper');
        assert.deepEqual(r.entry.object.metadata.finalizers ?? [], []);
        assert.equal(r.entry.rv, marked.entry.rv);
        await rejectsWithApiError(store.get(ctx, 'keeper', ''), 404);
        const events = (await takeItems(w, 2)).map(describeItem);
        assert.equal(events[0], `MODIFIED ${NS}/keeper@${marked.entry.rv}`);
        assert.match(events[1], new RegExp(`^DELETED ${NS}/keeper@\\d+$`));
      } finally {
        w.close();
      }
    }));

    it('a patch removing the last finalizer still deletes when another write lands while it runs (only the request\'s preconditions)', opts, withStore(make, {}, async ({ store, storage }) => {
      await create(store, llamaObj('racer', undefined, { finalizers: ['farm.example.com/keep'] }));
      assert.equal((await del(store, 'racer')).deleted, false);
      let calls = 0;
      const r = await store.update(ctx, 'racer', async (current) => {
        calls++;
        // A labels write commits while the finalizer-removing patch is in flight (once).
        if (calls === 1) await storage.guaranteedUpdate(`${NS}/racer`, async (c) => ({ object: withMeta(c!.object, { labels: { round: '1' } }), result: 0 }));
        return decoded(withMeta(current, { finalizers: [] }), [`finding ${calls}`]);
      }, patch);
      await rejectsWithApiError(store.get(ctx, 'racer', ''), 404);
      assert.deepEqual(r.warnings, [`finding ${calls}`], 'the deciding attempt\'s warnings come back too');
    }));

    it('an objInfo runs again when a concurrent write lands during it; only the committed attempt\'s warnings return', opts, withStore(make, {}, async ({ store, storage }) => {
      const cur = await create(store, llamaObj('raced'));
      let calls = 0;
      const r = await store.update(ctx, 'raced', async (current) => {
        calls++;
        // Another writer commits while this attempt is in flight.
        if (calls === 1) await storage.guaranteedUpdate(`${NS}/raced`, async (c) => ({ object: withMeta(c!.object, { labels: { by: 'other' } }), result: 0 }));
        return decoded({ ...current, spec: { ...specOf(current), weight: 99 } }, [`attempt ${calls}`]);
      }, patch);
      assert.equal(calls, 2);
      assert.deepEqual(r.warnings, ['attempt 2']);
      assert.deepEqual(r.entry.object.metadata.labels, { by: 'other' }, 'the re-run saw the other write');
      assert.equal(specOf(r.entry.object).weight, 99);
      assert.equal(r.entry.object.metadata.generation, 2);
      assert.ok(r.entry.rv > cur.rv + 1);
    }));
  });
}

function deleteCases(make: MakeStorage): void {
  describe('delete', () => {
    it('answers the deleted object; NotFound for a missing one', opts, withStore(make, {}, async ({ store }) => {
      const o = await create(store, llamaObj('goner'));
      const r = await del(store, 'goner');
      assert.equal(r.deleted, true);
      assert.equal(r.entry.object.metadata.uid, o.object.metadata.uid);
      await rejectsWithApiError(store.get(ctx, 'goner', ''), 404);
      await rejectsWithApiError(del(store, 'goner'), 404, 'llamas.farm.example.com "goner" not found');
    }));

    it('preconditions that do not hold are a Conflict worded as upstream (naming the Kind); matching ones delete', opts, withStore(make, {}, async ({ store, storage }) => {
      const o = await create(store, llamaObj('pre'));
      const { uid, resourceVersion } = o.object.metadata;
      const uidErr = await rejectsWithApiError(del(store, 'pre', { preconditions: { uid: 'not-the-uid' } }), 409,
        `Operation cannot be fulfilled on Llama.farm.example.com "pre": the UID in the precondition (not-the-uid) does not match the UID in record (${uid}). The object might have been deleted and then recreated`);
      assert.deepEqual(uidErr.details, { name: 'pre', group: 'farm.example.com', kind: 'Llama' });
      await rejectsWithApiError(del(store, 'pre', { preconditions: { resourceVersion: '1' } }), 409,
        `Operation cannot be fulfilled on Llama.farm.example.com "pre": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${resourceVersion}). The object might have been modified`);
      assert.equal(storage.resourceVersion, o.rv);
      assert.equal((await del(store, 'pre', { preconditions: { uid, resourceVersion } })).deleted, true);
    }));

    it('finalizers keep it: deletionTimestamp, grace 0 and a generation bump, deleted: false; a second delete changes nothing', opts, withStore(make, {}, async ({ store, storage }) => {
      const o = await create(store, llamaObj('keeper', undefined, { finalizers: ['farm.example.com/shear'] }));
      const r1 = await del(store, 'keeper', { propagationPolicy: 'Background' });
      assert.equal(r1.deleted, false);
      const m = r1.entry.object.metadata;
      assert.equal(m.deletionTimestamp, '2024-05-06T07:08:09Z');
      assert.equal(m.deletionGracePeriodSeconds, 0);
      assert.deepEqual(m.finalizers, ['farm.example.com/shear']);
      assert.equal(m.generation, 2, 'markAsDeleting bumps generation with the first deletionTimestamp');
      assert.ok(r1.entry.rv > o.rv);
      const r2 = await del(store, 'keeper');
      assert.equal(r2.deleted, false);
      assert.deepEqual(r2.entry, r1.entry);
      assert.equal(storage.resourceVersion, r1.entry.rv);
    }));

    it('with garbage collection: Orphan adds "orphan", Foreground "foregroundDeletion" (kept); Background deletes at once', opts, withStore(make, { garbageCollection: true }, async ({ store }) => {
      for (const [n, policy, finalizer] of [['o', 'Orphan', 'orphan'], ['f', 'Foreground', 'foregroundDeletion']] as const) {
        await create(store, llamaObj(n));
        const r = await del(store, n, { propagationPolicy: policy });
        assert.equal(r.deleted, false, policy);
        assert.deepEqual(r.entry.object.metadata.finalizers, [finalizer]);
        assert.ok(r.entry.object.metadata.deletionTimestamp);
      }
      await create(store, llamaObj('legacy'));
      assert.deepEqual((await del(store, 'legacy', { orphanDependents: true })).entry.object.metadata.finalizers, ['orphan']);
      await create(store, llamaObj('b'));
      assert.equal((await del(store, 'b', { propagationPolicy: 'Background' })).deleted, true);
    }));

    it('without garbage collection the GC finalizers are never added: Orphan deletes at once', opts, withStore(make, { garbageCollection: false }, async ({ store }) => {
      await create(store, llamaObj('o'));
      assert.equal((await del(store, 'o', { propagationPolicy: 'Orphan' })).deleted, true);
    }));

    it('with garbage collection, orphanDependents: false removes the GC finalizers, so the object goes at once', opts, withStore(make, { garbageCollection: true }, async ({ store }) => {
      for (const finalizer of ['orphan', 'foregroundDeletion']) {
        const name = `gc-${finalizer.toLowerCase()}`;
        await create(store, llamaObj(name, undefined, { finalizers: [finalizer] }));
        const r = await del(store, name, { orphanDependents: false });
        assert.equal(r.deleted, true, `${finalizer}: ${JSON.stringify(r.entry.object.metadata.finalizers)}`);
      }
    }));
  });
}

function dryRunCases(make: MakeStorage): void {
  describe('dry run', () => {
    it('answers create, update and delete as if done; stores nothing, emits nothing; a dry-run create has no resourceVersion', opts, withStore(make, {}, async ({ store, storage }) => {
      const base = await create(store, llamaObj('dry', undefined, { finalizers: ['farm.example.com/shear'] }));
      const dry = { ...write, dryRun: true };
      const w = await watchNamespace(storage);
      try {
        const c = await store.create(ctx, decoded(llamaObj('dry-new')), dry);
        assert.equal(c.entry.object.metadata.resourceVersion, undefined, 'nothing was stored, so there is no resourceVersion');
        assert.match(c.entry.object.metadata.uid!, UUID);
        assert.equal(c.entry.object.metadata.generation, 1);
        await rejectsWithApiError(store.create(ctx, decoded(llamaObj('dry')), dry), 409, 'llamas.farm.example.com "dry" already exists');
        const u = await store.update(ctx, 'dry', replaceWith({ ...base.object, spec: { ...specOf(base.object), color: 'black' } }), { ...put, dryRun: true });
        assert.equal(specOf(u.entry.object).color, 'black');
        assert.equal(u.entry.object.metadata.generation, 2);
        assert.equal(u.entry.object.metadata.resourceVersion, base.object.metadata.resourceVersion);
        const marked = await del(store, 'dry', {}, true);
        assert.equal(marked.deleted, false);
        assert.ok(marked.entry.object.metadata.deletionTimestamp);
        assert.equal(storage.resourceVersion, base.rv);
        assert.deepEqual(await storage.get(`${NS}/dry`), base);
        assert.equal(await storage.get(`${NS}/dry-new`), undefined);
        await assertQuiet(w);
        const marker = await create(store, llamaObj('marker'));
        assert.deepEqual((await takeItems(w, 1)).map(describeItem), [`ADDED ${NS}/marker@${marker.rv}`], 'the first event is the real write');
      } finally {
        w.close();
      }
    }));
  });
}
