// Pod → FarmPod conversion (uid, resourceVersion, summary, owner, llama) and the FarmPodSource
// that keeps FarmPods in step with a Pod list+watch and with Llama edits, driven by a scripted
// upstream (no network).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import type { RequestInfo } from '../../src/endpoints/requestInfo.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { validateObject } from '../../src/registry/validation.js';
import { farmPodDefinition, FarmPodSource, farmPodUid, LLAMA_LABEL, toFarmPod } from '../../src/registry/farm/farmpod.js';
import { ObjectCache } from '../../src/storage/cacher/objectCache.js';
import { parseFarmPodRV } from '../../src/registry/farm/farmPodRV.js';
import type { Entry, ListOptions, WatchItem } from '../../src/storage/interfaces.js';
import type { StorageError } from '../../src/storage/errors.js';
import { makeEntry, objectKey } from '../../src/storage/objects.js';
import type { Upstream } from '../../src/upstream/client.js';

const log = pino({ level: 'silent' });
const NOW = Date.parse('2025-06-01T12:00:00Z');

type Pod = Record<string, unknown> & { metadata: Record<string, unknown> };

function pod(name: string, o: { ns?: string; rv?: string; uid?: string; labels?: Record<string, string>; nodeName?: string; owners?: unknown[]; status?: Record<string, unknown>; deletionTimestamp?: string } = {}): Pod {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: o.ns ?? 'farm', uid: o.uid ?? `uid-${name}`, resourceVersion: o.rv ?? '100',
      creationTimestamp: '2025-06-01T11:00:00Z',
      ...(o.labels ? { labels: o.labels } : {}), ...(o.owners ? { ownerReferences: o.owners } : {}),
      ...(o.deletionTimestamp ? { deletionTimestamp: o.deletionTimestamp } : {}),
      managedFields: [{ manager: 'kubectl' }], annotations: { secret: 'not copied' },
    },
    spec: { nodeName: o.nodeName, containers: [{ name: 'c', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }, { name: 'side', image: 'busybox' }] },
    status: o.status ?? { phase: 'Pending', qosClass: 'BestEffort' },
  };
}

const runningStatus = {
  phase: 'Running', podIP: '10.1.2.3', podIPs: [{ ip: '10.1.2.3' }], qosClass: 'Burstable',
  conditions: [{ type: 'Ready', status: 'True' }],
  containerStatuses: [
    { name: 'c', ready: true, restartCount: 3, state: { running: { startedAt: '2025-06-01T11:50:00Z' } }, lastState: { terminated: { exitCode: 1, finishedAt: '2025-06-01T11:49:50Z' } } },
    { name: 'side', ready: true, restartCount: 1, state: { running: {} } },
  ],
};

function llama(name: string, spec: Record<string, unknown>, ns = 'farm'): KubeObject {
  return { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, namespace: ns, uid: `l-${name}`, resourceVersion: '1' }, spec };
}

describe('farmPodUid', () => {
  it('is a stable UUIDv5-shaped id of its own, different from the Pod\'s and per Pod', () => {
    const podUid = '6b9f0c6e-0d4a-4c8f-9a51-3d1f2a7b8c90';
    const a = farmPodUid(podUid);
    assert.equal(a, farmPodUid(podUid), 'same Pod uid → same FarmPod uid (survives restarts and relists)');
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a, podUid);
    assert.notEqual(a, farmPodUid('6b9f0c6e-0d4a-4c8f-9a51-3d1f2a7b8c91'));
  });
});

