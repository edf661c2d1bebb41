// The contract as a property: random creates/updates/deletes against a model map. At every resourceVersion
// the sequence went through, an Exact list (whole, and paged) is the model's state then, and a watch from
// it replays exactly the model's later changes (translated by a predicate too).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { storageErrors } from '../../src/storage/errors.js';
import type { ChangeType, Entry, Storage } from '../../src/storage/interfaces.js';
import { allPages, listOpts } from './contractLists.js';
import { assertQuiet, CASE_TIMEOUT_MS, describeItem, llama, rejectsWithCode, takeItems, withLabels, type MakeStorage } from './harness.js';

interface Op { kind: 'create' | 'update' | 'delete'; key: string; v: 'x' | 'y' }
interface ModelChange { type: ChangeType; entry: Entry; prev?: Entry }
interface Snapshot { rv: number; state: Map<string, Entry> }

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('create' as const, 'update' as const, 'delete' as const),
  // "mn/" beside "m/": a prefix must not match a longer namespace.
  key: fc.constantFrom('m/a', 'm/b', 'm/c', 'mn/a'),
  v: fc.constantFrom('x' as const, 'y' as const),
});

const labelV = (o: KubeObject | undefined) => o?.metadata.labels?.v;
const isX = (o: KubeObject) => labelV(o) === 'x';
const sortedEntries = (m: Map<string, Entry>, prefix: string) =>
  [...m.values()].filter((e) => e.key.startsWith(prefix)).sort((a, b) => (a.key < b.key ? -1 : 1));

/** Applies one op to the storage and the model; the storage must agree with the model on its outcome. */
async function apply(storage: Storage, state: Map<string, Entry>, op: Op): Promise<ModelChange | undefined> {
  const cur = state.get(op.key);
  if (op.kind === 'create') {
    if (cur) return void await rejectsWithCode(storage.create(op.key, llama(op.key)), 'KeyExists');
    const entry = await storage.create(op.key, llama(op.key, { labels: { v: op.v } }));
    return { type: 'ADDED', entry };
  }
  if (op.kind === 'delete') {
    if (!cur) return void await rejectsWithCode(storage.delete(op.key), 'KeyNotFound');
    return { type: 'DELETED', entry: await storage.delete(op.key), prev: cur };
  }
  const update = storage.guaranteedUpdate(op.key, async (c) => {
    if (!c) throw storageErrors.notFound(op.key);
    return { object: withLabels(c.object, { v: op.v }), result: 0 };
  });
  if (!cur) return void await rejectsWithCode(update, 'KeyNotFound');
  const { entry } = await update;
  if (labelV(cur.object) === op.v) {
    assert.equal(entry.rv, cur.rv, 'a no-op update keeps the resourceVersion');
    return undefined;
  }
  return { type: 'MODIFIED', entry, prev: cur };
}

/** What a watch with the isX predicate reports for a change (cacheWatcher.convertToWatchEvent). */
function translated(c: ModelChange): string | undefined {
  const now = c.type !== 'DELETED' && isX(c.entry.object);
  const before = c.prev !== undefined && isX(c.prev.object);
  const at = `${c.entry.key}@${c.entry.rv}`;
  if (now && before) return `MODIFIED ${at}`;
  if (now) return `ADDED ${at}`;
  return before ? `DELETED ${at}` : undefined;
}

async function checkWatch(storage: Storage, from: number, prefix: string, expected: string[], matches?: (o: KubeObject) => boolean): Promise<void> {
  const w = await storage.watch({ prefix, fromRV: from, predicate: { matches }, capacity: 1000 });
  try {
    assert.deepEqual((await takeItems(w, expected.length)).map(describeItem), expected, `watch ${prefix} from ${from}`);
    await assertQuiet(w, 0);
  } finally {
    w.close();
  }
}

export function modelCases(make: MakeStorage): void {
  it('random writes vs a model: Exact lists at every resourceVersion and watches from it replay exactly the model', { timeout: 4 * CASE_TIMEOUT_MS }, async () => {
    await fc.assert(fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 20 }), async (ops) => {
      const backend = await make({ historyLimit: 1000 });
      try {
        const { storage } = backend;
        const state = new Map<string, Entry>();
        const changes: ModelChange[] = [];
        const snapshots: Snapshot[] = [{ rv: storage.resourceVersion, state: new Map() }];
        for (const op of ops) {
          const c = await apply(storage, state, op);
          if (!c) continue;
          assert.ok(c.entry.rv > snapshots[snapshots.length - 1].rv, 'resourceVersions increase');
          if (c.type === 'DELETED') state.delete(c.entry.key); else state.set(c.entry.key, c.entry);
          changes.push(c);
          snapshots.push({ rv: c.entry.rv, state: new Map(state) });
          assert.equal(storage.resourceVersion, c.entry.rv);
        }
        for (const snap of snapshots) {
          const exact = { resourceVersion: String(snap.rv), resourceVersionMatch: 'Exact' };
          assert.deepEqual((await storage.list(listOpts({ prefix: '', ...exact }))).items, sortedEntries(snap.state, ''), `Exact list at ${snap.rv}`);
          assert.deepEqual((await allPages(storage, listOpts({ prefix: 'm/', limit: 2, ...exact }))).items, sortedEntries(snap.state, 'm/'), `paged Exact list at ${snap.rv}`);
          const later = changes.filter((c) => c.entry.rv > snap.rv);
          await checkWatch(storage, snap.rv, 'm/', later.filter((c) => c.entry.key.startsWith('m/')).map((c) => `${c.type} ${c.entry.key}@${c.entry.rv}`));
          await checkWatch(storage, snap.rv, '', later.map(translated).filter((s) => s !== undefined), isX);
        }
      } finally {
        await backend.close();
      }
    }), { numRuns: 60 });
  });
}
