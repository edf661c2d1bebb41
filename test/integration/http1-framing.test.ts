// HTTP/1.x framing as Go's net/http server reads a request (server.go conn.readRequest, request.go
// readRequest, transfer.go), checked by generating raw requests and comparing the real server's answer
// with what Go answers, on every HTTP/1 path to the port: ALPN http/1.1, no ALPN (the HTTP/2 server's
// fallback), HTTP/1.1 and HTTP/1.0. Go's rules as the oracle here:
//   - the head (request line + header lines + the empty line) may be MaxHeaderBytes + 4096 bytes
//     (initialReadLimitSize); more → 431, however the bytes are split into fields;
//   - more than one Host → 400; HTTP/1.1 without Host → 400 "missing required Host header";
//     a Host with a byte outside httpguts.ValidHostHeader's set → 400 "malformed Host header";
//   - after a refusal nothing more is read from the connection: a pipelined request is never served.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { parseResponses, RawConn, type RawResponse } from '../helpers/rawHttp1.js';
import { Http2Client } from '../helpers/http2Client.js';
import { block, F, frame, openRaw, T } from '../helpers/h2frames.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const coll = '/apis/farm.example.com/v1alpha/namespaces/framing/llamas';
/** kube's MaxHeaderBytes (1 MiB) + Go's 4096 bytes of bufio slop: the most of a head Go reads. */
const GO_HEAD_LIMIT = (1 << 20) + 4096;

let s: TestServer;
let port: number;
before(async () => {
  s = await startTestServer();
  port = Number(new URL(s.url).port);
});
after(async () => { await s.close(); });

const show = (x: string) => JSON.stringify(x.length > 300 ? `${x.slice(0, 300)}…(${x.length} chars)` : x);

/** One generated request: its parts, rendered by `render`. */
interface Gen {
  alpn: boolean;
  version: '1.0' | '1.1';
  absoluteForm: boolean;
  /** The Host fields' name spelling and values (none, one, or several). */
  hostName: string;
  hosts: string[];
  /** Where among the other fields the Host fields go. */
  hostAt: number;
  /** Bytes of the query string (the request line counts too). */
  query: string;
  fields: [string, string][];
}