describe('toFarmPod', () => {
  const none = () => undefined;

  it('metadata: name/namespace/labels/creationTimestamp copied, uid derived, RV = the Pod\'s; nothing else leaks', () => {
    const p = pod('web-1', { rv: '4711', uid: 'u-1', labels: { app: 'web' } });
    const fp = toFarmPod(p as never, none);
    assert.equal(fp.apiVersion, 'farm.example.com/v1alpha');
    assert.equal(fp.kind, 'FarmPod');
    assert.deepEqual(fp.metadata, {
      name: 'web-1', namespace: 'farm', uid: farmPodUid('u-1'), resourceVersion: '4711',
      creationTimestamp: '2025-06-01T11:00:00Z', labels: { app: 'web' },
    });
    assert.notEqual(fp.metadata.uid, 'u-1');
    assert.equal(JSON.stringify(fp).includes('not copied'), false, 'annotations are not copied');
    assert.equal(JSON.stringify(fp).includes('managedFields'), false);
  });

  it('spec: nodeName, containers with images only, controlledBy only from the controller owner', () => {
    const owners = [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-the-controller', uid: 'x' },
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b9', uid: 'y', controller: true },
    ];
    const fp = toFarmPod(pod('web-1', { nodeName: 'node-a', owners }) as never, none);
    assert.deepEqual(fp.spec, {
      nodeName: 'node-a',
      containers: [{ name: 'c', image: 'nginx:1.27' }, { name: 'side', image: 'busybox' }],
      controlledBy: { kind: 'ReplicaSet', name: 'web-7d4b9' },
    });
    const orphan = toFarmPod(pod('web-2', { owners: [owners[0]] }) as never, none);
    assert.equal((orphan.spec as Record<string, unknown>).controlledBy, undefined, 'a non-controller owner is not "controlled by"');
  });

  it('status: phase, kubectl summary, restart time, podIP, qosClass', () => {
    const fp = toFarmPod(pod('web-1', { status: runningStatus }) as never, none);
    assert.deepEqual(JSON.parse(JSON.stringify(fp.status)), {
      phase: 'Running', status: 'Running', ready: '2/2', readyContainers: 2, totalContainers: 2,
      restarts: 4, lastRestartTime: '2025-06-01T11:49:50Z', podIP: '10.1.2.3', qosClass: 'Burstable',
    });
  });

  it('deletionTimestamp is kept and the status says Terminating', () => {
    const fp = toFarmPod(pod('web-1', { status: runningStatus, deletionTimestamp: '2025-06-01T11:59:00Z' }) as never, none);
    assert.equal(fp.metadata.deletionTimestamp, '2025-06-01T11:59:00Z');
    assert.equal((fp.status as { status: string }).status, 'Terminating');
  });

  it('llama summary: found with weight/height/color, looked up in the Pod\'s namespace; missing → found=false; no label → none', () => {
    const seen: string[] = [];
    const lookup = (ns: string, name: string) => {
      seen.push(`${ns}/${name}`);
      return ns === 'farm' && name === 'dolly' ? llama('dolly', { weight: 120, height: 1.7, color: 'brown', favoriteFood: 'hay' }) : undefined;
    };
    const found = toFarmPod(pod('a', { labels: { [LLAMA_LABEL]: 'dolly' } }) as never, lookup);
    assert.deepEqual((found.status as Record<string, unknown>).llama, { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'brown' });
    const elsewhere = toFarmPod(pod('b', { ns: 'other', labels: { [LLAMA_LABEL]: 'dolly' } }) as never, lookup);
    assert.deepEqual((elsewhere.status as Record<string, unknown>).llama, { name: 'dolly', found: false }, 'a Llama of another namespace is not this Pod\'s');
    const missing = toFarmPod(pod('c', { labels: { [LLAMA_LABEL]: 'ghost' } }) as never, lookup);
    assert.deepEqual((missing.status as Record<string, unknown>).llama, { name: 'ghost', found: false });
    const unlabelled = toFarmPod(pod('d') as never, lookup);
    assert.equal((unlabelled.status as Record<string, unknown>).llama, undefined);
    assert.deepEqual(seen, ['farm/dolly', 'other/dolly', 'farm/ghost']);
  });

  it('the FarmPod validates against the published FarmPod schema (no unknown fields, no errors)', () => {
    const def = farmPodDefinition({} as FarmPodSource);
    for (const p of [pod('a', { status: runningStatus, labels: { [LLAMA_LABEL]: 'dolly' }, nodeName: 'n', owners: [{ kind: 'ReplicaSet', name: 'rs', controller: true }] }), pod('b')]) {
      const fp = JSON.parse(JSON.stringify(toFarmPod(p as never, () => llama('dolly', { weight: 1, height: 1, color: 'white' }))));
      const r = validateObject(def, fp);
      assert.deepEqual(r.errors, []);
      assert.deepEqual(r.unknownFields, []);
    }
  });
});

describe('farmPodDefinition', () => {
  const def = farmPodDefinition({} as FarmPodSource);
  it('is the read-only farmpods resource, short name fp, category farm', () => {
    assert.equal(def.plural, 'farmpods');
    assert.deepEqual(def.shortNames, ['fp']);
    assert.deepEqual(def.categories, ['farm']);
    assert.equal(def.namespaced, true);
  });
  it('columns: kubectl-like READY/STATUS/RESTARTS, llama cell, and the -o wide ones', () => {
    const owners = [{ kind: 'ReplicaSet', name: 'rs-1', controller: true }];
    const fp = toFarmPod(pod('web-1', { status: runningStatus, nodeName: 'node-a', owners, labels: { [LLAMA_LABEL]: 'dolly' } }) as never,
      () => llama('dolly', { weight: 120, height: 1.7, color: 'brown' }));
    const cells = Object.fromEntries(def.columns.map((c) => [c.name, c.cell(fp, NOW)]));
    assert.deepEqual(cells, {
      Name: 'web-1', Ready: '2/2', Status: 'Running', Restarts: '4 (10m ago)', Llama: 'dolly (brown, 120kg)', Age: '60m',
      IP: '10.1.2.3', Node: 'node-a', QoS: 'Burstable', Owner: 'ReplicaSet/rs-1', Images: 'nginx:1.27,busybox',
    });
    assert.deepEqual(def.columns.filter((c) => c.priority === 1).map((c) => c.name), ['IP', 'Node', 'QoS', 'Owner', 'Images']);
    const bare = toFarmPod(pod('p', { labels: { [LLAMA_LABEL]: 'ghost' } }) as never, () => undefined);
    const bareCells = Object.fromEntries(def.columns.map((c) => [c.name, c.cell(bare, NOW)]));
    assert.deepEqual([bareCells.Llama, bareCells.IP, bareCells.Node, bareCells.QoS, bareCells.Owner, bareCells.Restarts], ['ghost (missing)', '<none>', '<none>', 'BestEffort', '<none>', '0']);
  });
  it('field selectors spec.nodeName and status.phase', () => {
    const fp = toFarmPod(pod('web-1', { status: runningStatus, nodeName: 'node-a' }) as never, () => undefined);
    assert.equal(def.fieldSelectors!['spec.nodeName'](fp), 'node-a');
    assert.equal(def.fieldSelectors!['status.phase'](fp), 'Running');
    const pending = toFarmPod(pod('p') as never, () => undefined);
    assert.equal(def.fieldSelectors!['spec.nodeName'](pending), '');
  });
  it('alsoRequires: the same verb on core pods, same namespace and name, saying why', () => {
    const info: RequestInfo = { isResourceRequest: true, path: '/apis/farm.example.com/v1alpha/namespaces/farm/farmpods/web-1', verb: 'get', apiGroup: 'farm.example.com', apiVersion: 'v1alpha', namespace: 'farm', resource: 'farmpods', subresource: '', name: 'web-1' };
    const extra = def.alsoRequires!(info);
    assert.equal(extra.length, 1);
    assert.deepEqual(extra[0].info, { ...info, apiGroup: '', apiVersion: 'v1', resource: 'pods' });
    assert.match(extra[0].why, /get on farmpods also needs get on pods/);
    assert.equal(def.alsoRequires!({ ...info, verb: 'watch', name: '' })[0].info.verb, 'watch');
  });
});

