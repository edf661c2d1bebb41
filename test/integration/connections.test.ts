// Connection abuse over raw sockets: idle, half-open and slow clients are timed out the way
// kube-apiserver's secure serving does it (k8s.io/apiserver pkg/server/secure_serving.go: read-header
// 32 s, idle 90 s, 1 MiB of headers), a quiet watch is never cut, and whatever the server writes at
// the HTTP level is a metav1.Status. Small limits keep it fast; every wait is bounded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { HttpLimits } from '../../src/server/server.js';
import { parseResponses, RawConn, type RawResponse } from '../helpers/rawHttp1.js';
import { startTestServer, type Stream, type TestServer } from '../helpers/testServer.js';

const API = '/apis/farm.example.com/v1alpha';
const NS = 'conn';
const coll = `${API}/namespaces/${NS}/llamas`;
/** Distinct values, so a test can tell which limit closed a connection. */
const LIMITS: HttpLimits = { handshakeTimeoutMs: 500, readHeaderTimeoutMs: 700, bodyTimeoutMs: 1200, idleTimeoutMs: 1800, maxHeaderBytes: 1 << 20 };
/**
 * How late a timeout may fire: Node checks header deadlines periodically (about once a second) and closes
 * keep-alive sockets 1 s after keepAliveTimeout; at kube's 32 s / 90 s that second does not matter.
 */
const SLACK_MS = 1500;
const KiB = 1024;

let s: TestServer;
let port: number;

before(async () => {
  s = await startTestServer({ http: LIMITS });
  port = Number(new URL(s.url).port);
});
after(async () => { await s.close(); });

const show = (x: string) => JSON.stringify(x.length > 400 ? `${x.slice(0, 400)}…(${x.length} chars)` : x);

interface StatusJson { kind: string; apiVersion: string; status: string; code: number; reason?: string; message?: string }

/** A response the server wrote must be a metav1.Status whose code is the HTTP status. */
function assertStatus(r: RawResponse, label: string): StatusJson {
  let st: StatusJson;
  try {
    st = JSON.parse(r.body) as StatusJson;
  } catch {
    assert.fail(`${label}: the response is not a Status (body is not JSON): ${show(r.raw)}`);
  }
  assert.equal(st.kind, 'Status', `${label}: ${show(r.raw)}`);
  assert.equal(st.apiVersion, 'v1', `${label}: ${show(r.raw)}`);
  assert.equal(st.status, 'Failure', `${label}: ${show(r.raw)}`);
  assert.equal(st.code, r.status, `${label}: Status.code differs from the HTTP status: ${show(r.raw)}`);
  assert.match(r.headers['content-type'] ?? '', /^application\/json/, `${label}: ${show(r.raw)}`);
  return st;
}

/** Everything the server wrote on `conn` is complete Status responses (nothing at all is fine too). */
function assertOnlyStatuses(conn: RawConn, label: string, allowedCodes: (code: number) => boolean): StatusJson[] {
  const { responses, rest } = parseResponses(conn.data, conn.closed);
  assert.equal(rest, '', `${label}: the server wrote something that is not a complete HTTP response: ${show(rest)}`);
  return responses.map((r) => {
    const st = assertStatus(r, label);
    assert.ok(allowedCodes(r.status), `${label}: status ${r.status}: ${show(r.raw)}`);
    return st;
  });
}