function render(g: Gen): string {
  const target = `${g.absoluteForm ? 'https://example.com' : ''}${coll}${g.query}`;
  const fields: [string, string][] = [['Authorization', `Bearer ${s.token}`], ...g.fields];
  fields.splice(Math.min(g.hostAt, fields.length), 0, ...g.hosts.map((h): [string, string] => [g.hostName, h]));
  return `GET ${target} HTTP/${g.version}\r\n${fields.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
}

type Verdict = { status: 200 } | { status: 400 | 431; message: string };

/** What Go's server answers to `head` (as rendered from `g`). */
function goVerdict(g: Gen, head: string): Verdict {
  if (head.length > GO_HEAD_LIMIT) return { status: 431, message: 'request header fields too large' };
  // textproto trims a value's surrounding blanks.
  const hosts = g.hosts.map((h) => h.replace(/^[ \t]+|[ \t]+$/g, ''));
  if (hosts.length > 1) return { status: 400, message: 'too many Host headers' };
  if (g.version === '1.1' && hosts.length === 0) return { status: 400, message: 'missing required Host header' };
  if (hosts.length === 1 && !/^[0-9A-Za-z!$%&'()*+,\-.:;=[\]_~]*$/.test(hosts[0])) return { status: 400, message: 'malformed Host header' };
  return { status: 200 };
}

/** Sends `g` and a pipelined second request; checks the server answers both as Go would. */
async function checkAgainstGo(g: Gen): Promise<void> {
  const head = render(g);
  const want = goVerdict(g, head);
  const next = `GET ${coll} HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer ${s.token}\r\nConnection: close\r\n\r\n`;
  const c = await RawConn.tls(port, s.caPem, g.alpn);
  try {
    c.write(head + next);
    const closed = await c.waitClosed(15_000);
    const label = `${g.alpn ? 'ALPN http/1.1' : 'no ALPN'}, HTTP/${g.version}, ${head.length} head bytes, Host ${JSON.stringify(g.hosts)}`;
    assert.ok(closed, `${label}: the connection is still open after 15 s`);
    const { responses, rest } = parseResponses(c.data, true);
    assert.equal(rest, '', `${label}: not whole responses: ${show(rest)}`);
    assert.ok(responses.length > 0, `${label}: no answer`);
    const [first] = responses;
    assert.equal(first.status, want.status, `${label}: ${show(first.raw)}`);
    if (want.status !== 200) {
      assertStatus(first, want.message, label);
      assert.equal(responses.length, 1, `${label}: a request after a refused one was served`);
    } else {
      // HTTP/1.0 without keep-alive closes after its answer: the second request is never read (as Go).
      assert.deepEqual(responses.map((r) => r.status), g.version === '1.1' ? [200, 200] : [200], label);
    }
  } finally { c.destroy(); }
}

function assertStatus(r: RawResponse, message: string, label: string): void {
  const st = JSON.parse(r.body) as { kind: string; code: number; message: string };
  assert.equal(st.kind, 'Status', `${label}: ${show(r.raw)}`);
  assert.equal(st.code, r.status, label);
  assert.equal(st.message, message, label);
  assert.equal(r.headers.connection, 'close', label);
}

const hostByte = fc.constantFrom(...'abcxyzABZ0189.-:[]_~!$&\'()*+,;=%', ...' \t/?#@"<>\\^`{|}', '\x80', '\xe9', '\xff');
const hostValue = fc.oneof(
  fc.constantFrom('example.com', '127.0.0.1:443', '[::1]:8443', '', ' example.com ', 'exa mple.com', 'example.com/x', 'user@example.com'),
  fc.string({ unit: hostByte, maxLength: 12 }),
);
const hostFields = {
  hostName: fc.constantFrom('Host', 'host', 'HOST'),
  hosts: fc.oneof({ weight: 1, arbitrary: fc.constant<string[]>([]) }, { weight: 4, arbitrary: fc.array(hostValue, { minLength: 1, maxLength: 1 }) }, { weight: 1, arbitrary: fc.array(hostValue, { minLength: 2, maxLength: 3 }) }),
  hostAt: fc.nat({ max: 4 }),
};
const paths = { alpn: fc.boolean(), version: fc.constantFrom<Gen['version']>('1.0', '1.1'), absoluteForm: fc.boolean() };

/** Fields (and query) that make the head exactly `target` bytes: one big field, many small ones, or a long request line. */
function sized(base: Gen, shape: 'one big' | 'many small' | 'long request line', smallValue: number, target: number): Gen {
  const g: Gen = { ...base, fields: [], query: '' };
  const left = () => target - render(g).length;
  if (shape === 'long request line') g.query = `?pad=${'q'.repeat(Math.max(0, left() - 5))}`;
  else if (shape === 'many small') {
    // `X-F<n>: <value>\r\n` lines; the last one absorbs the remainder.
    let room = left();
    for (let i = 0; room > 3 * (smallValue + 12); i++) {
      g.fields.push([`X-F${i}`, 'v'.repeat(smallValue)]);
      room -= `X-F${i}: \r\n`.length + smallValue;
    }
  }
  const rest = left() - 'X-Last: \r\n'.length;
  if (rest >= 0) g.fields.push(['X-Last', 'z'.repeat(rest)]);
  return g;
}

describe('HTTP/1.x framing against Go\'s net/http', () => {
  test('Host present, absent, empty, repeated or malformed, on HTTP/1.1 and HTTP/1.0, with and without ALPN, origin and absolute form', async () => {
    const requests: fc.Arbitrary<Omit<Gen, 'query' | 'fields'>> = fc.record({ ...paths, ...hostFields });
    await fc.assert(fc.asyncProperty(requests, async (p) => {
      await checkAgainstGo({ ...p, query: '', fields: [['Accept', 'application/json']] });
    }), { numRuns: 150 });
  });

  test('a head around MaxHeaderBytes + 4096 bytes: 431 exactly past it, however the bytes are split (request line included)', async () => {
    const delta = fc.oneof(fc.integer({ min: -24, max: 24 }), fc.integer({ min: -6000, max: 6000 }));
    await fc.assert(fc.asyncProperty(
      fc.record({ ...paths, shape: fc.constantFrom('one big' as const, 'many small' as const, 'long request line' as const), smallValue: fc.integer({ min: 0, max: 40 }), delta }),
      async (p) => {
        const base: Gen = { alpn: p.alpn, version: p.version, absoluteForm: p.absoluteForm, hostName: 'Host', hosts: ['example.com'], hostAt: 0, query: '', fields: [] };
        const g = sized(base, p.shape, p.smallValue, GO_HEAD_LIMIT + p.delta);
        assert.equal(render(g).length, GO_HEAD_LIMIT + p.delta, 'the generator missed its size');
        await checkAgainstGo(g);
      },
    ), { numRuns: 40 });
  });

  test('every field is kept, as Go keeps them: the 5,000th field of a request still counts', async () => {
    // Authorization last, after 4,999 fillers: node:http alone keeps 1,000 fields (Node 20 drops the
    // rest, so this was a 401; Node 24 refuses with 431).
    const fillers = Array.from({ length: 4999 }, (_, i) => `X-F${i}: v\r\n`).join('');
    const c = await RawConn.tls(port, s.caPem);
    try {
      c.write(`GET ${coll} HTTP/1.1\r\nHost: example.com\r\n${fillers}Authorization: Bearer ${s.token}\r\nConnection: close\r\n\r\n`);
      const { responses } = await c.response(10_000);
      assert.equal(responses[0]?.status, 200, show(responses[0]?.raw ?? c.data.toString('latin1')));
    } finally { c.destroy(); }
  });

  test('a refused head leaves nothing behind: the next connections (which reuse its parser) keep every field', async () => {
    for (let i = 0; i < 3; i++) {
      const bad = await RawConn.tls(port, s.caPem);
      bad.write(`GET ${coll} HTTP/1.1\r\nHost: x\r\n${'X-F: v\r\n'.repeat(200_000)}\r\n`);
      assert.equal((await bad.response(10_000)).responses[0]?.status, 431);
      bad.destroy();
      await bad.waitClosed(1000);
      for (const version of ['1.0', '1.1']) {
        const c = await RawConn.tls(port, s.caPem);
        c.write(`GET ${coll} HTTP/${version}\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nConnection: close\r\n\r\n`);
        const { responses } = await c.response(5000);
        assert.equal(responses[0]?.status, 200, show(responses[0]?.raw ?? ''));
        c.destroy();
      }
    }
  });

  for (const [label, te, version] of [
    ['a Transfer-Encoding other than chunked alone ("gzip, chunked")', 'gzip, chunked', '1.1'],
    ['Transfer-Encoding on HTTP/1.0 (Go ignores it; llhttp would read a chunked body)', 'chunked', '1.0'],
  ] as const) {
    test(`${label} → 400, nothing stored, nothing more read`, async () => {
      const body = JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'te-smuggled' }, spec: { weight: 100, height: 1.5 } });
      const c = await RawConn.tls(port, s.caPem);
      try {
        c.write(`POST ${coll} HTTP/${version}\r\nHost: example.com\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: ${te}\r\n\r\n` +
          `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\nGET ${coll} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\n`);
        assert.ok(await c.waitClosed(5000), 'still open');
        const { responses } = parseResponses(c.data, true);
        assert.equal(responses.length, 1, show(c.data.toString('latin1')));
        assert.equal(responses[0].status, 400, show(responses[0].raw));
        assertStatus(responses[0], 'unsupported transfer encoding', label);
      } finally { c.destroy(); }
      assert.equal((await s.request('GET', `${coll}/te-smuggled`)).status, 404);
    });
  }
});