// ---------- FarmPodSource, with a scripted upstream ----------

interface OpenWatch { path: string; send(type: string, obj: unknown): void; fail(e: Error): void; end(): void }

class FakeUpstream {
  readonly calls: string[] = [];
  /** Answers to the next lists, in order; the last one repeats. */
  lists: { status: number; items?: unknown[]; rv?: string; continue?: string }[] = [];
  readonly watches: OpenWatch[] = [];
  private waiters: (() => void)[] = [];
  /** When set, list requests are held until it resolves (to look at the source mid-relist). */
  listGate?: Promise<void>;
  listsStarted = 0;

  async request(purpose: string, method: string, path: string) {
    this.calls.push(`${purpose} ${method} ${path}`);
    this.listsStarted++;
    if (this.listGate) await this.listGate;
    const l = this.lists.length > 1 ? this.lists.shift()! : this.lists[0];
    const body = l.status === 200 ? { items: l.items ?? [], metadata: { resourceVersion: l.rv ?? '1', ...(l.continue ? { continue: l.continue } : {}) } } : { kind: 'Status', code: l.status };
    return { status: l.status, body, text: JSON.stringify(body) };
  }

  watch(purpose: string, path: string, onEvent: (type: string, obj: Record<string, unknown>) => void, signal: AbortSignal): Promise<void> {
    this.calls.push(`${purpose} WATCH ${path}`);
    return new Promise((resolve, reject) => {
      const w: OpenWatch = { path, send: (t, o) => onEvent(t, o as Record<string, unknown>), fail: reject, end: resolve };
      this.watches.push(w);
      signal.addEventListener('abort', () => resolve(), { once: true });
      for (const f of this.waiters.splice(0)) f();
    });
  }

  async nextWatch(count: number): Promise<OpenWatch> {
    while (this.watches.length < count) await new Promise<void>((r) => this.waiters.push(r));
    return this.watches[count - 1];
  }
}

/** A FarmPod watch from a resourceVersion ("" = from now), as a request opens it. */
async function collect(src: FarmPodSource, fromRV = '', opts: { allowInitial?: boolean } = {}) {
  const items: WatchItem[] = [];
  const rv = parseFarmPodRV(fromRV);
  const w = await src.reader.watchFrom(rv, { prefix: '', initialState: opts.allowInitial === true, predicate: {}, capacity: 100 });
  const ended = (async () => { for (;;) { const i = await w.next(); if (!i) return; items.push(i); } })();
  return {
    items, ended, close: () => w.close(), watcher: w,
    events: () => items.map((i) => ('entry' in i ? `${i.type} ${i.entry.key}` : i.type)),
    /** Events with the resourceVersion each carries (bookmarks too). */
    stamped: () => items.map((i) => ('entry' in i ? `${i.type} ${i.entry.key} ${i.entry.object.metadata.resourceVersion}` : `${i.type} ${i.rv}`)),
  };
}
/** A few turns: the cache offers a change to its watchers in the turn after it, and wakes readers in the next (objectCache.ts). */
const tick = async () => { for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r)); };
const listAll = (o: Partial<ListOptions> = {}): ListOptions => ({ prefix: '', resourceVersion: '', resourceVersionMatch: '', continue: '', limit: 0, predicate: {}, ...o });

