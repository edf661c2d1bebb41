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
import type { WatchItem } from '../../src/storage/interfaces.js';
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

function collect(cache: ObjectCache, fromRV?: number) {
  const items: WatchItem[] = [];
  const w = cache.watch({ fromRV, capacity: 100 });
  const ended = (async () => { for (;;) { const i = await w.next(); if (!i) return; items.push(i); } })();
  return { items, ended, close: () => w.close(), events: () => items.map((i) => ('entry' in i ? `${i.type} ${i.entry.key}` : i.type)) };
}
const tick = () => new Promise((r) => setImmediate(r));

describe('FarmPodSource', () => {
  const sources: FarmPodSource[] = [];
  after(() => { for (const s of sources) s.reflector.stop(); });

  function setup(lists: FakeUpstream['lists']) {
    const up = new FakeUpstream();
    up.lists = lists;
    const llamas = new ObjectCache(100);
    const src = new FarmPodSource(up as unknown as Upstream, llamas, log, 100);
    sources.push(src);
    let llamaRV = 0;
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
    return { up, src, putLlama, deleteLlama };
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
    assert.equal(src.cache.resourceVersion, 120);
    assert.deepEqual(src.cache.list().map((e) => [e.key, e.rv, e.object.metadata.resourceVersion]), [['farm/a', 101, '101'], ['other/b', 115, '115']]);
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
    assert.equal(src.cache.resourceVersion, 1000);
    assert.match(w.path, /resourceVersion=1000&/);
  });

  it('follows watch events: ADDED, MODIFIED, DELETED at the Pod\'s resourceVersions; bookmarks advance the RV', async () => {
    const { up, src } = setup([{ status: 200, rv: '200', items: [pod('a', { rv: '150' })] }]);
    src.reflector.start();
    const w = await up.nextWatch(1);
    const seen = collect(src.cache, 200);
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
    assert.deepEqual(seen.items.map((i) => ('entry' in i ? i.entry.rv : 0)), [201, 202, 206, 207]);
    assert.equal((src.cache.get('farm/b')!.object.status as Record<string, unknown>).status, 'Running');
    assert.equal(src.cache.get('farm/a'), undefined);
    assert.equal(src.cache.resourceVersion, 210);
    assert.doesNotThrow(() => src.cache.watch({ fromRV: 210, capacity: 10 }).close());
    seen.close();
  });

  it('re-enriches FarmPods when their Llama is created, edited, or deleted; keeps the Pod\'s RV; ignores irrelevant edits', async () => {
    const { up, src, putLlama, deleteLlama } = setup([{ status: 200, rv: '300', items: [
      pod('a', { rv: '290', labels: { [LLAMA_LABEL]: 'dolly' } }), pod('b', { rv: '291', labels: { [LLAMA_LABEL]: 'dolly' } }),
      pod('c', { rv: '292', labels: { [LLAMA_LABEL]: 'molly' } }), pod('d', { rv: '293' }),
    ] }]);
    src.reflector.start();
    await up.nextWatch(1);
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: false });
    const seen = collect(src.cache, 300);
    putLlama(llama('dolly', { weight: 120, height: 1.7, color: 'brown' }));
    await tick();
    assert.deepEqual(seen.events().sort(), ['MODIFIED farm/a', 'MODIFIED farm/b']);
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'brown' });
    assert.equal(src.cache.get('farm/a')!.object.metadata.resourceVersion, '290', 'a Llama edit does not change the FarmPod\'s resourceVersion (the Pod\'s)');

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

  it('a relabelled Pod follows its new Llama and no longer its old one; a deleted Pod follows none', async () => {
    const { up, src, putLlama } = setup([{ status: 200, rv: '400', items: [pod('a', { rv: '390', labels: { [LLAMA_LABEL]: 'dolly' } })] }]);
    putLlama(llama('dolly', { weight: 100, height: 1.5, color: 'white' }));
    putLlama(llama('molly', { weight: 90, height: 1.4, color: 'grey' }));
    src.reflector.start();
    const w = await up.nextWatch(1);
    assert.equal((llamaOf(src, 'farm/a') as { color: string }).color, 'white');
    w.send('MODIFIED', pod('a', { rv: '401', labels: { [LLAMA_LABEL]: 'molly' } }));
    assert.deepEqual(llamaOf(src, 'farm/a'), { name: 'molly', found: true, weight: 90, height: 1.4, color: 'grey' });
    const seen = collect(src.cache, 401);
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
    const seen = collect(src.cache, 500);
    w1.fail(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
    await tick();
    assert.equal(src.unavailable(), 'the FarmPod cache is not synced with kube-apiserver: connect ECONNREFUSED 127.0.0.1:6443');
    await up.nextWatch(2);
    assert.equal(src.unavailable(), undefined);
    assert.deepEqual(src.cache.list().map((e) => e.key), ['farm/b']);
    assert.equal(src.cache.resourceVersion, 600);
    assert.throws(() => src.cache.watch({ fromRV: 500, capacity: 10 }), /too old resource version: 500/);
    await seen.ended; // a relist closes open FarmPod watches, so their clients relist too
    assert.equal(seen.items.length, 0);
  });

  it('a Llama-driven change is not lost by a client that lists, then watches from the list\'s resourceVersion', {
    todo: 'src/registry/farm/farmpod.ts design gap: a Llama-driven MODIFIED keeps the Pod\'s resourceVersion and is recorded at the '
      + 'cache\'s current RV, so a watch from that RV (list-then-watch, or an informer resuming from the last RV it saw) skips it; '
      + 'fixing it needs FarmPod resourceVersions of their own (not the Pod\'s), a design decision',
  }, async () => {
    const { up, src, putLlama } = setup([{ status: 200, rv: '900', items: [pod('a', { rv: '900', labels: { [LLAMA_LABEL]: 'dolly' } })] }]);
    src.reflector.start();
    await up.nextWatch(1);
    const listRV = src.cache.resourceVersion; // what a list answers with
    putLlama(llama('dolly', { weight: 100, height: 1.5, color: 'black' })); // happens between the client's list and its watch
    const seen = collect(src.cache, listRV);
    await tick();
    assert.deepEqual(seen.events(), ['MODIFIED farm/a']);
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