describe('HTTP/2: the header list, as Go\'s http2 server counts it', () => {
  // Each field costs its name + value + 32 bytes (RFC 9113 §6.5.2); the server advertises 64 KiB
  // (serving.ts HTTP2_MAX_HEADER_LIST). Go's framer refuses a list over it (ReadMetaHeaders: size >
  // remainSize) with 431 on that stream; nghttp2 resets the stream (ENHANCE_YOUR_CALM). Either way only
  // that stream: the connection serves on. No count of fields applies before the size does.
  test('a list of exactly 64 KiB is served and one byte more is refused alone, in one field or ~1,900', async () => {
    const c = await openRaw(s.url, s.caPem);
    const size = (fs: [string, string][]) => fs.reduce((n, [a, b]) => n + a.length + b.length + 32, 0);
    let id = 1;
    try {
      await c.waitFor((f) => f.type === T.SETTINGS && !(f.flags & F.ACK), 5000, 'the server\'s SETTINGS');
      await fc.assert(fc.asyncProperty(fc.boolean(), fc.integer({ min: -40, max: 40 }), async (tiny, delta) => {
        const fs: [string, string][] = [[':method', 'GET'], [':scheme', 'https'], [':authority', 'example.com'], [':path', coll], ['authorization', `Bearer ${s.token}`]];
        const target = 65536 + delta;
        for (let i = 0; tiny && size(fs) + 40 + 64 < target; i++) fs.push([`x${i.toString(36)}`, '']);
        fs.push(['x-last', 'v'.repeat(target - size(fs) - 32 - 6)]);
        assert.equal(size(fs), target);
        const b = block(fs);
        const parts: Buffer[] = [];
        for (let i = 0; i < b.length; i += 16_000) parts.push(b.subarray(i, i + 16_000));
        const sid = id; id += 2;
        parts.forEach((p, i) => c.write(frame(i === 0 ? T.HEADERS : T.CONTINUATION, (i === 0 ? F.END_STREAM : 0) | (i === parts.length - 1 ? F.END_HEADERS : 0), sid, p)));
        await c.waitFor((f) => (f.stream === sid && (f.type === T.HEADERS || f.type === T.RST_STREAM)) || f.type === T.GOAWAY, 5000, `an answer on stream ${sid}`);
        const o = c.outcome(sid);
        if (target <= 65536) assert.equal(o.status, '200', `${fs.length} fields, ${target} bytes: ${JSON.stringify(o)}`);
        else assert.ok(o.rst === 11 || o.status === '431', `${fs.length} fields, ${target} bytes: ${JSON.stringify(o)}`);
        assert.equal(c.goaway(), undefined, 'the connection was ended');
      }), { numRuns: 30 });
    } finally { c.destroy(); }
  });
});

