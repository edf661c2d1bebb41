// Llama watches over real HTTPS, judged against kube-apiserver's watch cache (k8s.io/apiserver
// pkg/storage/cacher) and watch handler (pkg/endpoints/handlers/watch.go). Absence of an event is
// proved by ordering: events arrive in resourceVersion order, so when the next event is a later
// write's, nothing came in between. No sleeps except generous waits for something to arrive.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type Stream, type TestServer } from '../helpers/testServer.js';

const API = '/apis/farm.example.com/v1alpha';
const coll = (ns: string) => `${API}/namespaces/${ns}/llamas`;
const TABLE_V1 = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const KUBECTL_GET_ACCEPT = `${TABLE_V1},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`;
const METADATA_WATCH_ACCEPT = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

type Obj = Record<string, any>;
interface Event { type: string; object: Obj }

function llama(name: string, metadata: Obj = {}, spec: Obj = { weight: 100, height: 1.5 }): Obj {
  return { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, ...metadata }, spec };
}

const readPos = new WeakMap<Stream, number>();
const endedStreams = new WeakSet<Stream>();

/**
 * The stream's next event. Reads the helper stream's `lines` itself, polling briefly: the helper's own
 * next() leaves its wait timer running, which keeps the test process alive for the whole timeout.
 */
async function next(w: Stream, timeoutMs = 5000): Promise<Event> {
  if (!readPos.has(w)) {
    readPos.set(w, 0);
    void w.ended.then(() => endedStreams.add(w));
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const i = readPos.get(w)!;
    if (i < w.lines.length) {
      readPos.set(w, i + 1);
      return JSON.parse(w.lines[i]) as Event;
    }
    if (endedStreams.has(w)) throw new Error('the watch stream ended');
    if (Date.now() > deadline) throw new Error(`no watch event within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The next event that is not a periodic BOOKMARK. */
async function nextChange(w: Stream): Promise<Event> {
  for (;;) {
    const e = await next(w);
    if (e.type !== 'BOOKMARK') return e;
  }
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms); });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** A GET on its own connection, for reading a response at our own pace. */
function rawGet(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${s.url}${path}`, { headers: { authorization: `Bearer ${s.token}`, ...headers }, ca: s.caPem, agent: false }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/** Resolves once the response ended; `complete` tells a clean end (terminating chunk) from a cut connection. */
function ended(res: IncomingMessage): Promise<{ complete: boolean }> {
  return new Promise((resolve) => {
    if (res.complete) return resolve({ complete: true });
    res.on('end', () => resolve({ complete: res.complete }));
    res.on('close', () => resolve({ complete: res.complete }));
  });
}

function helpers(get: () => TestServer) {
  const create = async (path: string, body: Obj): Promise<Obj> => {
    const r = await get().request('POST', path, { body });
    assert.equal(r.status, 201, r.body);
    return r.json();
  };
  const patch = async (path: string, p: Obj): Promise<Obj> => {
    const r = await get().request('PATCH', path, { body: p, contentType: 'application/merge-patch+json' });
    assert.equal(r.status, 200, r.body);
    return r.json();
  };
  const remove = async (path: string): Promise<Obj> => {
    const r = await get().request('DELETE', path, { body: '{}', headers: { 'content-length': '2' } });
    assert.equal(r.status, 200, r.body);
    return r.json();
  };
  const listRV = async (path: string): Promise<string> => {
    const r = await get().request('GET', path);
    assert.equal(r.status, 200, r.body);
    return r.json().metadata.resourceVersion;
  };
  return { create, patch, remove, listRV };
}

describe('llama watch', () => {
  let s: TestServer;
  const { create, patch, remove, listRV } = helpers(() => s);
  const open: Stream[] = [];
  const watch = async (path: string, headers?: Record<string, string>): Promise<Stream> => {
    const w = await s.stream(path, headers ? { headers } : {});
    open.push(w);
    assert.equal(w.status, 200);
    return w;
  };

  before(async () => { s = await startTestServer({ watch: { queueCapacity: 1000, bookmarkIntervalMs: 200 } }); });
  after(async () => {
    for (const w of open) w.close();
    await s.close();
  });

  it('from the list resourceVersion sees ADDED, MODIFIED, DELETED in order with their resourceVersions', async () => {
    const C = coll('w-basic');
    const rv0 = await listRV(C);
    const res = await rawGet(s, `${C}?watch=true&resourceVersion=${rv0}`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.headers['transfer-encoding'], 'chunked');
    res.destroy();

    const w = await watch(`${C}?watch=true&resourceVersion=${rv0}`);
    const w1 = await watch(`${C}?watch=1&resourceVersion=${rv0}`);
    const a1 = await create(C, llama('a'));
    await create(coll('w-basic-other'), llama('a'));
    const a2 = await patch(`${C}/a`, { spec: { color: 'black' } });
    const gone = await remove(`${C}/a`);
    const marker = await create(C, llama('marker'));

    for (const stream of [w, w1]) {
      const e1 = await next(stream);
      assert.equal(e1.type, 'ADDED');
      assert.deepEqual(e1.object, a1);
      const e2 = await next(stream);
      assert.equal(e2.type, 'MODIFIED', 'another namespace\'s event is not in a namespaced watch');
      assert.deepEqual(e2.object, a2);
      const e3 = await next(stream);
      assert.equal(e3.type, 'DELETED');
      assert.equal(e3.object.metadata.name, 'a');
      assert.equal(e3.object.metadata.uid, a1.metadata.uid);
      assert.ok(Number(e3.object.metadata.resourceVersion) > Number(a2.metadata.resourceVersion));
      assert.equal(e3.object.metadata.resourceVersion, gone.metadata.resourceVersion);
      const e4 = await next(stream);
      assert.equal(e4.type, 'ADDED');
      assert.equal(e4.object.metadata.resourceVersion, marker.metadata.resourceVersion);
    }
  });

  it('watches all namespaces at /apis/farm.example.com/v1alpha/llamas', async () => {
    const rv0 = await listRV(`${API}/llamas`);
    const w = await watch(`${API}/llamas?watch=true&resourceVersion=${rv0}`);
    const x = await create(coll('w-all-1'), llama('x'));
    const y = await create(coll('w-all-2'), llama('y'));
    assert.deepEqual((await next(w)).object, x);
    assert.deepEqual((await next(w)).object, y);
  });

  for (const [label, query] of [['unset', ''], ['"0"', '&resourceVersion=0']] as const) {
    it(`resourceVersion ${label} starts with a synthetic ADDED per current object, then live events`, async () => {
      const C = coll(`w-initial-${query ? 'zero' : 'unset'}`);
      const b1 = await create(C, llama('b1'));
      const b2 = await patch(`${C}/b1`, { spec: { weight: 7 } });
      const c1 = await create(C, llama('c1'));
      const w = await watch(`${C}?watch=true${query}`);
      const e1 = await next(w);
      assert.equal(e1.type, 'ADDED');
      assert.deepEqual(e1.object, b2, 'the current state, not the history');
      assert.ok(Number(b2.metadata.resourceVersion) > Number(b1.metadata.resourceVersion));
      const e2 = await next(w);
      assert.equal(e2.type, 'ADDED');
      assert.deepEqual(e2.object, c1);
      const d = await create(C, llama('d1'));
      const e3 = await next(w);
      assert.equal(e3.type, 'ADDED');
      assert.deepEqual(e3.object, d);
    });
  }

  it('resumes from an older resourceVersion with exactly the events after it', async () => {
    const C = coll('w-resume');
    const r1 = await create(C, llama('c'));
    const r2 = await patch(`${C}/c`, { spec: { weight: 2 } });
    const r3 = await patch(`${C}/c`, { spec: { weight: 3 } });
    const r4 = await create(C, llama('d'));
    const w = await watch(`${C}?watch=true&resourceVersion=${r1.metadata.resourceVersion}`);
    const r5 = await create(C, llama('e'));
    const got = [await next(w), await next(w), await next(w), await next(w)];
    assert.deepEqual(got.map((e) => [e.type, e.object.metadata.name, e.object.metadata.resourceVersion]), [
      ['MODIFIED', 'c', r2.metadata.resourceVersion],
      ['MODIFIED', 'c', r3.metadata.resourceVersion],
      ['ADDED', 'd', r4.metadata.resourceVersion],
      ['ADDED', 'e', r5.metadata.resourceVersion],
    ]);
    assert.equal(got[1].object.spec.weight, 3);
  });

  it('sends BOOKMARKs only when allowed, carrying only metadata.resourceVersion', async () => {
    const C = coll('w-bookmark');
    const rv0 = await listRV(C);
    const plain = await watch(`${C}?watch=true&resourceVersion=${rv0}`);
    const w = await watch(`${C}?watch=true&allowWatchBookmarks=true&resourceVersion=${rv0}`);
    const b1 = await next(w);
    assert.equal(b1.type, 'BOOKMARK');
    assert.deepEqual(b1.object, { kind: 'Llama', apiVersion: 'farm.example.com/v1alpha', metadata: { resourceVersion: rv0 } });
    const b2 = await next(w);
    assert.equal(b2.type, 'BOOKMARK');
    const made = await create(C, llama('bm'));
    assert.deepEqual(await nextChange(w), { type: 'ADDED', object: made });
    // The watch without allowWatchBookmarks saw two bookmark intervals pass and got nothing before this event.
    assert.deepEqual(await next(plain), { type: 'ADDED', object: made });
    const b3 = await next(w);
    assert.equal(b3.type, 'BOOKMARK');
    assert.equal(b3.object.metadata.resourceVersion, made.metadata.resourceVersion);
  });

  it('sendInitialEvents=true: ADDED for each object, then a BOOKMARK annotated k8s.io/initial-events-end', async () => {
    const C = coll('w-initial-events');
    const objs = [await create(C, llama('i1')), await create(C, llama('i2')), await create(C, llama('i3'))];
    const rv = await listRV(C);
    const w = await watch(`${C}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    for (const o of objs) assert.deepEqual(await next(w), { type: 'ADDED', object: o });
    const end = await next(w);
    // k8s.io/apiserver 1.33 adds the list blueprint: base64 of the JSON of an empty list of the kind.
    const blueprint = 'kubernetes.io/initial-events-list-blueprint';
    assert.deepEqual(end, {
      type: 'BOOKMARK',
      object: { kind: 'Llama', apiVersion: 'farm.example.com/v1alpha', metadata: { resourceVersion: rv, annotations: { 'k8s.io/initial-events-end': 'true', [blueprint]: end.object.metadata.annotations?.[blueprint] } } },
    });
    assert.deepEqual(JSON.parse(Buffer.from(String(end.object.metadata.annotations?.[blueprint]), 'base64').toString('utf8')),
      { kind: 'LlamaList', apiVersion: 'farm.example.com/v1alpha', metadata: {}, items: null });
    const live = await create(C, llama('i4'));
    assert.deepEqual(await nextChange(w), { type: 'ADDED', object: live });
  });

  it('422 ListOptions for sendInitialEvents without allowWatchBookmarks or without resourceVersionMatch', async () => {
    const C = coll('w-initial-events');
    const noBookmarks = await s.request('GET', `${C}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`);
    assert.equal(noBookmarks.status, 422, noBookmarks.body);
    const st = noBookmarks.json();
    assert.equal(st.kind, 'Status');
    assert.equal(st.reason, 'Invalid');
    assert.equal(st.message, 'ListOptions.meta.k8s.io "" is invalid: allowWatchBookmarks: Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is provided');
    const noMatch = await s.request('GET', `${C}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true`);
    assert.equal(noMatch.status, 422, noMatch.body);
    assert.equal(noMatch.json().message, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    const matchOnly = await s.request('GET', `${C}?watch=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    assert.equal(matchOnly.status, 422, matchOnly.body);
    assert.match(matchOnly.json().message, /resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided/);
  });

  it('a label-selector watch turns leaving the selection into DELETED and entering into ADDED', async () => {
    const C = coll('w-labels');
    const inside = await create(C, llama('in', { labels: { app: 'farm' } }));
    await create(C, llama('out', { labels: { app: 'zoo' } }));
    const w = await watch(`${C}?watch=true&labelSelector=app%3Dfarm&resourceVersion=${inside.metadata.resourceVersion}`);

    const m = await patch(`${C}/in`, { spec: { weight: 101 } });
    const left = await patch(`${C}/in`, { metadata: { labels: { app: 'zoo' } } });
    await patch(`${C}/in`, { spec: { weight: 102 } }); // outside: not seen
    const entered = await patch(`${C}/out`, { metadata: { labels: { app: 'farm' } } });
    const gone = await remove(`${C}/out`);
    const marker = await create(C, llama('m', { labels: { app: 'farm' } }));

    assert.deepEqual(await next(w), { type: 'MODIFIED', object: m });
    const d = await next(w);
    assert.equal(d.type, 'DELETED');
    // cacheWatcher.convertToWatchEvent: the previous content (which matched), at the change's resourceVersion.
    assert.deepEqual(d.object, { ...m, metadata: { ...m.metadata, resourceVersion: left.metadata.resourceVersion } });
    assert.deepEqual(await next(w), { type: 'ADDED', object: entered });
    const d2 = await next(w);
    assert.equal(d2.type, 'DELETED');
    assert.equal(d2.object.metadata.name, 'out');
    assert.equal(d2.object.metadata.resourceVersion, gone.metadata.resourceVersion);
    assert.deepEqual(await next(w), { type: 'ADDED', object: marker });
  });

  it('a metadata.name field-selector watch sees only that object, and its synthetic ADDED only', async () => {
    const C = coll('w-field');
    const alpha = await create(C, llama('alpha'));
    await create(C, llama('beta'));
    const rv = await listRV(C);
    const w = await watch(`${C}?watch=true&fieldSelector=metadata.name%3Dalpha&resourceVersion=${rv}`);
    const w0 = await watch(`${C}?watch=true&fieldSelector=metadata.name%3Dalpha&resourceVersion=0`);
    await patch(`${C}/beta`, { spec: { weight: 1 } });
    const a2 = await patch(`${C}/alpha`, { spec: { weight: 2 } });
    await remove(`${C}/beta`);
    const a3 = await remove(`${C}/alpha`);
    assert.deepEqual(await next(w), { type: 'MODIFIED', object: a2 });
    const d = await next(w);
    assert.equal(d.type, 'DELETED');
    assert.equal(d.object.metadata.resourceVersion, a3.metadata.resourceVersion);
    assert.deepEqual(await next(w0), { type: 'ADDED', object: alpha });
    assert.deepEqual(await next(w0), { type: 'MODIFIED', object: a2 });
    assert.equal((await next(w0)).type, 'DELETED');
  });

  it('the /watch/namespaces/{ns}/llamas[/{name}] path forms', async () => {
    const C = coll('w-path');
    const rv = await listRV(C);
    const one = await watch(`${API}/watch/namespaces/w-path/llamas/solo?resourceVersion=${rv}`);
    const all = await watch(`${API}/watch/namespaces/w-path/llamas?resourceVersion=${rv}`);
    const other = await create(C, llama('other'));
    const solo = await create(C, llama('solo'));
    assert.deepEqual(await next(one), { type: 'ADDED', object: solo });
    assert.deepEqual(await next(all), { type: 'ADDED', object: other });
    assert.deepEqual(await next(all), { type: 'ADDED', object: solo });
  });

  it('a Table watch sends column definitions on the first event only', async () => {
    const C = coll('w-table');
    const t1 = await create(C, llama('t1', {}, { weight: 50, height: 1, color: 'grey' }));
    await create(C, llama('t2'));
    const w = await watch(`${C}?watch=true&resourceVersion=0`, { accept: KUBECTL_GET_ACCEPT });
    const e1 = await next(w);
    assert.equal(e1.type, 'ADDED');
    assert.equal(e1.object.kind, 'Table');
    assert.equal(e1.object.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual((e1.object.columnDefinitions as Obj[]).map((c) => c.name), ['Name', 'Color', 'Weight', 'Height', 'Food', 'Age']);
    assert.equal(e1.object.rows.length, 1);
    assert.deepEqual(e1.object.rows[0].cells.slice(0, 4), ['t1', 'grey', 50, 1]);
    assert.deepEqual(e1.object.rows[0].object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: t1.metadata });
    assert.equal(e1.object.metadata.resourceVersion, t1.metadata.resourceVersion);
    const e2 = await next(w);
    assert.equal(e2.object.columnDefinitions, null);
    assert.equal(e2.object.rows[0].cells[0], 't2');
    const m = await patch(`${C}/t1`, { spec: { color: 'black' } });
    const e3 = await next(w);
    assert.equal(e3.type, 'MODIFIED');
    assert.equal(e3.object.columnDefinitions, null);
    assert.equal(e3.object.rows[0].cells[1], 'black');
    assert.equal(e3.object.metadata.resourceVersion, m.metadata.resourceVersion);
  });

  it('a PartialObjectMetadata watch (the garbage collector\'s) sends PartialObjectMetadata objects, bookmarks included', async () => {
    const C = coll('w-meta');
    const rv = await listRV(C);
    const w = await watch(`${C}?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`, { accept: METADATA_WATCH_ACCEPT });
    const o = await create(C, llama('pom', { labels: { app: 'farm' }, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'u-1' }] }));
    const gone = await remove(`${C}/pom`);
    let e = await next(w);
    while (e.type === 'BOOKMARK') {
      assert.deepEqual(e.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: rv } });
      e = await next(w);
    }
    assert.deepEqual(e, { type: 'ADDED', object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata } });
    const d = await nextChange(w);
    assert.equal(d.type, 'DELETED');
    assert.deepEqual(Object.keys(d.object).sort(), ['apiVersion', 'kind', 'metadata']);
    assert.equal(d.object.kind, 'PartialObjectMetadata');
    assert.equal(d.object.metadata.resourceVersion, gone.metadata.resourceVersion);
    const b = await next(w);
    assert.deepEqual(b, { type: 'BOOKMARK', object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: gone.metadata.resourceVersion } } });
  });

  it('406 for a watch that accepts only protobuf', async () => {
    const r = await s.request('GET', `${coll('w-basic')}?watch=true`, { headers: { accept: 'application/vnd.kubernetes.protobuf;stream=watch' } });
    assert.equal(r.status, 406, r.body);
    assert.equal(r.json().reason, 'NotAcceptable');
  });

  it('timeoutSeconds ends the stream cleanly', async () => {
    const C = coll('w-timeout');
    const made = await create(C, llama('t'));
    const before = s.server.watchers.size;
    const res = await rawGet(s, `${C}?watch=true&timeoutSeconds=1&resourceVersion=0`);
    assert.equal(res.statusCode, 200);
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => { body += c; });
    const end = await within(ended(res), 15_000, 'the watch did not end after timeoutSeconds=1');
    assert.equal(end.complete, true, 'ended with the terminating chunk, not a cut connection');
    assert.deepEqual(body.split('\n').filter(Boolean).map((l) => JSON.parse(l)), [{ type: 'ADDED', object: made }]);
    // The server lets go of it once its last bytes were handed to the connection (a moment after the client read them).
    for (let i = 0; i < 100 && s.server.watchers.size > before; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(s.server.watchers.size, before);
  });

  it('server.endWatches() ends every open stream cleanly and the server keeps serving', async () => {
    const C = coll('w-end');
    const before = s.server.watchers.size;
    const a = await rawGet(s, `${C}?watch=true`);
    const b = await rawGet(s, `${API}/llamas?watch=true&allowWatchBookmarks=true`, { accept: TABLE_V1 });
    a.resume();
    b.resume();
    // Both are registered before they are ended (the stream starts before the response headers are sent).
    assert.equal(s.server.watchers.size, before + 2);
    s.server.endWatches();
    const [ea, eb] = await within(Promise.all([ended(a), ended(b)]), 10_000, 'endWatches() left a stream open');
    assert.deepEqual([ea.complete, eb.complete], [true, true]);
    const r = await s.request('GET', C);
    assert.equal(r.status, 200);
    const w = await watch(`${C}?watch=true&resourceVersion=${r.json().metadata.resourceVersion}`);
    const made = await create(C, llama('after-end'));
    assert.deepEqual(await next(w), { type: 'ADDED', object: made });
  });
});

