// HTTP/2 on the serving port, as kube-apiserver's aggregator uses it: one connection multiplexing many
// requests, large LISTs and long watches; the settings k8s.io/apiserver advertises; connection limits
// that cut idle connections but never quiet watches; and a misbehaving client that only harms itself.
// Real HTTPS server, node:http2 clients over loopback.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type ClientHttp2Session, type Settings } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { once } from 'node:events';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { Http2Client } from '../helpers/http2Client.js';

const coll = '/apis/farm.example.com/v1alpha/namespaces/h2/llamas';
const IDLE_MS = 800;
const llama = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels }, spec: { color: 'white', weight: 100, height: 1.5 } });

let s: TestServer;
let client: Http2Client;

before(async () => {
  s = await startTestServer({ http: { idleTimeoutMs: IDLE_MS } });
  client = new Http2Client(s.url, s.caPem);
  for (let i = 0; i < 1000; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => s.request('POST', coll, { body: llama(`l-${String(i + j).padStart(4, '0')}`) })
      .then((r) => assert.equal(r.status, 201, r.body))));
  }
});
after(async () => { client?.close(); await s?.close(); });

const auth = () => ({ authorization: `Bearer ${s.token}` });

function session(): Promise<ClientHttp2Session> {
  const c = connect(s.url, { ca: s.caPem });
  c.on('error', () => {});
  return once(c, 'remoteSettings').then(() => c);
}

describe('negotiation and settings', () => {
  test('ALPN picks h2 for an HTTP/2 client and HTTP/1.1 for one that offers only it, on the same port', async () => {
    const c = await session();
    try {
      assert.equal(c.alpnProtocol, 'h2');
      const r = await new Promise<string | undefined>((resolve, reject) => {
        httpsRequest(`${s.url}${coll}?limit=1`, { ca: s.caPem, headers: auth() }, (res) => { res.resume(); resolve(res.httpVersion); }).on('error', reject).end();
      });
      assert.equal(r, '1.1');
    } finally { c.close(); }
  });

  test("the server advertises k8s.io/apiserver's settings: 1000 streams, 256 KiB stream window and frames, 64 KiB header list, no push", async () => {
    const c = await session();
    try {
      const r: Settings = c.remoteSettings;
      assert.equal(r.maxConcurrentStreams, 1000);
      assert.equal(r.initialWindowSize, 256 * 1024);
      assert.equal(r.maxFrameSize, 256 * 1024);
      assert.equal(r.maxHeaderListSize, 64 * 1024);
      assert.equal(r.enablePush, false);
    } finally { c.close(); }
  });
});

describe('multiplexing', () => {
  test('300 GETs and 100 watches at once on one connection: every GET answers and every watch sees the next write', async () => {
    const rv = (await client.request('GET', `${coll}?limit=1`, auth())).json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion;
    const open = await Promise.all(Array.from({ length: 100 }, () => client.stream(`${coll}?watch=1&labelSelector=mux%3Dyes&resourceVersion=${rv}`, auth())));
    try {
      const gets = await Promise.all(Array.from({ length: 300 }, (_, i) => client.request('GET', `${coll}/l-${String(i).padStart(4, '0')}`, auth())));
      assert.deepEqual(new Set(gets.map((g) => g.status)), new Set([200]));
      assert.equal((await client.request('POST', coll, { ...auth(), 'content-type': 'application/json' }, JSON.stringify(llama('mux', { mux: 'yes' })))).status, 201);
      const events = await Promise.all(open.map((w) => w.next(10_000)));
      for (const e of events) assert.deepEqual([JSON.parse(e).type, JSON.parse(e).object.metadata.name], ['ADDED', 'mux']);
    } finally { for (const w of open) w.close(); }
  });

  test('20 LISTs of 1,000 llamas at once on one connection all complete, byte-identical', async () => {
    const lists = await Promise.all(Array.from({ length: 20 }, () => client.request('GET', `${coll}?labelSelector=!mux`, auth())));
    assert.deepEqual(new Set(lists.map((l) => l.status)), new Set([200]));
    assert.equal(lists[0].json<{ items: unknown[] }>().items.length, 1000);
    assert.ok(lists[0].body.length > 300_000);
    assert.equal(new Set(lists.map((l) => l.body)).size, 1);
  });

  test('an answer given before the request body was read (401) leaves the connection serving other streams', async () => {
    const c = await session();
    try {
      const post = c.request({ ':method': 'POST', ':path': coll, 'content-type': 'application/json' }, { endStream: false });
      post.write('{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"name":');
      const [headers] = await once(post, 'response') as [Record<string, unknown>];
      assert.equal(headers[':status'], 401);
      // Read the answer: on Node 24 a stream whose response is never consumed never closes.
      post.resume();
      post.close();
      const get = c.request({ ':path': `${coll}?limit=1`, ...auth() });
      const [h] = await once(get, 'response') as [Record<string, unknown>];
      get.resume();
      assert.equal(h[':status'], 200);
      assert.equal(c.closed || c.destroyed, false);
    } finally { c.close(); }
  });
});