describe('FarmPodSource', () => {
  const sources: FarmPodSource[] = [];
  after(() => { for (const s of sources) s.reflector.stop(); });

  function setup(lists: FakeUpstream['lists'], o: { history?: number; llamas?: ObjectCache } = {}) {
    const up = new FakeUpstream();
    up.lists = lists;
    const llamas = o.llamas ?? new ObjectCache(100);
    const src = new FarmPodSource(up as unknown as Upstream, llamas, log, o.history ?? 100);
    sources.push(src);
    let llamaRV = llamas.resourceVersion;
    const putLlama = (l: KubeObject) => {
      const key = objectKey(l.metadata.namespace, l.metadata.name!);
      const prev = llamas.get(key);
      llamas.apply({ type: prev ? 'MODIFIED' : 'ADDED', rv: ++llamaRV, entry: makeEntry(key, l, llamaRV), prev });
    };
    const deleteLlama = (ns: string, name: string) => {
      const key = objectKey(ns, name);
      const prev = llamas.get(key)!;
      llamas.apply({ type: 'DELETED', rv: ++llamaRV, entry: prev, prev });
    };
    return { up, src, llamas, putLlama, deleteLlama };
  }
  const llamaOf = (src: FarmPodSource, key: string) => (src.cache.get(key)?.object.status as Record<string, unknown> | undefined)?.llama;

  it('is unavailable (with the upstream error) until the first list succeeds, then serves the list at its RVs', async () => {
    const { up, src } = setup([{ status: 500 }, { status: 200, rv: '120', items: [pod('a', { rv: '101' }), pod('b', { rv: '115', ns: 'other' })] }]);
    assert.match(src.unavailable()!, /^the FarmPod cache is not synced with kube-apiserver/);
    src.reflector.start();
    await up.nextWatch(1); // the failed list, a backoff, the good list, then the watch
    assert.equal(src.unavailable(), undefined);
    assert.equal(up.calls.length, 3);
    for (const c of up.calls.slice(0, 2)) assert.match(c, /^pods GET \/api\/v1\/pods(\?|$)/);
    assert.match(up.watches[0].path, /^\/api\/v1\/pods\?watch=true&allowWatchBookmarks=true&resourceVersion=120&timeoutSeconds=\d+$/);
    assert.equal(src.reader.currentText, '120.0', 'the list\'s Pod RV, and no Llama change yet');
    // A relist stamps every FarmPod with the position it starts from: a client may resume from any of them.
    assert.deepEqual(src.cache.list().map((e) => [e.key, e.object.metadata.resourceVersion]), [['farm/a', '120.0'], ['other/b', '120.0']]);
  });

  it('lists in pages (limit + continue) and serves the union at the list\'s RV', async () => {
    const { up, src } = setup([
      { status: 200, rv: '1000', items: [pod('a', { rv: '990' })], continue: 'page-2 token' },
      { status: 200, rv: '1000', items: [pod('b', { rv: '995' })] },
    ]);
    src.reflector.start();
    const w = await up.nextWatch(1);
    assert.match(up.calls[0], /^pods GET \/api\/v1\/pods\?limit=\d+$/);
    assert.match(up.calls[1], /^pods GET \/api\/v1\/pods\?limit=\d+&continue=page-2%20token$/);
    assert.deepEqual(src.cache.list().map((e) => e.key), ['farm/a', 'farm/b']);
    assert.equal(src.reader.currentText, '1000.0');
    assert.match(w.path, /resourceVersion=1000&/);
  });

  it('follows watch events: ADDED, MODIFIED, DELETED at the Pod\'s resourceVersions; bookmarks advance the RV', async () => {
    const { up, src } = setup([{ status: 200, rv: '200', items: [pod('a', { rv: '150' })] }]);
    src.reflector.start();
    const w = await up.nextWatch(1);
    const seen = await collect(src, '200.0');
    w.send('ADDED', pod('b', { rv: '201' }));
    w.send('MODIFIED', pod('b', { rv: '202', status: runningStatus }));
    w.send('BOOKMARK', { kind: 'Pod', metadata: { resourceVersion: '205' } });
    w.send('DELETED', pod('a', { rv: '206' }));
    // A MODIFIED for a Pod not seen before (e.g. after a watch restart) is an ADDED for FarmPod watchers.
    w.send('MODIFIED', pod('c', { rv: '207' }));
    // A bookmark last: only it can move the RV past the last event.
    w.send('BOOKMARK', { kind: 'Pod', metadata: { resourceVersion: '210' } });
    await tick();
    assert.deepEqual(seen.events(), ['ADDED farm/b', 'MODIFIED farm/b', 'DELETED farm/a', 'ADDED farm/c']);
    assert.deepEqual(seen.items.map((i) => ('entry' in i ? i.entry.object.metadata.resourceVersion : '')), ['201.0', '202.0', '206.0', '207.0']);
    assert.equal((src.cache.get('farm/b')!.object.status as Record<string, unknown>).status, 'Running');
    assert.equal(src.cache.get('farm/a'), undefined);
    assert.equal(src.reader.currentText, '210.0');
    (await collect(src, '210.0')).close();
    seen.close();
  });

  it('re-enriches FarmPods when their Llama is created, edited, or deleted, at the Llama\'s position; ignores irrelevant edits', async () => {
    const { up, src, putLlama, deleteLlama } = setup([{ status: 200, rv: '300', items: [
      pod('a', { rv: '290', labels: { [LLAMA_LABEL]: 'dolly' } }), pod('b', { rv: '291', labels: { [LLAMA_LABEL]: 'dolly' } }),
      pod('c', { rv: '292', labels: { [LLAMA_LABEL]: 'molly' } }), pod('d', { rv: '293' }),
    ] }]);
    src.reflector.start();
    await up.nextWatch(1);
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: false });
    const seen = await collect(src, '300.0');
    putLlama(llama('dolly', { weight: 120, height: 1.7, color: 'brown' }));
    await tick();
    assert.deepEqual(seen.stamped().sort(), ['MODIFIED farm/a 300.1', 'MODIFIED farm/b 300.1'], 'one step for both, at the Llama\'s resourceVersion');
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'brown' });
    assert.equal(src.cache.get('farm/a')!.object.metadata.resourceVersion, '300.1', 'a Llama edit gives the FarmPod a new resourceVersion');

    putLlama(llama('dolly', { weight: 120, height: 1.7, color: 'black' }));
    await tick();
    assert.equal(seen.events().length, 4);
    assert.equal((llamaOf(src, 'farm/b') as { color: string }).color, 'black');

    putLlama(llama('dolly', { weight: 120, height: 1.7, color: 'black', favoriteFood: 'hay' }));
    putLlama(llama('dolly', { weight: 120, height: 1.7, color: 'black' }, 'elsewhere'));
    await tick();
    assert.equal(seen.events().length, 4, 'an edit the summary does not show, or a same-named Llama elsewhere, changes no FarmPod');

    deleteLlama('farm', 'dolly');
    await tick();
    assert.equal(seen.events().length, 6);
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: false });
    assert.deepEqual(llamaOf(src, 'farm/c'), { name: 'molly', found: false }, 'other llamas\' pods untouched');
    assert.equal(llamaOf(src, 'farm/d'), undefined);
    seen.close();
  });

  it('re-enriches FarmPods when the Llamas are replaced by a relist (an etcd3 replica filling its cache after the Pods synced), in one step', async () => {
    const { up, src, llamas } = setup([{ status: 200, rv: '300', items: [
      pod('a', { rv: '290', labels: { [LLAMA_LABEL]: 'dolly' } }), pod('b', { rv: '291', labels: { [LLAMA_LABEL]: 'molly' } }), pod('c', { rv: '292' }),
    ] }]);
    src.reflector.start();
    await up.nextWatch(1);
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: false });
    const seen = await collect(src, '300.0');
    const dolly = llama('dolly', { weight: 120, height: 1.7, color: 'brown' });
    llamas.reset([makeEntry('farm/dolly', dolly, 50)], 50);
    await tick();
    assert.deepEqual(seen.stamped(), ['MODIFIED farm/a 300.50'], 'only the FarmPod whose summary changed, at the Llamas\' position');
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'brown' });
    assert.deepEqual(llamaOf(src, 'farm/b'), { name: 'molly', found: false });
    llamas.reset([], 60);
    await tick();
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: false }, 'a relist without it: missing again');
    seen.close();
  });

  it('a relabelled Pod follows its new Llama and no longer its old one; a deleted Pod follows none', async () => {
    const { up, src, putLlama } = setup([{ status: 200, rv: '400', items: [pod('a', { rv: '390', labels: { [LLAMA_LABEL]: 'dolly' } })] }]);
    putLlama(llama('dolly', { weight: 100, height: 1.5, color: 'white' }));
    putLlama(llama('molly', { weight: 90, height: 1.4, color: 'grey' }));
    src.reflector.start();
    const w = await up.nextWatch(1);
    assert.equal((llamaOf(src, 'farm/a') as { color: string }).color, 'white');
    w.send('MODIFIED', pod('a', { rv: '401', labels: { [LLAMA_LABEL]: 'molly' } }));
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'molly', found: true, weight: 90, height: 1.4, color: 'grey' });
    const seen = await collect(src, '401.2');
    putLlama(llama('dolly', { weight: 100, height: 1.5, color: 'spotted' }));
    await tick();
    assert.deepEqual(seen.events(), [], 'the old llama no longer affects the pod');
    putLlama(llama('molly', { weight: 91, height: 1.4, color: 'grey' }));
    await tick();
    assert.deepEqual(seen.events(), ['MODIFIED farm/a']);
    assert.equal((llamaOf(src, 'farm/a') as { weight: number }).weight, 91);
    w.send('DELETED', pod('a', { rv: '402', labels: { [LLAMA_LABEL]: 'molly' } }));
    putLlama(llama('molly', { weight: 92, height: 1.4, color: 'grey' }));
    await tick();
    assert.deepEqual(seen.events(), ['MODIFIED farm/a', 'DELETED farm/a'], 'a deleted pod is not resurrected by its llama');
    seen.close();
    // White-box: the llama → pods index forgets llamas no pod names any more (names come and go with pods).
    assert.equal((src as unknown as { byLlama: Map<string, Set<string>> }).byLlama.size, 0);
  });

  it('a failed watch makes it unavailable, then it relists (closing open watchers) and serves the new state', async () => {
    const { up, src } = setup([{ status: 200, rv: '500', items: [pod('a', { rv: '490' })] }, { status: 200, rv: '600', items: [pod('b', { rv: '590' })] }]);
    src.reflector.start();
    const w1 = await up.nextWatch(1);
    const seen = await collect(src, '500.0');
    w1.fail(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
    await tick();
    assert.equal(src.unavailable(), 'the FarmPod cache is not synced with kube-apiserver: connect ECONNREFUSED 127.0.0.1:6443');
    await up.nextWatch(2);
    assert.equal(src.unavailable(), undefined);
    assert.deepEqual(src.cache.list().map((e) => e.key), ['farm/b']);
    assert.equal(src.reader.currentText, '600.0');
    await assert.rejects(collect(src, '500.0'), /too old resource version: 500\.0 \(600\.0\)/);
    await seen.ended; // a relist closes open FarmPod watches, so their clients relist too
    assert.equal(seen.items.length, 0);
  });

  it('a Llama-driven change is not lost by a client that lists, then watches from the list\'s resourceVersion', async () => {
    const { up, src, putLlama } = setup([{ status: 200, rv: '900', items: [pod('a', { rv: '900', labels: { [LLAMA_LABEL]: 'dolly' } })] }]);
    src.reflector.start();
    await up.nextWatch(1);
    const listRV = (await src.reader.list(listAll())).resourceVersionText!;
    assert.equal(listRV, '900.0');
    putLlama(llama('dolly', { weight: 100, height: 1.5, color: 'black' })); // happens between the client's list and its watch
    const seen = await collect(src, listRV);
    await tick();
    assert.deepEqual(seen.stamped(), ['MODIFIED farm/a 900.1']);
    seen.close();
  });

  it('a 410 from the watch relists without ever being unavailable', async () => {
    const { up, src } = setup([{ status: 200, rv: '700', items: [] }, { status: 200, rv: '800', items: [pod('z', { rv: '790' })] }]);
    src.reflector.start();
    const w1 = await up.nextWatch(1);
    let release!: () => void;
    up.listGate = new Promise<void>((r) => { release = r; });
    const listsBefore = up.listsStarted;
    w1.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    w1.end();
    // Mid-relist (the list is held): still serving, no backoff, no error recorded.
    while (up.listsStarted === listsBefore) await tick();
    assert.equal(src.unavailable(), undefined);
    assert.equal(src.reflector.synced, true);
    assert.equal(src.reflector.lastError, undefined);
    release();
    await up.nextWatch(2);
    assert.equal(src.unavailable(), undefined);
    assert.deepEqual(src.cache.list().map((e) => e.key), ['farm/z']);
  });
});