describe('a watch from a resourceVersion older than the history kept', () => {
  let s: TestServer;
  const { create, patch } = helpers(() => s);
  before(async () => { s = await startTestServer({ watchHistory: 5 }); });
  after(async () => { await s.close(); });

  it('answers HTTP 200, one ERROR event with a 410 Expired Status, then ends', async () => {
    const C = coll('w-old');
    const first = await create(C, llama('old'));
    for (let i = 0; i < 20; i++) await patch(`${C}/old`, { spec: { weight: i + 1 } });
    for (const accept of [undefined, TABLE_V1]) {
      const w = await s.stream(`${C}?watch=true&resourceVersion=${first.metadata.resourceVersion}`, accept ? { headers: { accept } } : {});
      assert.equal(w.status, 200);
      await within(w.ended, 10_000, 'the stream did not end after the ERROR event');
      assert.equal(w.lines.length, 1, w.lines.join('\n'));
      const e = JSON.parse(w.lines[0]) as Event;
      assert.equal(e.type, 'ERROR');
      assert.equal(e.object.kind, 'Status');
      assert.equal(e.object.apiVersion, 'v1');
      assert.equal(e.object.status, 'Failure');
      assert.equal(e.object.code, 410);
      assert.equal(e.object.reason, 'Expired');
      assert.match(e.object.message, new RegExp(`^too old resource version: ${first.metadata.resourceVersion} \\((\\d+)\\)$`));
      const oldest = Number(/\((\d+)\)$/.exec(e.object.message)![1]);
      assert.ok(oldest > Number(first.metadata.resourceVersion));
    }
    // The newest resourceVersions are still watchable.
    const rv = (await s.request('GET', C)).json().metadata.resourceVersion;
    const w = await s.stream(`${C}?watch=true&resourceVersion=${rv}`);
    const m = await patch(`${C}/old`, { spec: { color: 'spotted' } });
    assert.deepEqual(await next(w), { type: 'MODIFIED', object: m });
    w.close();
  });
});