const clientError = (code: number) => code >= 400 && code < 500;
const head = (method: string, path: string, extra = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.token}\r\n${extra}`;
const llamaJson = (name: string) => JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 100, height: 1.5 } });

async function assertNotStored(name: string): Promise<void> {
  const r = await s.request('GET', `${coll}/${name}`);
  assert.equal(r.status, 404, `llama ${name} was stored: ${r.body.slice(0, 200)}`);
}

// ---------------------------------------------------------------------------------------------
// timeouts
// ---------------------------------------------------------------------------------------------

describe('timeouts', () => {
  test('a TLS connection that sends nothing is closed after the read-header timeout, silently or with a Status', async () => {
    const c = await RawConn.tls(port, s.caPem);
    try {
      const closed = await c.waitClosed(LIMITS.readHeaderTimeoutMs + SLACK_MS);
      const elapsed = performance.now() - c.openedAt;
      assert.ok(closed, `still open after ${elapsed.toFixed(0)} ms (read-header timeout ${LIMITS.readHeaderTimeoutMs} ms)`);
      assert.ok(elapsed >= LIMITS.readHeaderTimeoutMs - 250, `closed after ${elapsed.toFixed(0)} ms, before the read-header timeout`);
      assertOnlyStatuses(c, 'idle TLS connection', (code) => code === 408);
    } finally { c.destroy(); }
  });

  for (const [label, bytes] of [
    ['sends nothing', Buffer.alloc(0)],
    // The 5-byte header of a handshake record announcing 512 bytes that never come.
    ['sends half a ClientHello record', Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])],
  ] as const) {
    test(`a TCP connection that ${label} is closed after the handshake timeout`, async () => {
      const c = await RawConn.tcp(port);
      try {
        if (bytes.length) c.write(bytes);
        const closed = await c.waitClosed(LIMITS.handshakeTimeoutMs + SLACK_MS);
        const elapsed = performance.now() - c.openedAt;
        assert.ok(closed, `still open after ${elapsed.toFixed(0)} ms (handshake timeout ${LIMITS.handshakeTimeoutMs} ms)`);
        assert.ok(elapsed >= LIMITS.handshakeTimeoutMs - 250, `closed after ${elapsed.toFixed(0)} ms, before the handshake timeout`);
      } finally { c.destroy(); }
    });
  }

  test('slowloris: headers trickled one byte at a time never complete; closed after the read-header timeout', async () => {
    const c = await RawConn.tls(port, s.caPem);
    const request = `${head('GET', coll)}X-Slow: ${'z'.repeat(10_000)}\r\n\r\n`;
    let sent = 0;
    // Each byte comes well within any per-read inactivity timeout; only a deadline on the whole header stops it.
    const timer = setInterval(() => { if (sent < request.length) c.write(request[sent++]); }, 50);
    try {
      const closed = await c.waitClosed(LIMITS.readHeaderTimeoutMs + SLACK_MS);
      const elapsed = performance.now() - c.openedAt;
      assert.ok(closed, `still open after ${elapsed.toFixed(0)} ms with ${sent} header bytes trickled`);
      assert.ok(sent < request.length, 'the whole header went through; the test proves nothing');
      assert.ok(elapsed >= LIMITS.readHeaderTimeoutMs - 250, `closed after ${elapsed.toFixed(0)} ms, before the read-header timeout`);
      assertOnlyStatuses(c, 'slowloris', (code) => code === 408 || code === 400);
    } finally { clearInterval(timer); c.destroy(); }
  });

  for (const mode of ['stalls', 'trickles a byte every 50 ms'] as const) {
    test(`a chunked POST body that never ends (${mode}) gets a 504 Timeout Status or a close after the body timeout; nothing is stored`, async () => {
      const name = mode === 'stalls' ? 'endless-stalled' : 'endless-trickled';
      const c = await RawConn.tls(port, s.caPem);
      const start = llamaJson(name).slice(0, -1); // without its closing brace
      c.write(`${head('POST', coll, 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n')}\r\n${start.length.toString(16)}\r\n${start}\r\n`);
      const sentAt = performance.now();
      const timer = mode === 'stalls' ? undefined : setInterval(() => { if (c.data.length === 0) c.write('1\r\n \r\n'); }, 50);
      try {
        await c.until(() => c.closed || c.data.length > 0, LIMITS.bodyTimeoutMs + SLACK_MS);
        const answeredAfter = performance.now() - sentAt;
        assert.ok(c.closed || c.data.length > 0, `no answer and no close ${answeredAfter.toFixed(0)} ms into a body that never ends (body timeout ${LIMITS.bodyTimeoutMs} ms)`);
        assert.ok(answeredAfter >= LIMITS.bodyTimeoutMs - 250, `answered after ${answeredAfter.toFixed(0)} ms, before the body timeout (another limit cut the upload?)`);
        clearInterval(timer);
        const got = await c.response(SLACK_MS);
        const statuses = assertOnlyStatuses(c, 'endless body', (code) => code === 504);
        if (statuses.length) {
          assert.equal(statuses[0].reason, 'Timeout');
          assert.ok(await c.waitClosed(SLACK_MS), 'the connection stays open after the 504 (the rest of the body is unread)');
        }
        assert.ok(got.responses.length > 0 || c.closed);
      } finally { clearInterval(timer); c.destroy(); }
      await assertNotStored(name);
    });
  }

  test('requests answered without reading a body (none sent, half sent: 401, 404, OPTIONS) leave nothing that fails after the body timeout', async () => {
    // Its own server: an uncaughtException from a timer is then blamed on this test, not on the file's before hook.
    const own = await startTestServer({ http: LIMITS });
    const ownPort = Number(new URL(own.url).port);
    const half = llamaJson('never-read');
    const ownHead = (method: string, path: string, auth = true) => `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth ? `Authorization: Bearer ${own.token}\r\n` : ''}`;
    // Content-Length promises the whole body; only half of it comes.
    const partial = (method: string, path: string, auth = true) =>
      `${ownHead(method, path, auth)}Content-Type: application/json\r\nContent-Length: ${half.length}\r\n\r\n${half.slice(0, half.length >> 1)}`;
    const requests = [
      partial('POST', coll, false), partial('POST', `${API}/nothing-here`), partial('OPTIONS', coll), partial('PUT', `${coll}/never-read`),
      ...['OPTIONS', 'PROPFIND', 'POST', 'DELETE'].map((m) => `${ownHead(m, `${coll}/never-read`)}\r\n`),
    ];
    const conns: RawConn[] = [];
    try {
      for (const req of requests) {
        const c = await RawConn.tls(ownPort, own.caPem);
        conns.push(c);
        c.write(req);
      }
      await new Promise((r) => setTimeout(r, LIMITS.bodyTimeoutMs + SLACK_MS));
      for (const [i, c] of conns.entries()) assertOnlyStatuses(c, `request #${i}`, (code) => clientError(code) || code === 504);
      // A timer that throws on an unread body is an uncaughtException: the runner fails this test, a server exits.
      const r = await own.request('GET', '/livez');
      assert.equal(r.status, 200);
      const stored = await own.request('GET', `${coll}/never-read`);
      assert.equal(stored.status, 404, stored.body);
    } finally {
      for (const c of conns) c.destroy();
      await own.close();
    }
  });

  test('an idle keep-alive connection is closed after the idle timeout, not before (nor by the read-header timeout)', async () => {
    const c = await RawConn.tls(port, s.caPem);
    try {
      c.write(`${head('GET', '/livez')}\r\n`);
      const first = await c.response(5000);
      assert.equal(first.responses[0]?.status, 200, `first request: ${show(c.data.toString('latin1'))}`);
      // Longer than the read-header timeout: a keep-alive connection between requests is idle, not reading headers.
      const pause = Math.round(LIMITS.idleTimeoutMs * 0.6);
      assert.ok(pause > LIMITS.readHeaderTimeoutMs + 200);
      await c.waitClosed(pause);
      assert.ok(!c.closed, `closed ${(c.closedAt! - c.openedAt).toFixed(0)} ms after opening, ${pause} ms into an idle period of ${LIMITS.idleTimeoutMs} ms`);
      c.write(`${head('GET', '/livez')}\r\n`);
      await c.until(() => c.closed || parseResponses(c.data, false).responses.length >= 2, 5000);
      const answeredAt = performance.now();
      assert.equal(parseResponses(c.data, c.closed).responses[1]?.status, 200, `second request on the connection: ${show(c.data.toString('latin1'))}`);
      const closed = await c.waitClosed(LIMITS.idleTimeoutMs + SLACK_MS);
      const idle = performance.now() - answeredAt;
      assert.ok(closed, `still open after ${idle.toFixed(0)} ms idle (idle timeout ${LIMITS.idleTimeoutMs} ms)`);
      assert.ok(idle >= LIMITS.idleTimeoutMs - 100, `closed after ${idle.toFixed(0)} ms idle, before the idle timeout of ${LIMITS.idleTimeoutMs} ms`);
      assert.equal(parseResponses(c.data, true).responses.length, 2, 'the server wrote something when it closed the idle connection');
    } finally { c.destroy(); }
  });

  test('a watch with no events for longer than every timeout stays open and then delivers the event', async () => {
    const w: Stream = await s.stream(`${coll}?watch=true`);
    try {
      assert.equal(w.status, 200);
      let ended = false;
      void w.ended.then(() => { ended = true; });
      const quietMs = Math.max(...Object.values(LIMITS).filter((v) => v < 60_000)) + SLACK_MS + 500;
      await new Promise((r) => setTimeout(r, quietMs));
      assert.equal(ended, false, `the quiet watch was closed within ${quietMs} ms`);
      assert.deepEqual(w.lines, [], 'the watch sent something while nothing happened');
      const created = await s.request('POST', coll, { body: llamaJson('after-the-quiet') });
      assert.equal(created.status, 201, created.body);
      const deadline = Date.now() + 5000;
      while (w.lines.length === 0 && !ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.ok(w.lines.length > 0, `no event after the quiet period (stream ended: ${ended})`);
      const ev = JSON.parse(w.lines[0]) as { type: string; object: { metadata: { name: string } } };
      assert.equal(ev.type, 'ADDED');
      assert.equal(ev.object.metadata.name, 'after-the-quiet');
    } finally { w.close(); }
  });
});