describe('a crafted head never stalls the server', () => {
  /** Heads Go reads whole (just under the limit) that are costly to take apart, and one just past it. */
  const crafted: [string, () => string][] = [
    ['~210,000 empty fields of one name', () => 'a: \r\n'.repeat(Math.floor((GO_HEAD_LIMIT - 200) / 5))],
    ['~120,000 distinct names', () => { let h = ''; for (let i = 0; h.length < GO_HEAD_LIMIT - 400; i++) h += `x${i.toString(36)}: \r\n`; return h; }],
    ['1,000,000 one-byte fields (4 MB: past the limit)', () => 'a:\r\n'.repeat(1_000_000)],
  ];
  for (const [label, fields] of crafted) {
    test(`${label}: answered, and a probe on another connection answers within 1 s meanwhile`, async (t) => {
      const probe = new Http2Client(s.url, s.caPem);
      const c = await RawConn.tls(port, s.caPem);
      let worst = 0;
      let stop = false;
      const probing = (async () => {
        for (let i = 0; i < 200 && !stop; i++) {
          const t0 = performance.now();
          const r = await probe.request('GET', '/livez', { authorization: `Bearer ${s.token}` });
          assert.equal(r.status, 200);
          worst = Math.max(worst, performance.now() - t0);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();
      try {
        await new Promise((r) => setTimeout(r, 50));
        const t0 = performance.now();
        c.write(`GET ${coll} HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer ${s.token}\r\n${fields()}Connection: close\r\n\r\n`);
        const { responses } = await c.response(20_000);
        const took = performance.now() - t0;
        assert.ok(responses.length === 1, `no answer in 20 s: ${show(c.data.toString('latin1'))}`);
        assert.ok([200, 431].includes(responses[0].status), show(responses[0].raw));
        stop = true;
        await probing;
        t.diagnostic(`${label}: ${responses[0].status} after ${took.toFixed(0)} ms; slowest probe ${worst.toFixed(0)} ms`);
        assert.ok(worst < 1000, `a probe waited ${worst.toFixed(0)} ms`);
      } finally { stop = true; c.destroy(); probe.close(); await probing.catch(() => {}); }
    });
  }
});
