// Watch events on the wire. An event's line is encoded once and shared by every watcher it goes to, and
// HTTP/1.1 GET watches write whole chunks straight to the socket (src/endpoints/eventLines.ts). Judged
// here: the framing a client parses byte by byte (strictly), a kept-alive or pipelined connection after a
// watch, HEAD, and, property-based, that watchers with different selectors over HTTP/1.1 and HTTP/2 get
// the events upstream's cacher would send them, the same bytes on both protocols.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import fc from 'fast-check';
import { Http2Client } from '../helpers/http2Client.js';
import { parseResponses, RawConn, type RawResponse } from '../helpers/rawHttp1.js';
import { startTestServer, type Stream, type TestServer } from '../helpers/testServer.js';

const API = '/apis/farm.example.com/v1alpha';
const coll = (ns: string) => `${API}/namespaces/${ns}/llamas`;

interface Meta { name: string; resourceVersion: string; labels?: Record<string, string> }
interface Obj { metadata: Meta; [k: string]: unknown }
interface Event { type: string; object: Obj }

const llama = (name: string, labels: Record<string, string> = {}) =>
  ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels }, spec: { weight: 100, height: 1.5 } });

/** Creates llamas carrying `kib` KiB each in an annotation (at most 256 KiB): events that back up a client that reads nothing. */
async function createBig(server: TestServer, ns: string, count: number, kib: number, each?: () => Promise<boolean>): Promise<number> {
  const pad = 'x'.repeat(kib << 10);
  for (let i = 0; i < count; i++) {
    const r = await server.request('POST', coll(ns), { body: { ...llama(`big-${i}`), metadata: { name: `big-${i}`, annotations: { pad } } } });
    assert.equal(r.status, 201, r.body.slice(0, 300));
    if (each && await each()) return i + 1;
  }
  return count;
}

/** A server of the test's own, with the TLS sockets it accepts. */
async function ownServer(opts: Parameters<typeof startTestServer>[0] = {}): Promise<{ own: TestServer; sockets: TLSSocket[] }> {
  const own = await startTestServer(opts);
  const sockets: TLSSocket[] = [];
  own.server.app.server.on('secureConnection', (sock: TLSSocket) => sockets.push(sock));
  return { own, sockets };
}