describe('many idle sockets', () => {
  let roomy: TestServer;
  // Long timeouts here: the point is that held sockets do not lock others out while they last.
  before(async () => { roomy = await startTestServer({ http: { ...LIMITS, handshakeTimeoutMs: 30_000, readHeaderTimeoutMs: 30_000 } }); });
  after(async () => { await roomy.close(); });

  test('while 200 idle sockets (100 after the handshake, 100 before it) are held open, an authenticated GET answers promptly', async () => {
    const p = Number(new URL(roomy.url).port);
    const held: RawConn[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        held.push(...await Promise.all(Array.from({ length: 10 }, () => RawConn.tls(p, roomy.caPem))));
        held.push(...await Promise.all(Array.from({ length: 10 }, () => RawConn.tcp(p))));
      }
      assert.equal(held.length, 200);
      const created = await roomy.request('POST', coll, { body: llamaJson('busy') });
      assert.equal(created.status, 201, created.body);
      const t0 = performance.now();
      const r = await roomy.request('GET', `${coll}/busy`);
      const ms = performance.now() - t0;
      assert.equal(r.status, 200, r.body);
      assert.ok(ms < 1000, `GET took ${ms.toFixed(0)} ms with 200 idle sockets held`);
      const open = held.filter((c) => !c.closed).length;
      assert.equal(open, 200, `only ${open} of the 200 idle sockets were still open during the GET`);
    } finally {
      for (const c of held) c.destroy();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// headers and framing
// ---------------------------------------------------------------------------------------------

describe('headers', () => {
  test('a 100 KiB label selector in the URL is served (not 431)', async () => {
    const values: string[] = [];
    for (let i = 0; values.join(',').length < 100 * KiB; i++) values.push(`llama-${String(i).padStart(6, '0')}`);
    const selector = `name in (${values.join(',')})`;
    const r = await s.request('GET', `${coll}?labelSelector=${encodeURIComponent(selector)}`);
    assert.equal(r.status, 200, `${r.status} ${r.body.slice(0, 300)}`);
    assert.equal(r.json<{ kind: string }>().kind, 'LlamaList');
  });

  for (const kib of [500, 1000]) {
    test(`a request with ${kib} KiB of headers is served (the limit is 1 MiB)`, async () => {
      const headers: Record<string, string> = {};
      for (let i = 0; i < kib / 100; i++) headers[`x-filler-${i}`] = 'f'.repeat(100 * KiB - 20);
      const r = await s.request('GET', coll, { headers });
      assert.equal(r.status, 200, `${r.status} ${r.body.slice(0, 300)}`);
    });
  }

  test('more than 1 MiB of headers → 431 whose body, if any, is a Status (or a close with nothing written)', async () => {
    const c = await RawConn.tls(port, s.caPem);
    try {
      let filler = '';
      for (let i = 0; i < 11; i++) filler += `X-Filler-${i}: ${'f'.repeat(100 * KiB)}\r\n`;
      c.write(`${head('GET', coll)}${filler}Connection: close\r\n\r\n`);
      await c.response(5000);
      const { responses, rest } = parseResponses(c.data, c.closed);
      assert.ok(responses.length > 0 || c.closed, 'neither an answer nor a close within 5 s');
      assert.equal(rest, '', `not a complete HTTP response: ${show(rest)}`);
      for (const r of responses) {
        assert.equal(r.status, 431, show(r.raw));
        if (r.body.length) assertStatus(r, '> 1 MiB of headers');
      }
    } finally { c.destroy(); }
  });
});

describe('malformed and unusual requests get a Status or a silent close, never a 5xx', () => {
  const post = (extra: string, body: string) => `${head('POST', coll, `Content-Type: application/json\r\nConnection: close\r\n${extra}`)}\r\n${body}`;
  const body = (name: string) => llamaJson(name);
  // Built when the tests run: the requests carry the test server's token.
  const cases: [string, () => string, string?][] = [
    ['non-numeric Content-Length', () => post('Content-Length: abc\r\n', body('framing-1')), 'framing-1'],
    ['negative Content-Length', () => post('Content-Length: -1\r\n', body('framing-2')), 'framing-2'],
    ['two different Content-Length values', () => post(`Content-Length: ${body('framing-3').length}\r\nContent-Length: 5\r\n`, body('framing-3')), 'framing-3'],
    ['Content-Length and Transfer-Encoding together', () => post(`Content-Length: 5\r\nTransfer-Encoding: chunked\r\n`, `${body('framing-4').length.toString(16)}\r\n${body('framing-4')}\r\n0\r\n\r\n`), 'framing-4'],
    ['unknown Transfer-Encoding', () => post('Transfer-Encoding: bogus\r\n', body('framing-5')), 'framing-5'],
    ['bad chunk size', () => post('Transfer-Encoding: chunked\r\n', `zz\r\n${body('framing-6')}\r\n0\r\n\r\n`), 'framing-6'],
    ['a control character in a header value', () => post(`Content-Length: ${body('framing-7').length}\r\nX-Test: a\x01b\r\n`, body('framing-7')), 'framing-7'],
    ['NUL in a header value', () => post(`Content-Length: ${body('framing-8').length}\r\nX-Test: a\x00b\r\n`, body('framing-8')), 'framing-8'],
    ['a header line without a colon', () => post(`Content-Length: ${body('framing-9').length}\r\nX-Broken\r\n`, body('framing-9')), 'framing-9'],
    ['a control character in the path', () => `${head('GET', `${coll}/a\x01b`, 'Connection: close\r\n')}\r\n`],
    ['an unknown method (FOO)', () => `${head('FOO', '/apis', 'Connection: close\r\n')}\r\n`],
    ...['PROPFIND', 'SEARCH', 'OPTIONS', 'TRACE', 'MKCOL', 'LOCK'].map((m): [string, () => string] => [`${m} on a collection`, () => `${head(m, coll, 'Connection: close\r\n')}\r\n`]),
    ['CONNECT to a path', () => `${head('CONNECT', '/apis', 'Connection: close\r\n')}\r\n`],
  ];
  for (const [label, raw, created] of cases) {
    test(label, async () => {
      const c = await RawConn.tls(port, s.caPem);
      try {
        c.write(raw());
        await c.response(3000);
        assert.ok(c.closed || parseResponses(c.data, false).responses.length > 0, `${label}: neither an answer nor a close within 3 s`);
        await c.waitClosed(500); // a response without Content-Length runs to the close
        assertOnlyStatuses(c, label, clientError);
      } finally { c.destroy(); }
      if (created) await assertNotStored(created);
    });
  }
});