describe('FarmPod resourceVersions ("<pod>.<llama>")', () => {
  const sources: FarmPodSource[] = [];
  after(() => { for (const s of sources) s.reflector.stop(); });
  const labelled = (name: string, rv: string, extra: Record<string, unknown> = {}) => pod(name, { rv, labels: { [LLAMA_LABEL]: 'dolly' }, ...extra });

  /** A source synced from a list at Pod RV `listRV`, its Pod watch, and a Llama writer (`llamas` shared = etcd3-like). */
  async function synced(listRV: string, items: Pod[], o: { history?: number; llamas?: ObjectCache } = {}) {
    const up = new FakeUpstream();
    up.lists = [{ status: 200, rv: listRV, items }];
    const llamas = o.llamas ?? new ObjectCache(1000);
    const src = new FarmPodSource(up as unknown as Upstream, llamas, log, o.history ?? 100);
    sources.push(src);
    const put = (l: KubeObject) => {
      const key = objectKey(l.metadata.namespace, l.metadata.name!);
      const prev = llamas.get(key);
      const rv = llamas.resourceVersion + 1;
      llamas.apply({ type: prev ? 'MODIFIED' : 'ADDED', rv, entry: makeEntry(key, l, rv), prev });
    };
    src.reflector.start();
    const w = await up.nextWatch(1);
    return { src, w, put, llamas, up };
  }
  const dolly = (color: string) => llama('dolly', { weight: 100, height: 1.5, color });
  const errorOf = async (p: Promise<unknown>) => { try { await p; } catch (e) { return e as { code?: number | string; message: string }; } assert.fail('expected an error'); };

  it('list, a Llama edit, a Pod edit, then watch from the list\'s RV: both changes exactly once, in order; resuming from each event\'s RV gives the rest', async () => {
    const { src, w, put } = await synced('1000', [labelled('a', '990')]);
    put(dolly('white'));
    const list = await src.reader.list(listAll());
    assert.equal(list.resourceVersionText, '1000.1');
    put(dolly('black'));
    w.send('MODIFIED', labelled('a', '1001', { nodeName: 'node-1' }));
    put(dolly('brown'));
    const seen = await collect(src, list.resourceVersionText!);
    await tick();
    assert.deepEqual(seen.stamped(), ['MODIFIED farm/a 1000.2', 'MODIFIED farm/a 1001.2', 'MODIFIED farm/a 1001.3']);
    const colors = seen.items.map((i) => 'entry' in i && ((i.entry.object.status as { llama: { color: string } }).llama.color));
    assert.deepEqual(colors, ['black', 'black', 'brown']);
    for (let i = 0; i < seen.items.length; i++) {
      const at = (seen.items[i] as { entry: Entry }).entry.object.metadata.resourceVersion!;
      const resumed = await collect(src, at);
      await tick();
      assert.deepEqual(resumed.stamped(), seen.stamped().slice(i + 1), `resumed from ${at}`);
      resumed.close();
    }
    seen.close();
  });

  it('bookmarks carry the position when asked for; resuming from one sees only what came later', async () => {
    const { src, w, put } = await synced('50', [labelled('a', '40')]);
    const seen = await collect(src, '50.0');
    seen.watcher.requestBookmark();
    w.send('BOOKMARK', { kind: 'Pod', metadata: { resourceVersion: '60' } });
    put(dolly('grey'));
    seen.watcher.requestBookmark();
    await tick();
    assert.deepEqual(seen.stamped(), ['BOOKMARK 50.0', 'MODIFIED farm/a 60.1', 'BOOKMARK 60.1']);
    const fromFirst = await collect(src, '50.0');
    await tick();
    assert.deepEqual(fromFirst.stamped(), ['MODIFIED farm/a 60.1']);
    const fromLast = await collect(src, '60.1');
    w.send('MODIFIED', labelled('a', '61'));
    await tick();
    assert.deepEqual(fromLast.stamped(), ['MODIFIED farm/a 61.1']);
    for (const x of [seen, fromFirst, fromLast]) x.close();
  });

  it('sendInitialEvents: the initial-events-end bookmark is the position of the state sent', async () => {
    const { src, put } = await synced('70', [labelled('a', '65')]);
    put(dolly('white'));
    const seen = await collect(src, '', { allowInitial: true });
    await tick();
    assert.deepEqual(seen.stamped(), ['ADDED farm/a 70.1']);
    seen.close();
    const w = await src.reader.watchFrom(parseFarmPodRV(''), { prefix: '', initialState: true, initialEndMarker: true, predicate: {}, capacity: 10 });
    await w.next();
    assert.deepEqual(await w.next(), { type: 'INITIAL_END', rv: '70.1' });
    w.close();
  });

  it('resourceVersionMatch=Exact lists the state at an earlier position; continue pages stay at the first page\'s position', async () => {
    const { src, w, put } = await synced('100', [labelled('a', '90'), labelled('b', '91'), labelled('c', '92')]);
    put(dolly('white'));
    const before = (await src.reader.list(listAll())).resourceVersionText!;
    const page1 = await src.reader.list(listAll({ limit: 2 }));
    assert.equal(page1.resourceVersionText, '100.1');
    put(dolly('black'));
    w.send('DELETED', labelled('c', '101'));
    const colorOf = (e: Entry) => (e.object.status as { llama: { color: string } }).llama.color;
    const page2 = await src.reader.list(listAll({ continue: page1.continue! }));
    assert.deepEqual(page2.items.map((e) => [e.key, colorOf(e), e.object.metadata.resourceVersion]), [['farm/c', 'white', '100.1']], 'the snapshot of page 1, not the deletion nor the edit');
    assert.equal(page2.resourceVersionText, '100.1');
    const exact = await src.reader.list(listAll({ resourceVersion: before, resourceVersionMatch: 'Exact' }));
    assert.equal(exact.resourceVersionText, before);
    assert.deepEqual(exact.items.map((e) => [e.key, colorOf(e)]), [['farm/a', 'white'], ['farm/b', 'white'], ['farm/c', 'white']]);
    const now = await src.reader.list(listAll({ resourceVersion: before, resourceVersionMatch: 'NotOlderThan' }));
    assert.equal(now.resourceVersionText, '101.2');
    assert.deepEqual(now.items.map((e) => [e.key, colorOf(e)]), [['farm/a', 'black'], ['farm/b', 'black']]);
    const forged = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 'x.1', start: 'farm/a\u0000' })).toString('base64url');
    assert.equal((await errorOf(src.reader.list(listAll({ continue: forged })))).code, 400);
  });

  it('a position ahead of the cache waits (up to 3 s) for both streams, then 504; one reached meanwhile is served', async () => {
    const { src, w, put } = await synced('200', [labelled('a', '190')]);
    const started = Date.now();
    const tooNew = await errorOf(src.reader.get('farm/a', '200.5'));
    assert.equal((tooNew as StorageError).code, 'TooLargeResourceVersion');
    assert.match(tooNew.message, /^Too large resource version: 200\.5, current: 200$/);
    assert.ok(Date.now() - started >= 2900, 'waited the watch cache\'s 3 s');
    const waiting = src.reader.list(listAll({ resourceVersion: '201.1', resourceVersionMatch: 'NotOlderThan' }));
    const watching = collect(src, '201.1');
    w.send('MODIFIED', labelled('a', '201'));
    await tick();
    put(dolly('white'));
    assert.equal((await waiting).resourceVersionText, '201.1');
    const seen = await watching;
    w.send('MODIFIED', labelled('a', '202'));
    await tick();
    assert.deepEqual(seen.stamped(), ['MODIFIED farm/a 202.1'], 'only what came after 201.1');
    seen.close();
  });

  it('too old (compacted or before the relist) → 410; malformed → 400; "0" = any; a plain Pod RV of the earlier scheme is a lower bound, never a watch start', async () => {
    const { src, w, put } = await synced('300', [labelled('a', '290')], { history: 2 });
    put(dolly('white'));
    for (let i = 1; i <= 6; i++) w.send('MODIFIED', labelled('a', String(300 + i)));
    const old = await errorOf(collect(src, '301.1'));
    assert.equal((old as StorageError).code, 'TooOld');
    assert.match(old.message, /^too old resource version: 301\.1 \(30\d\.1\)$/);
    const exactOld = await errorOf(src.reader.list(listAll({ resourceVersion: '300.1', resourceVersionMatch: 'Exact' })));
    assert.equal((exactOld as StorageError).code, 'TooOld');
    (await collect(src, '305.1')).close();
    for (const bad of ['abc', '1.2.3', '-1', '1.', '.1', ' 1', '18446744073709551616', '1.18446744073709551616']) {
      const e = await errorOf(src.reader.list(listAll({ resourceVersion: bad })));
      assert.equal(e.code, 400, bad);
      assert.equal(e.message, `invalid resource version: ${JSON.stringify(bad)}`);
      assert.equal((await errorOf(src.reader.get('farm/a', bad))).code, 400);
      assert.throws(() => parseFarmPodRV(bad), /invalid resource version/);
    }
    assert.equal((await src.reader.list(listAll({ resourceVersion: '0' }))).resourceVersionText, '306.1');
    assert.deepEqual(parseFarmPodRV('0'), { kind: 'any' });
    // "305": a FarmPod RV from before this scheme (the Pod's alone): reads not older than it are served, a watch relists.
    assert.equal((await src.reader.list(listAll({ resourceVersion: '305', resourceVersionMatch: 'NotOlderThan' }))).items.length, 1);
    assert.equal(((await errorOf(collect(src, '306'))) as StorageError).code, 'TooOld');
  });

  it('across a restart: with Llamas kept (etcd3) the RV of the restart\'s start continues, an older one is 410; with Llamas lost (memory) every old RV is 410', async () => {
    const llamas = new ObjectCache(1000);
    const first = await synced('400', [labelled('a', '390')], { llamas });
    first.put(dolly('white'));
    const seenBefore = (await first.src.reader.list(listAll())).resourceVersionText!;
    assert.equal(seenBefore, '400.1');
    first.src.reflector.stop();
    // Restarted on etcd3: the same Llamas (and RVs), Pods listed anew at a newer Pod RV.
    const second = await synced('410', [labelled('a', '405')], { llamas });
    assert.equal(((await errorOf(collect(second.src, seenBefore))) as StorageError).code, 'TooOld', 'the Pods changed while we were down: 410, never a skip');
    const atStart = (await second.src.reader.list(listAll())).resourceVersionText!;
    assert.equal(atStart, '410.1');
    second.src.reflector.stop();
    // Restarted again, nothing changed meanwhile: the same position means the same state, so it continues.
    const third = await synced('410', [labelled('a', '405')], { llamas });
    const resumed = await collect(third.src, atStart);
    third.put(dolly('black'));
    await tick();
    assert.deepEqual(resumed.stamped(), ['MODIFIED farm/a 410.2']);
    resumed.close();
    // Restarted on memory: Llama RVs start anew above any earlier process's (its start time in µs), the Llama is gone.
    const memory = new ObjectCache(1000, Date.now() * 1000);
    const fourth = await synced('410', [labelled('a', '405')], { llamas: memory });
    assert.equal(((await errorOf(collect(fourth.src, atStart))) as StorageError).code, 'TooOld');
    assert.deepEqual((fourth.src.cache.get('farm/a')!.object.status as { llama: unknown }).llama, { name: 'dolly', found: false });
  });

  it('a position another replica reached by the other interleaving (Pod change and Llama change swapped) is 410 here, never a skip', async () => {
    // Here: the Llama change (L=1) is applied before the Pod event (P=501); the client saw 501.0 elsewhere.
    const { src, w, put } = await synced('500', [labelled('a', '490')]);
    put(dolly('white'));
    w.send('MODIFIED', labelled('a', '501'));
    const e = await errorOf(collect(src, '501.0'));
    assert.equal((e as StorageError).code, 'TooOld');
    // A position between two of our steps, in both coordinates, resumes exactly: 500.1 saw the Llama change, not the Pod's.
    const ok = await collect(src, '500.1');
    await tick();
    assert.deepEqual(ok.stamped(), ['MODIFIED farm/a 501.1']);
    ok.close();
  });
});