describe('watch events on the wire', () => {
  let s: TestServer;
  let port: number;
  let h2: Http2Client;
  const conns: RawConn[] = [];
  const streams: Stream[] = [];

  before(async () => {
    // A watch that ended waits 1 s (not 30) for a client that stopped reading.
    s = await startTestServer({ watch: { queueCapacity: 1000, bookmarkIntervalMs: 60_000, endDrainMs: 1000 } });
    port = Number(new URL(s.url).port);
    h2 = new Http2Client(s.url, s.caPem);
  });
  after(async () => {
    for (const c of conns) c.destroy();
    for (const w of streams) w.close();
    h2.close();
    await s.close();
  });

  const create = async (ns: string, name: string, labels: Record<string, string> = {}): Promise<Obj> => {
    const r = await s.request('POST', coll(ns), { body: llama(name, labels) });
    assert.equal(r.status, 201, r.body);
    return r.json() as Obj;
  };
  const listRV = async (ns: string): Promise<string> => (await s.request('GET', coll(ns))).json().metadata.resourceVersion as string;
  const conn = async () => {
    const c = await RawConn.tls(port, s.caPem);
    conns.push(c);
    return c;
  };
  const get = (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.token}\r\nAccept: application/json\r\n\r\n`;
  /** A watch answer's chunks: each holds whole event lines, and the body is those lines. */
  const eventsOf = (r: RawResponse): Event[] => {
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.headers['transfer-encoding'], 'chunked');
    assert.ok(r.chunks, 'chunked');
    for (const c of r.chunks) assert.match(c, /^(\{[^\n]*\}\n)+$/, `a chunk of whole lines: ${JSON.stringify(c.slice(0, 200))}`);
    return r.body.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Event);
  };

  it('an HTTP/1.1 watch sends well-formed chunks and its last chunk; the kept-alive connection serves the next request', async () => {
    const rv = await listRV('wire-keep');
    const c = await conn();
    c.write(get('GET', `${coll('wire-keep')}?watch=1&resourceVersion=${rv}&timeoutSeconds=1`));
    const made = [await create('wire-keep', 'a'), await create('wire-keep', 'b'), await create('wire-keep', 'c')];
    const first = await c.response(5000, 1);
    assert.equal(first.responses.length, 1, `the watch ended with its last chunk: ${JSON.stringify(first.rest.slice(-200))}`);
    assert.deepEqual(eventsOf(first.responses[0]), made.map((object) => ({ type: 'ADDED', object })));
    assert.equal(c.closed, false);
    c.write(get('GET', coll('wire-keep')));
    const second = await c.response(5000, 2);
    assert.equal(second.responses[1]?.status, 200, second.rest);
    assert.deepEqual((JSON.parse(second.responses[1].body) as { items: Obj[] }).items, made);
    assert.equal(second.rest, '');
  });

  it('an HTTP/1.0 watch gets its events unchunked, and its end is the connection\'s (HTTP/1.0 has no chunks)', async () => {
    const rv = await listRV('wire-http10');
    const c = await conn();
    c.write(get('GET', `${coll('wire-http10')}?watch=1&resourceVersion=${rv}&timeoutSeconds=1`).replace('HTTP/1.1', 'HTTP/1.0'));
    const made = [await create('wire-http10', 'a'), await create('wire-http10', 'b')];
    assert.ok(await c.until(() => c.closed, 5000), 'the server closes the connection at the watch\'s end');
    const text = c.data.toString('utf8');
    const split = text.indexOf('\r\n\r\n');
    const head = text.slice(0, split).toLowerCase();
    assert.match(head, /^http\/1\.[01] 200 /);
    assert.doesNotMatch(head, /transfer-encoding/);
    assert.doesNotMatch(head, /content-length/);
    const lines = text.slice(split + 4).split('\n');
    assert.equal(lines.pop(), '', 'the body is whole lines');
    assert.deepEqual(lines.map((l) => JSON.parse(l) as Event), made.map((object) => ({ type: 'ADDED', object })));
  });

  it('a watch pipelined behind another waits for it, then sends its own events; the connection stays usable', async () => {
    const rv = await listRV('wire-pipe');
    const c = await conn();
    // The second watch's response has no socket while the first holds it: node buffers what it writes.
    const watchPath = (t: number) => `${coll('wire-pipe')}?watch=1&resourceVersion=${rv}&timeoutSeconds=${t}`;
    c.write(get('GET', watchPath(1)) + get('GET', watchPath(2)));
    const made = [await create('wire-pipe', 'a'), await create('wire-pipe', 'b')];
    const both = await c.response(8000, 2);
    assert.equal(both.responses.length, 2, both.rest.slice(0, 300));
    for (const r of both.responses) assert.deepEqual(eventsOf(r), made.map((object) => ({ type: 'ADDED', object })));
    c.write(get('GET', `${coll('wire-pipe')}/a`));
    const third = await c.response(5000, 3);
    assert.equal(third.responses[2]?.status, 200, third.rest);
    assert.deepEqual(JSON.parse(third.responses[2].body), made[0]);
  });

  it('a HEAD watch answers with a head and no body; the connection then serves a GET', async () => {
    const rv = await listRV('wire-head');
    const c = await conn();
    c.write(get('HEAD', `${coll('wire-head')}?watch=1&resourceVersion=${rv}&timeoutSeconds=1`));
    const made = await create('wire-head', 'a');
    const head = await c.response(5000, 1, ['HEAD']);
    assert.equal(head.responses.length, 1);
    assert.equal(head.responses[0].body, '');
    // Whatever the HEAD wrote must be its head alone: the next bytes are the GET's answer.
    await new Promise((r) => setTimeout(r, 1200));
    c.write(get('GET', `${coll('wire-head')}/a`));
    const next = await c.response(5000, 2, ['HEAD', 'GET']);
    assert.equal(next.responses[1]?.status, 200, next.rest.slice(0, 300));
    assert.deepEqual(JSON.parse(next.responses[1].body), made);
    assert.equal(next.rest, '');
  });

  it('shutdown ends an HTTP/1.1 watch with its last chunk and closes the kept-alive connection at once', async () => {
    // Its own server: closing it is the test. The idle timeout is long, so only the shutdown can close the socket.
    const own = await startTestServer({ http: { idleTimeoutMs: 60_000 } });
    const c = await RawConn.tls(Number(new URL(own.url).port), own.caPem);
    conns.push(c);
    const rv = (await own.request('GET', coll('wire-stop'))).json().metadata.resourceVersion as string;
    c.write(`GET ${coll('wire-stop')}?watch=1&resourceVersion=${rv} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${own.token}\r\n\r\n`);
    await c.until(() => c.data.includes('\r\n\r\n'), 5000);
    for (let i = 0; i < 100 && own.server.watchers.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(own.server.watchers.size, 1, 'the watch is open');
    const started = performance.now();
    await own.close();
    assert.ok(performance.now() - started < 5000, `closing took ${(performance.now() - started).toFixed(0)} ms`);
    assert.ok(await c.waitClosed(1000), 'the connection is closed by the shutdown');
    const parsed = parseResponses(c.data, false);
    assert.equal(parsed.responses.length, 1, `the watch ended with its last chunk: ${JSON.stringify(parsed.rest.slice(-100))}`);
  });

  it('shutdown cuts an HTTP/1.1 watch whose client stopped reading at once', { timeout: 30_000 }, async () => {
    const own = await startTestServer({ http: { idleTimeoutMs: 60_000 } });
    const c = await RawConn.tls(Number(new URL(own.url).port), own.caPem);
    conns.push(c);
    c.socket.pause();
    c.write(`GET ${coll('wire-stop2')}?watch=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${own.token}\r\n\r\n`);
    for (let i = 0; i < 500 && own.server.watchers.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(own.server.watchers.size, 1, 'the watch is open');
    // ~50 MiB of events: the watch's writes block on the client.
    await createBig(own, 'wire-stop2', 200, 250);
    const started = performance.now();
    await own.close();
    const took = performance.now() - started;
    assert.ok(took < 2000, `closing took ${took.toFixed(0)} ms`);
    assert.equal(own.server.watchers.size, 0);
    c.socket.resume();
    assert.ok(await c.until(() => c.closed, 5000), 'the connection is closed');
  });

  it('shutdown cuts at once a watch that had ended (timeout) and still waits for its client to read', { timeout: 30_000 }, async () => {
    const { own } = await ownServer();
    const c = await RawConn.tls(Number(new URL(own.url).port), own.caPem);
    conns.push(c);
    c.socket.pause();
    c.write(`GET ${coll('wire-stop3')}?watch=1&timeoutSeconds=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${own.token}\r\n\r\n`);
    for (let i = 0; i < 500 && own.server.watchers.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await createBig(own, 'wire-stop3', 200, 250);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(own.server.watchers.size, 1, 'timed out, and waiting (30 s) for its client');
    const started = performance.now();
    await own.close();
    const took = performance.now() - started;
    assert.ok(took < 2000, `closing took ${took.toFixed(0)} ms`);
    assert.equal(own.server.watchers.size, 0);
  });

  it('a watch that ended with less than a socket\'s high-water mark unsent is cut too, when its client never reads it', { timeout: 60_000 }, async () => {
    const { own, sockets } = await ownServer({ watch: { queueCapacity: 100_000, bookmarkIntervalMs: 60_000, endDrainMs: 1000 } });
    try {
      const c = await RawConn.tls(Number(new URL(own.url).port), own.caPem);
      conns.push(c);
      c.socket.pause();
      c.write(`GET ${coll('wire-tail')}?watch=1&timeoutSeconds=20 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${own.token}\r\n\r\n`);
      for (let i = 0; i < 500 && own.server.watchers.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const srv = sockets[0];
      const started = performance.now();
      // 12 KiB events until the kernel takes no more (bytes still unsent 300 ms later: its buffers have stopped
      // growing): what is left unsent is under the high-water mark, so no write waits.
      const unsent = async (ms: number) => { await new Promise((r) => setTimeout(r, ms)); return srv.writableLength > 0; };
      await createBig(own, 'wire-tail', 3000, 12, async () => (await unsent(5)) && (await unsent(300)));
      assert.ok(srv.writableLength > 0 && srv.writableLength < srv.writableHighWaterMark, `${srv.writableLength} bytes unsent`);
      assert.ok(performance.now() - started < 18_000, 'filled before the watch times out');
      for (let i = 0; i < 2500 && own.server.watchers.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(own.server.watchers.size, 0, 'the watch ended (20 s) and was cut (1 s)');
      assert.equal(srv.destroyed, true, 'its connection is closed');
    } finally {
      await own.close();
    }
  });

  it('an HTTP/2 watch blocked on a client that reads nothing ends once the client resets its stream', async () => {
    const rv = await listRV('wire-h2reset');
    // A window of 0: the server can send no DATA, so its writes back up at once.
    const session = http2.connect(s.url, { ca: s.caPem, settings: { initialWindowSize: 0 } });
    session.on('error', () => {});
    try {
      const stream = session.request({ ':path': `${coll('wire-h2reset')}?watch=1&resourceVersion=${rv}`, authorization: `Bearer ${s.token}`, accept: 'application/json' });
      stream.on('error', () => {});
      await new Promise<void>((resolve) => stream.once('response', () => resolve()));
      const open = s.server.watchers.size;
      // 80 KiB of events: a first write of up to 64 KiB backs up; the rest stays queued behind it.
      const big = 'x'.repeat(8 << 10);
      for (let i = 0; i < 10; i++) {
        const r = await s.request('POST', coll('wire-h2reset'), { body: { ...llama(`big-${i}`), metadata: { name: `big-${i}`, annotations: { pad: big } } } });
        assert.equal(r.status, 201, r.body);
      }
      await new Promise((r) => setTimeout(r, 100));
      stream.close(http2.constants.NGHTTP2_CANCEL);
      for (let i = 0; i < 200 && s.server.watchers.size >= open; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(s.server.watchers.size, open - 1, 'the watch ended on the server');
    } finally {
      session.destroy();
    }
  });

  /** Polls (bounded) until the server holds `n` watches; returns how long that took. */
  const untilWatches = async (n: number, ms: number): Promise<number> => {
    const from = performance.now();
    while (s.server.watchers.size !== n && performance.now() - from < ms) await new Promise((r) => setTimeout(r, 10));
    assert.equal(s.server.watchers.size, n, 'watches open on the server');
    return performance.now() - from;
  };
  it('an HTTP/2 watch whose client reads nothing is reset once its timeoutSeconds passed and a second more', { timeout: 20_000 }, async () => {
    const rv = await listRV('wire-h2stuck');
    const open = s.server.watchers.size;
    const session = http2.connect(s.url, { ca: s.caPem, settings: { initialWindowSize: 0 } });
    session.on('error', () => {});
    try {
      const stream = session.request({ ':path': `${coll('wire-h2stuck')}?watch=1&resourceVersion=${rv}&timeoutSeconds=1`, authorization: `Bearer ${s.token}`, accept: 'application/json' });
      stream.on('error', () => {});
      const closed = new Promise<number>((resolve) => stream.once('close', () => resolve(stream.rstCode ?? -1)));
      await new Promise<void>((resolve) => stream.once('response', () => resolve()));
      const started = performance.now();
      await createBig(s, 'wire-h2stuck', 10, 8);
      assert.equal(await closed, http2.constants.NGHTTP2_CANCEL, 'the server reset the stream');
      const took = performance.now() - started;
      assert.ok(took > 1500 && took < 6000, `reset after ${took.toFixed(0)} ms (1 s timeout + 1 s to drain)`);
      await untilWatches(open, 2000);
      assert.equal(session.destroyed, false, 'the connection itself stays');
    } finally {
      session.destroy();
    }
  });

  it('an HTTP/1.1 watch whose client stopped reading is cut once its timeoutSeconds passed and a second more', { timeout: 30_000 }, async () => {
    const rv = await listRV('wire-h1stuck');
    const open = s.server.watchers.size;
    const c = await conn();
    c.socket.pause();
    c.write(get('GET', `${coll('wire-h1stuck')}?watch=1&resourceVersion=${rv}&timeoutSeconds=3`));
    await untilWatches(open + 1, 5000);
    const started = performance.now();
    // ~50 MiB of events (annotations are capped at 256 KiB): more than loopback's socket buffers take.
    await createBig(s, 'wire-h1stuck', 200, 250);
    const took = (performance.now() - started) + await untilWatches(open, 8000);
    assert.ok(took < 10_000, `cut after ${took.toFixed(0)} ms`);
    c.socket.resume();
    assert.ok(await c.until(() => c.closed, 5000), 'the connection is closed');
  });

  describe('watchers with different selectors, over HTTP/1.1 and HTTP/2 (property-based)', () => {
    type Color = 'brown' | 'white' | 'black' | undefined;
    type Op = { op: 'create' | 'relabel'; name: string; color: Color } | { op: 'delete'; name: string };
    const colors = fc.constantFrom<Color>('brown', 'white', 'black', undefined);
    const names = fc.constantFrom('n1', 'n2', 'n3');
    const ops = fc.array(fc.oneof(
      fc.record({ op: fc.constant('create' as const), name: names, color: colors }),
      fc.record({ op: fc.constant('relabel' as const), name: names, color: colors }),
      fc.record({ op: fc.constant('delete' as const), name: names }),
    ), { minLength: 1, maxLength: 12 });
    const selectors: [string, (c: Color) => boolean][] = [
      ['', () => true],
      ['color=brown', (c) => c === 'brown'],
      ['color!=brown', (c) => c !== 'brown'],
      ['color in (brown,white)', (c) => c === 'brown' || c === 'white'],
      ['color', (c) => c !== undefined],
    ];
    let run = 0;

    it('each gets the events its selector makes of the writes, and both protocols the same bytes', async () => {
      await fc.assert(fc.asyncProperty(ops, async (script) => {
        const ns = `wire-fan-${run++}`;
        const rv = await listRV(ns);
        const headers = { authorization: `Bearer ${s.token}`, accept: 'application/json' };
        const open = async (selector: string) => {
          const path = `${coll(ns)}?watch=1&resourceVersion=${rv}${selector ? `&labelSelector=${encodeURIComponent(selector)}` : ''}`;
          // Two HTTP/1.1 watchers (both take the shared line), one HTTP/2 watcher (res.write).
          const ws = [await s.stream(path), await s.stream(path), await h2.stream(path, headers)];
          streams.push(...ws);
          for (const w of ws) assert.equal(w.status, 200);
          return ws;
        };
        const watchers = await Promise.all(selectors.map(([sel]) => open(sel)));
        // The model: what upstream's cacheWatcher makes of each write for a selector (leaving it is DELETED).
        const live = new Map<string, Color>();
        const expected: { type: string; name: string }[][] = selectors.map(() => []);
        const step = (name: string, before: Color | null, now: Color | null) => selectors.forEach(([, matches], i) => {
          const was = before !== null && matches(before);
          const is = now !== null && matches(now);
          const type = was && is ? 'MODIFIED' : is ? 'ADDED' : was ? 'DELETED' : undefined;
          if (type) expected[i].push({ type, name });
        });
        const write = async (o: Op) => {
          const exists = live.has(o.name);
          if (o.op === 'create' && !exists) {
            await create(ns, o.name, o.color ? { color: o.color } : {});
            step(o.name, null, o.color);
            live.set(o.name, o.color);
          } else if (o.op === 'relabel' && exists && live.get(o.name) !== o.color) {
            const r = await s.request('PATCH', `${coll(ns)}/${o.name}`, { body: { metadata: { labels: { color: o.color ?? null } } }, contentType: 'application/merge-patch+json' });
            assert.equal(r.status, 200, r.body);
            step(o.name, live.get(o.name)!, o.color);
            live.set(o.name, o.color);
          } else if (o.op === 'delete' && exists) {
            const r = await s.request('DELETE', `${coll(ns)}/${o.name}`);
            assert.equal(r.status, 200, r.body);
            step(o.name, live.get(o.name)!, null);
            live.delete(o.name);
          }
        };
        for (const o of script) await write(o);
        // Two last writes that every selector sees at least one of: nothing can be missing before them.
        await write({ op: 'create', name: 'end-brown', color: 'brown' });
        await write({ op: 'create', name: 'end-none', color: undefined });
        for (const [i, ws] of watchers.entries()) {
          const want = expected[i];
          const got: string[][] = [];
          for (const w of ws) {
            const lines: string[] = [];
            while (lines.length < want.length) lines.push(await w.next(5000));
            got.push(lines);
            w.close();
          }
          const events = got[0].map((l) => JSON.parse(l) as Event);
          assert.deepEqual(events.map((e) => ({ type: e.type, name: e.object.metadata.name })), want, `selector ${JSON.stringify(selectors[i][0])}`);
          const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
          assert.deepEqual(rvs, [...rvs].sort((a, b) => a - b), 'in resourceVersion order');
          assert.deepEqual(got[1], got[0], 'the second HTTP/1.1 watcher: the same bytes');
          assert.deepEqual(got[2], got[0], 'the HTTP/2 watcher: the same bytes');
        }
      }), { seed: 20261124, numRuns: 25, endOnFailure: true });
    });
  });
});