describe('a watcher that stops reading', () => {
  let s: TestServer;
  const { listRV } = helpers(() => s);
  before(async () => { s = await startTestServer({ watch: { queueCapacity: 10, bookmarkIntervalMs: 60_000 } }); });
  after(async () => { await s.close(); });

  it('is dropped while writers keep succeeding, and a reading watcher gets every event once, in order', async () => {
    const C = coll('w-slow');
    const cache = s.stores.get('llamas')!.view;
    const rv0 = await listRV(C);
    const slow = await rawGet(s, `${C}?watch=true&resourceVersion=${rv0}`);
    assert.equal(slow.statusCode, 200);
    let slowBody = '';
    slow.setEncoding('utf8');
    slow.on('data', (c: string) => { slowBody += c; });
    slow.pause();
    const slowEnd = ended(slow);
    const reader = await s.stream(`${C}?watch=true&resourceVersion=${rv0}`);
    assert.equal(cache.watcherCount, 2);

    // 2000 writes of ~10 KB: far more than socket buffers hold, so the paused watcher's queue overflows.
    const filler = 'w'.repeat(10 * 1024);
    const rvs: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const r = await s.request('POST', C, { body: llama(`s${i}`, { annotations: { filler } }) });
      assert.equal(r.status, 201, r.body);
      rvs.push(r.json().metadata.resourceVersion);
    }
    assert.equal(cache.watcherCount, 1, 'the stalled watcher was dropped from the fan-out');

    for (let i = 0; i < rvs.length; i++) {
      const e = await next(reader, 10_000);
      assert.equal(e.type, 'ADDED');
      assert.equal(e.object.metadata.resourceVersion, rvs[i], `event ${i} in order`);
      assert.equal(e.object.metadata.name, `s${i}`);
    }
    // Exactly once: the next event is a fresh write's.
    const last = await s.request('DELETE', `${C}/s0`, { body: '{}', headers: { 'content-length': '2' } });
    assert.equal(last.status, 200);
    const e = await next(reader, 10_000);
    assert.equal(e.type, 'DELETED');
    assert.equal(e.object.metadata.resourceVersion, last.json().metadata.resourceVersion);

    // Once it reads again, the stalled watcher gets what was already sent, a clean end, and no more.
    slow.resume();
    const end = await within(slowEnd, 10_000, 'the dropped watcher was not ended');
    assert.equal(end.complete, true);
    const got = slowBody.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Event);
    assert.ok(got.length < rvs.length, `it was cut short (${got.length} events)`);
    assert.deepEqual(got.map((x) => x.object.metadata.resourceVersion), rvs.slice(0, got.length), 'what it got is an in-order prefix');
    reader.close();
  });
});