describe('bodies the server does not read', () => {
  test('413 for a 4 MiB body: the answer arrives whole, the client finishes sending, the stream ends cleanly', async () => {
    const c = await session();
    try {
      const body = 'x'.repeat(4 << 20);
      const post = c.request({ ':method': 'POST', ':path': coll, 'content-type': 'application/json', 'content-length': String(body.length), ...auth() });
      post.end(body);
      const [h] = await once(post, 'response') as [Record<string, unknown>];
      const chunks: Buffer[] = [];
      post.on('data', (d: Buffer) => chunks.push(d));
      await Promise.race([once(post, 'close'), new Promise((_, rej) => setTimeout(() => rej(new Error('stream still open after 5 s')), 5000))]);
      assert.equal(h[':status'], 413);
      assert.equal(JSON.parse(Buffer.concat(chunks).toString()).reason, 'RequestEntityTooLarge');
      assert.equal(post.rstCode, 0, 'ended, not reset');
      const get = c.request({ ':path': `${coll}?limit=1`, ...auth() });
      get.resume();
      const [g] = await once(get, 'response') as [Record<string, unknown>];
      assert.equal(g[':status'], 200);
    } finally { c.destroy(); }
  });
});

describe('misbehaving clients harm only their own connection', () => {
  test('a header field over 64 KiB ends that client\'s connection; another connection\'s watch and requests go on', async () => {
    const rv = (await client.request('GET', `${coll}?limit=1`, auth())).json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion;
    const watch = await client.stream(`${coll}?watch=1&labelSelector=victim%3Dyes&resourceVersion=${rv}`, auth());
    const bad = connect(s.url, { ca: s.caPem, maxSendHeaderBlockLength: 1 << 20 });
    bad.on('error', () => {});
    try {
      await once(bad, 'remoteSettings');
      const req = bad.request({ ':path': `${coll}?labelSelector=${'x'.repeat(70 * 1024)}`, ...auth() });
      req.on('error', () => {});
      await once(bad, 'close');
      const r = await client.request('POST', coll, { ...auth(), 'content-type': 'application/json' }, JSON.stringify(llama('victim', { victim: 'yes' })));
      assert.equal(r.status, 201);
      assert.equal(JSON.parse(await watch.next(5000)).object.metadata.name, 'victim');
    } finally { bad.destroy(); watch.close(); }
  });
});

describe('connection limits', () => {
  test('a connection with no open stream is closed after the idle timeout, not before', async () => {
    const c = await session();
    const t0 = Date.now();
    const req = c.request({ ':path': `${coll}?limit=1`, ...auth() });
    req.resume();
    await once(req, 'close');
    const closedAfter = await Promise.race([once(c, 'close').then(() => Date.now() - t0), new Promise<number>((r) => setTimeout(() => r(-1), 5000))]);
    c.destroy();
    assert.ok(closedAfter >= IDLE_MS * 0.9, `closed after ${closedAfter} ms, before the idle timeout`);
    assert.ok(closedAfter > 0 && closedAfter < IDLE_MS + 2500, `not closed within ${IDLE_MS + 2500} ms`);
  });

  test('a quiet watch keeps its connection past several idle timeouts and then delivers the event', async () => {
    const c = new Http2Client(s.url, s.caPem);
    try {
      const rv = (await c.request('GET', `${coll}?limit=1`, auth())).json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion;
      const w = await c.stream(`${coll}?watch=1&labelSelector=quiet%3Dyes&resourceVersion=${rv}`, auth());
      await new Promise((r) => setTimeout(r, IDLE_MS * 3));
      assert.equal((await s.request('POST', coll, { body: llama('quiet', { quiet: 'yes' }) })).status, 201);
      assert.equal(JSON.parse(await w.next(5000)).object.metadata.name, 'quiet');
      w.close();
    } finally { c.close(); }
  });
});

describe('shutdown', () => {
  test('closing the server ends open watches and sends GOAWAY; close() completes promptly', async () => {
    const own = await startTestServer();
    const c = new Http2Client(own.url, own.caPem);
    const w = await c.stream('/apis/farm.example.com/v1alpha/namespaces/x/llamas?watch=1', { authorization: `Bearer ${own.token}` });
    const raw = connect(own.url, { ca: own.caPem });
    raw.on('error', () => {});
    await once(raw, 'remoteSettings');
    const goaway = once(raw, 'goaway');
    const t0 = Date.now();
    await own.close();
    assert.ok(Date.now() - t0 < 5000, `close took ${Date.now() - t0} ms`);
    await w.ended;
    await Promise.race([goaway, new Promise((_, rej) => setTimeout(() => rej(new Error('no GOAWAY within 2 s')), 2000))]);
    raw.destroy();
    c.close();
  });
});
