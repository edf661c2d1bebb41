// HTTP/2 as an adversary would speak it. kube-apiserver's aggregator multiplexes every user's requests
// and watches over one connection to us, so for each attack: a probe on a separate connection keeps
// answering promptly, memory stays bounded, the process survives, and a client's mistake is never a
// 5xx. node:http2 clients where they can send the attack; frames written by hand (helpers/h2frames.ts)
// where node:http2 refuses to. Real server over loopback; every loop bounded in count and time.
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { connect, type ClientHttp2Session, type Http2ServerRequest } from 'node:http2';
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { once } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connect as tlsConnect } from 'node:tls';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';
import { Http2Client } from '../../helpers/http2Client.js';
import { rawExchange } from '../../helpers/adversarial.js';
import {
  F, S, T, block, frame, headersFrame, indexed, literal, literalIndexed, openRaw, pingFrame, rstFrame, settingsFrame, u32, windowUpdate,
  type Frame, type RawH2, type RawOptions,
} from '../../helpers/h2frames.js';

/** nghttp2 1.70 (Node 24) turns an overlong request body into a connection error. */
const NGHTTP2_GOAWAY_ON_LONG_BODY = Number((process.versions.nghttp2 ?? '0.0').split('.')[1]) >= 70;

const ns = 'adv-h2';
const coll = `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`;
const BODY_TIMEOUT_MS = 1500;
/** A probe on its own connection must answer within this while an attack runs (2 cores, TLS, one process). */
const PROBE_BOUND_MS = 1000;
/** Issue item 4 (before: 1.3 s): the benchmark's goal is 100 ms p99; one process here, client and server alike. */
const CONCURRENT_LISTS_PROBE_BOUND_MS = 500;
/**
 * Connections take turns (http2Scheduling.ts: 4 starts each a turn): a request on another connection waits
 * for a few turns of one connection's queue, never for the whole of it.
 */
const FAIR_START_BOUND = 200;
const llama = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels }, spec: { color: 'white', weight: 100, height: 1.5 } });

const ERR = { NO_ERROR: 0, PROTOCOL_ERROR: 1, FLOW_CONTROL_ERROR: 3, STREAM_CLOSED: 5, FRAME_SIZE_ERROR: 6, REFUSED_STREAM: 7, CANCEL: 8, COMPRESSION_ERROR: 9, ENHANCE_YOUR_CALM: 11 };

let s: TestServer;
let probeClient: Http2Client;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Memory the server can hold on to: JS heap plus Buffers (external), after a full collection. */
function retained(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}
const MiB = 1 << 20;
/** A baseline once what earlier tests' closed connections held has been freed (closing is asynchronous). */
async function settled(): Promise<number> {
  let last = retained();
  for (let i = 0; i < 30; i++) {
    await sleep(100);
    const now = retained();
    if (Math.abs(now - last) < 2 * MiB) return now;
    last = now;
  }
  return last;
}

before(async () => {
  s = await startTestServer({ http: { bodyTimeoutMs: BODY_TIMEOUT_MS, idleTimeoutMs: 20_000 } });
  probeClient = new Http2Client(s.url, s.caPem);
  for (let i = 0; i < 1000; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => probeClient.request('POST', coll, { ...auth(), 'content-type': 'application/json' }, JSON.stringify(llama(`l-${String(i + j).padStart(4, '0')}`)))
      .then((r) => assert.equal(r.status, 201, r.body))));
  }
});
after(async () => { probeClient?.close(); await s?.close(); });

const auth = () => ({ authorization: `Bearer ${s.token}` });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function withTimeout<V>(p: Promise<V>, ms: number, what: string): Promise<V> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<V>((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: nothing within ${ms} ms`)), ms); })]).finally(() => clearTimeout(t));
}

/** One GET of one llama on the probe's own connection: its latency in ms. */
async function probeOnce(): Promise<number> {
  const t0 = performance.now();
  const r = await withTimeout(probeClient.request('GET', `${coll}/l-0007`, auth()), 10_000, 'probe GET');
  assert.equal(r.status, 200, `probe → ${r.status} ${r.body.slice(0, 200)}`);
  return performance.now() - t0;
}

/**
 * Runs the attack while a probe (separate connection) asks every 25 ms; the probe's worst latency must
 * stay within PROBE_BOUND_MS, and the server must still answer once the attack is over.
 */
async function underAttack<V>(t: TestContext, name: string, attack: () => Promise<V>, boundMs = PROBE_BOUND_MS): Promise<V> {
  await probeOnce(); // connection warm
  let done = false;
  const latencies: number[] = [];
  const probing = (async () => {
    for (let i = 0; i < 2000 && !done; i++) { latencies.push(await probeOnce()); await sleep(25); }
  })();
  let result: V;
  try { result = await attack(); } finally { done = true; }
  await probing;
  latencies.push(await probeOnce());
  const worst = Math.max(...latencies);
  t.diagnostic(`${name}: ${latencies.length} probes, worst ${worst.toFixed(0)} ms`);
  assert.ok(worst <= boundMs, `${name}: a probe on another connection took ${worst.toFixed(0)} ms (bound ${boundMs})`);
  return result;
}

const requestFields = (method: string, path: string, extra: [string, string][] = []): [string, string][] =>
  [[':method', method], [':scheme', 'https'], [':authority', '127.0.0.1'], [':path', path], ['authorization', `Bearer ${s.token}`], ...extra];
const get = (stream: number, path: string) => headersFrame(stream, requestFields('GET', path));

async function raw(opts: RawOptions = {}): Promise<RawH2> {
  const c = await openRaw(s.url, s.caPem, opts);
  await c.waitFor((f) => f.type === T.SETTINGS && !(f.flags & F.ACK), 5000, "server's SETTINGS");
  return c;
}

/** Writes all, honouring the socket's backpressure, within `ms`. */
async function writeAll(c: RawH2, chunks: Buffer[], ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (const b of chunks) {
    if (c.isClosed()) return;
    if (!c.write(b)) await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.closed, sleep(Math.max(0, deadline - Date.now()))]);
    if (Date.now() > deadline) return;
  }
}

/** The same raw connection still serves an honest request: stream `id` answers 200. */
async function stillServes(c: RawH2, id: number, what: string): Promise<void> {
  c.write(get(id, `${coll}/l-0001`));
  const f = await c.waitFor((x) => x.stream === id && (x.type === T.HEADERS || x.type === T.RST_STREAM), 5000, `${what}: an answer on stream ${id}`);
  assert.equal(c.outcome(id).status, '200', `${what}: stream ${id} → ${f.type === T.RST_STREAM ? `RST ${f.payload.readUInt32BE(0)}` : c.outcome(id).status}`);
}

async function waitUntil(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`${what} not within ${ms} ms`);
    await sleep(20);
  }
}

/** Which HTTP/2 streams reached the handler (the server's 'request' event), as "clientPort:streamId". */
function handlerEntries(): { of(c: RawH2): number[]; has(c: RawH2, id: number): boolean; stop(): void } {
  const seen = new Set<string>();
  const onRequest = (req: IncomingMessage | Http2ServerRequest) => {
    if ('stream' in req) seen.add(`${req.stream.session?.socket.remotePort}:${req.stream.id}`);
  };
  s.server.app.server.on('request', onRequest);
  const of = (c: RawH2) => [...seen].filter((k) => k.startsWith(`${c.socket.localPort}:`)).map((k) => Number(k.split(':')[1]));
  return { of, has: (c, id) => seen.has(`${c.socket.localPort}:${id}`), stop: () => { s.server.app.server.off('request', onRequest); } };
}

/**
 * Writes `b` (at most 16 KiB) as one TLS record and waits until it is sent, so that it is not coalesced with
 * the next write: frames within it reach the server in one read. False if the connection is gone.
 */
function writeRecord(c: RawH2, b: Buffer): Promise<boolean> {
  assert.ok(b.length <= 16 * 1024, `${b.length} bytes do not fit one TLS record`);
  if (c.isClosed()) return Promise.resolve(false);
  return new Promise((resolve) => { c.socket.write(b, (err) => resolve(!err)); });
}

/** A raw connection that never runs out of flow-control window: every response can be sent in full. */
async function rawUnbounded(): Promise<RawH2> {
  const c = await raw({ settings: [[S.INITIAL_WINDOW_SIZE, 2 ** 31 - 1]] });
  c.write(windowUpdate(0, 2 ** 31 - 1 - 65_535));
  return c;
}

const ids = (n: number, first = 1) => Array.from({ length: n }, (_, i) => first + 2 * i);
const batches = <V>(xs: V[], size: number) => Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));

describe('stream lifecycle abuse', () => {
  test('rapid reset (CVE-2023-44487): 20,000 LISTs of 1,000 llamas opened and cancelled at once: none is served, other clients are not stalled', async (t) => {
    const c = await raw();
    const before = await settled();
    const entered = handlerEntries();
    try {
      await underAttack(t, 'rapid reset', async () => {
        const frames = batches(ids(20_000), 64).map((b) => Buffer.concat(b.flatMap((id) => [get(id, coll), rstFrame(id)])));
        const deadline = Date.now() + 15_000;
        for (const f of frames) if (c.isClosed() || Date.now() > deadline || !(await writeRecord(c, f))) break;
        await sleep(300);
      }).finally(() => t.diagnostic(`rapid reset: ${entered.of(c).length} already-cancelled requests reached the handler`));
      const grown = retained() - before;
      t.diagnostic(`rapid reset: connection ${c.isClosed() ? 'closed' : 'open'}, GOAWAY ${JSON.stringify(c.goaway())}; retained +${(grown / MiB).toFixed(1)} MiB`);
      assert.deepEqual(entered.of(c), [], 'requests cancelled before they started reached the handler');
      // As Go's server (and before nghttp2's own GOAWAY(INTERNAL_ERROR) after 1,000 resets).
      assert.equal(c.goaway()?.code, ERR.ENHANCE_YOUR_CALM, `GOAWAY ${JSON.stringify(c.goaway())}`);
      assert.ok(grown < 64 * MiB, `retained +${(grown / MiB).toFixed(1)} MiB`);
    } finally { c.destroy(); entered.stop(); }
  });

  test('1,000 watches opened and abandoned by a vanished client are all released', async () => {
    const base = s.server.watchers.size;
    const c = await raw();
    await writeAll(c, batches(ids(1000), 250).map((b) => Buffer.concat(b.map((id) => get(id, `${coll}?watch=1&labelSelector=abandon%3Dyes`)))));
    await waitUntil(() => s.server.watchers.size >= base + 1000, 10_000, `1000 watches registered (now ${s.server.watchers.size - base})`);
    c.socket.destroy();
    await waitUntil(() => s.server.watchers.size === base, 5000, `watchers released (still ${s.server.watchers.size - base})`);
  });

  test('streams past the advertised 1000 are refused alone: the connection and its 1000 watches go on', {
    todo: 'DEFECT (nghttp2): one HEADERS past the acknowledged limit is a connection error (RFC 9113 §5.1.2 and Go: a stream error); the session is destroyed without GOAWAY, killing every in-flight stream',
  }, async () => {
    const base = s.server.watchers.size;
    const c = await raw();
    try {
      const all = ids(1050);
      await writeAll(c, batches(all, 250).map((b) => Buffer.concat(b.map((id) => get(id, `${coll}?watch=1&labelSelector=limit%3Dyes`)))));
      await waitUntil(() => all.every((id) => c.outcome(id).status !== undefined || c.outcome(id).rst !== undefined) || c.isClosed(), 10_000, 'every stream answered or refused');
      const ok = all.filter((id) => c.outcome(id).status === '200').length;
      const refused = all.filter((id) => c.outcome(id).rst !== undefined);
      assert.equal(c.isClosed(), false, `connection ended: GOAWAY ${JSON.stringify(c.goaway())}`);
      assert.equal(ok, 1000, `${ok} watches answered 200`);
      assert.equal(refused.length, 50);
      for (const id of refused) assert.ok([ERR.REFUSED_STREAM, ERR.PROTOCOL_ERROR].includes(c.outcome(id).rst ?? -1), `stream ${id}: RST ${c.outcome(id).rst}`);
      // Room again once one ends: a new stream is served on the same connection.
      c.write(rstFrame(1));
      await waitUntil(() => s.server.watchers.size <= base + 999, 3000, 'the cancelled watch released');
      await stillServes(c, 2101, 'after one watch ended');
    } finally { c.destroy(); }
    await waitUntil(() => s.server.watchers.size === base, 5000, 'watchers released');
  });

  test('far past the limit (1,300 streams at once): the offender loses its own connection only, nothing leaks', async (t) => {
    const base = s.server.watchers.size;
    const c = await raw();
    await underAttack(t, '1,300 streams', async () => {
      await writeAll(c, batches(ids(1300), 250).map((b) => Buffer.concat(b.map((id) => get(id, `${coll}?watch=1&labelSelector=over%3Dyes`)))));
      await Promise.race([c.closed, sleep(2000)]);
    });
    t.diagnostic(`1,300 streams: connection ${c.isClosed() ? 'closed' : 'open'}, GOAWAY ${JSON.stringify(c.goaway())}`);
    c.destroy();
    await waitUntil(() => s.server.watchers.size === base, 5000, `watchers released (still ${s.server.watchers.size - base})`);
  });
});

describe('handler scheduling (Go h2_bundle.go scheduleHandler, CVE-2023-44487)', () => {
  type Kind = 'get' | 'list' | 'list-limit';
  const pathOf: Record<Kind, string> = { get: `${coll}/l-0003`, list: coll, 'list-limit': `${coll}?limit=10` };
  interface Planned { kind: Kind; write: number; reset: 'same-write' | 'next-write' | 'never'; code: number }
  const planned = fc.record({
    kind: fc.constantFrom<Kind>('get', 'list', 'list-limit'),
    write: fc.nat({ max: 3 }),
    reset: fc.constantFrom<Planned['reset']>('same-write', 'next-write', 'never'),
    // An error code other than CANCEL makes Node emit 'error' on the stream: nothing may be left unhandled.
    code: fc.constantFrom(ERR.CANCEL, ERR.NO_ERROR, ERR.PROTOCOL_ERROR, ERR.REFUSED_STREAM, ERR.ENHANCE_YOUR_CALM),
  });

  test('property: a stream reset in the write that opened it never reaches the handler; every stream not reset is answered', async (t) => {
    let runs = 0;
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ streams: fc.array(planned, { minLength: 1, maxLength: 50 }), pauses: fc.array(fc.nat({ max: 30 }), { minLength: 4, maxLength: 4 }) }), { minLength: 1, maxLength: 3 }),
      async (connections) => {
        runs++;
        const conns = await Promise.all(connections.map(() => rawUnbounded()));
        const entered = handlerEntries();
        try {
          // Every write (at most 50 pairs) is one TLS record; connections interleave. Stream ids rise with the writes.
          const ordered = connections.map((plan) => plan.streams.map((p, i) => ({ p, i })).sort((a, b) => a.p.write - b.p.write || a.i - b.i));
          const idOfPlan = connections.map((_, ci) => new Map(ordered[ci].map(({ i }, k) => [i, 2 * k + 1])));
          await Promise.all(connections.map(async (plan, ci) => {
            const c = conns[ci];
            const idOf = (i: number) => idOfPlan[ci].get(i)!;
            for (let w = 0; w < 4; w++) {
              const parts: Buffer[] = [];
              for (const { p, i } of ordered[ci]) {
                if (p.write === w) parts.push(get(idOf(i), pathOf[p.kind]));
                if (p.write === w && p.reset === 'same-write') parts.push(rstFrame(idOf(i), p.code));
                if (p.write === w - 1 && p.reset === 'next-write') parts.push(rstFrame(idOf(i), p.code));
              }
              if (parts.length) await writeRecord(c, Buffer.concat(parts));
              await sleep(plan.pauses[w]);
            }
          }));
          const idOf = (ci: number, i: number) => idOfPlan[ci].get(i)!;
          await waitUntil(() => connections.every((plan, ci) => plan.streams.every((p, i) => p.reset !== 'never' || conns[ci].ended.has(idOf(ci, i)) || conns[ci].outcome(idOf(ci, i)).rst !== undefined || conns[ci].isClosed())), 10_000, 'every stream not reset answered');
          connections.forEach((plan, ci) => plan.streams.forEach((p, i) => {
            const id = idOf(ci, i);
            if (p.reset === 'same-write') assert.ok(!entered.has(conns[ci], id), `connection ${ci} stream ${id} (${p.kind}) was reset with its HEADERS but reached the handler`);
            if (p.reset === 'never') assert.equal(conns[ci].outcome(id).status, '200', `connection ${ci} stream ${id} (${p.kind}): ${JSON.stringify(conns[ci].outcome(id))}`);
          }));
          for (const c of conns) assert.equal(c.goaway(), undefined, 'a GOAWAY for an honest mix');
        } finally { entered.stop(); for (const c of conns) c.destroy(); }
      },
    ), { numRuns: 15 });
    t.diagnostic(`${runs} generated mixes`);
  });

  test('1,000 concurrent LISTs of 1,000 llamas on one connection, read in full: a GET on another connection starts ahead of them and is answered promptly (issue item 4)', async (t) => {
    const c = await rawUnbounded();
    const all = ids(1000);
    // The order in which handlers start: this connection's LISTs, and the GET sent right after them.
    const order: ('list' | 'get')[] = [];
    const onRequest = (req: IncomingMessage | Http2ServerRequest) => {
      if (!('stream' in req)) return;
      if (req.stream.session?.socket.remotePort === c.socket.localPort) order.push('list');
      else if (req.url.endsWith('/l-0042')) order.push('get');
    };
    s.server.app.server.on('request', onRequest);
    try {
      await underAttack(t, '1,000 concurrent LISTs', async () => {
        await writeAll(c, batches(all, 250).map((b) => Buffer.concat(b.map((id) => get(id, coll)))));
        const r = await withTimeout(probeClient.request('GET', `${coll}/l-0042`, auth()), 10_000, 'GET beside 1,000 LISTs');
        assert.equal(r.status, 200);
        await waitUntil(() => all.every((id) => c.ended.has(id)) || c.isClosed(), 60_000, 'every LIST read in full');
      }, CONCURRENT_LISTS_PROBE_BOUND_MS);
      const ahead = order.indexOf('get');
      t.diagnostic(`1,000 LISTs: ${ahead} of them started before the GET sent after them; ${([...c.dataBytes.values()].reduce((a, b) => a + b, 0) / MiB).toFixed(0)} MiB read`);
      assert.ok(ahead >= 0 && ahead < FAIR_START_BOUND, `${ahead} LISTs of one connection started before a GET on another (bound ${FAIR_START_BOUND})`);
      assert.equal(all.filter((id) => c.outcome(id).status === '200').length, 1000);
    } finally { c.destroy(); s.server.app.server.off('request', onRequest); }
  });

  test('1,000 watches on one connection do not hold it: requests on the same connection are still served', async (t) => {
    const base = s.server.watchers.size;
    const c = await raw();
    try {
      await writeAll(c, batches(ids(990), 250).map((b) => Buffer.concat(b.map((id) => get(id, `${coll}?watch=1&labelSelector=held%3Dyes`)))));
      await waitUntil(() => s.server.watchers.size >= base + 990, 10_000, `990 watches registered (now ${s.server.watchers.size - base})`);
      const t0 = performance.now();
      for (let i = 0; i < 5; i++) await stillServes(c, 2001 + 2 * i, `GET ${i + 1} beside 990 watches`);
      t.diagnostic(`5 GETs beside 990 watches on their connection: ${(performance.now() - t0).toFixed(0)} ms`);
    } finally { c.destroy(); }
    await waitUntil(() => s.server.watchers.size === base, 5000, 'watchers released');
  });
});

describe('control-frame floods', () => {
  // Each flood comes from a client that never reads, so the server's ACKs back up too.
  const floods: [string, () => Buffer[]][] = [
    ['200,000 SETTINGS', () => batches(Array.from({ length: 200_000 }, () => settingsFrame([[S.MAX_CONCURRENT_STREAMS, 100]])), 5000).map((b) => Buffer.concat(b))],
    ['200,000 PINGs', () => batches(Array.from({ length: 200_000 }, (_, i) => pingFrame(i)), 5000).map((b) => Buffer.concat(b))],
    ['200,000 PRIORITY frames on idle streams', () => batches(Array.from({ length: 200_000 }, (_, i) => {
      const p = Buffer.alloc(5); p.writeUInt32BE(2 * ((i * 7919) % 100_000) + 1); p[4] = 255;
      return frame(T.PRIORITY, 0, 2 * i + 3, p);
    }), 5000).map((b) => Buffer.concat(b))],
    ['200,000 connection WINDOW_UPDATEs of 1 byte', () => batches(Array.from({ length: 200_000 }, () => windowUpdate(0, 1)), 5000).map((b) => Buffer.concat(b))],
    ['100,000 empty DATA frames on an open POST', () => [
      headersFrame(1, requestFields('POST', coll, [['content-type', 'application/json']]), F.END_HEADERS),
      ...batches(Array.from({ length: 100_000 }, () => frame(T.DATA, 0, 1)), 5000).map((b) => Buffer.concat(b)),
    ]],
  ];
  for (const [name, build] of floods) {
    test(`${name} from a client that never reads: others unaffected, memory bounded`, async (t) => {
      const c = await raw();
      c.socket.pause();
      const before = await settled();
      try {
        await underAttack(t, name, async () => { await writeAll(c, build(), 10_000); await Promise.race([c.closed, sleep(300)]); });
        const state = `connection ${c.isClosed() ? 'closed' : 'open'}, GOAWAY ${JSON.stringify(c.goaway())}`;
        c.destroy(); // what it could not send is the attacker's memory, not the server's
        await sleep(50);
        const grown = retained() - before;
        t.diagnostic(`${name}: ${state}; retained +${(grown / MiB).toFixed(1)} MiB`);
        assert.ok(grown < 32 * MiB, `retained +${(grown / MiB).toFixed(1)} MiB`);
      } finally { c.destroy(); }
    });
  }
});

describe('header-block abuse', () => {
  test('CONTINUATION flood (a header block that never ends, 16 MiB of fields) is cut off; memory bounded', async (t) => {
    const c = await raw();
    const before = await settled();
    try {
      await underAttack(t, 'CONTINUATION flood', async () => {
        const first = headersFrame(1, requestFields('GET', coll), F.END_STREAM); // no END_HEADERS
        const conts = Array.from({ length: 1024 }, (_, i) => frame(T.CONTINUATION, 0, 1, block(Array.from({ length: 16 }, (_, j) => [`x-c${i}-${j}`, 'v'.repeat(1000)]))));
        await writeAll(c, [first, ...batches(conts, 32).map((b) => Buffer.concat(b))], 10_000);
        await Promise.race([c.closed, sleep(500)]);
      });
      const state = `connection ${c.isClosed() ? 'closed' : 'open'}, GOAWAY ${JSON.stringify(c.goaway())}`;
      c.destroy(); // its unsent 16 MiB is the attacker's memory
      const grown = (await settled()) - before;
      t.diagnostic(`CONTINUATION flood: ${state}; retained +${(grown / MiB).toFixed(1)} MiB`);
      assert.ok(c.isClosed() || c.goaway() !== undefined || c.outcome(1).rst !== undefined, 'the never-ending header block was not cut off');
      assert.equal(c.outcome(1).status, undefined, 'served a request whose headers never ended');
      assert.ok(grown < 32 * MiB, `retained +${(grown / MiB).toFixed(1)} MiB`);
    } finally { c.destroy(); }
  });

  test('empty CONTINUATION frames without end are cut off', async (t) => {
    const c = await raw();
    try {
      await underAttack(t, 'empty CONTINUATION flood', async () => {
        const first = headersFrame(1, requestFields('GET', coll), F.END_STREAM);
        await writeAll(c, [first, ...batches(Array.from({ length: 100_000 }, () => frame(T.CONTINUATION, 0, 1)), 5000).map((b) => Buffer.concat(b))], 10_000);
        await Promise.race([c.closed, sleep(500)]);
      });
      assert.ok(c.isClosed() || c.goaway() !== undefined, 'still accepting an endless header block');
    } finally { c.destroy(); }
  });

  test('HPACK bomb: 4 KB table entry referenced 40,000 times (160 MB expanded) is refused as one stream; the connection goes on', async (t) => {
    const c = await raw();
    const before = await settled();
    try {
      await underAttack(t, 'HPACK bomb', async () => {
        const head = Buffer.concat([block(requestFields('GET', coll)), literalIndexed('x-bomb', 'b'.repeat(4000))]);
        const refs = Buffer.concat(Array.from({ length: 40_000 }, () => indexed(62)));
        // Spread over frames no larger than the default 16 KiB frame size.
        const parts = [head, ...batches([...refs], 16_000).map((b) => Buffer.from(b))];
        const frames = parts.map((p, i) => frame(i === 0 ? T.HEADERS : T.CONTINUATION, (i === 0 ? F.END_STREAM : 0) | (i === parts.length - 1 ? F.END_HEADERS : 0), 1, p));
        await writeAll(c, frames, 10_000);
        await c.waitFor((f) => (f.stream === 1 && (f.type === T.RST_STREAM || f.type === T.HEADERS)) || f.type === T.GOAWAY, 5000, 'an answer to the bomb');
      });
      const grown = retained() - before;
      const o = c.outcome(1);
      t.diagnostic(`HPACK bomb: ${JSON.stringify(o)}, GOAWAY ${JSON.stringify(c.goaway())}; retained +${(grown / MiB).toFixed(1)} MiB`);
      assert.ok(o.rst !== undefined || (o.status !== undefined && Number(o.status) === 431), `bomb → ${JSON.stringify(o)}`);
      assert.ok(grown < 32 * MiB, `retained +${(grown / MiB).toFixed(1)} MiB`);
      await stillServes(c, 3, 'after the HPACK bomb');
    } finally { c.destroy(); }
  });

  test('a header list just over 64 KiB in many small fields is refused as one stream; the connection goes on', async () => {
    const c = await raw();
    try {
      const fields: [string, string][] = Array.from({ length: 70 }, (_, i) => [`x-f${i}`, 'v'.repeat(1000)]);
      const b = block([...requestFields('GET', coll), ...fields]);
      const parts = batches([...b], 16_000).map((x) => Buffer.from(x));
      await writeAll(c, parts.map((p, i) => frame(i === 0 ? T.HEADERS : T.CONTINUATION, (i === 0 ? F.END_STREAM : 0) | (i === parts.length - 1 ? F.END_HEADERS : 0), 1, p)));
      await c.waitFor((f) => (f.stream === 1 && (f.type === T.RST_STREAM || f.type === T.HEADERS)) || f.type === T.GOAWAY, 5000, 'an answer');
      const o = c.outcome(1);
      assert.ok(o.rst !== undefined || o.status === '431', `>64 KiB list → ${JSON.stringify(o)}`);
      await stillServes(c, 3, 'after an oversized header list');
    } finally { c.destroy(); }
  });
});

describe('readers that never read', () => {
  /** A connection with zero stream windows asks 1,000 LISTs of 1,000 llamas (~0.3 MiB each) and reads nothing. */
  async function unreadLists(t: TestContext, boundMs: number): Promise<{ c: RawH2; answered: number }> {
    const c = await raw({ settings: [[S.INITIAL_WINDOW_SIZE, 0]] });
    const all = ids(1000);
    await underAttack(t, 'unread LISTs', async () => {
      await writeAll(c, batches(all, 100).map((b) => Buffer.concat(b.map((id) => get(id, coll)))));
      await waitUntil(() => all.every((id) => c.outcome(id).status !== undefined || c.outcome(id).rst !== undefined) || c.isClosed(), 20_000, 'every LIST answered');
    }, boundMs);
    return { c, answered: all.filter((id) => c.outcome(id).status === '200').length };
  }

  // Building 1,000 LISTs is real work on one thread: the probe may wait for a few of them, not for all.
  test('1,000 LISTs of 1,000 llamas on streams with a zero window: other clients are answered', async (t) => {
    const { c, answered } = await unreadLists(t, 1500);
    try {
      t.diagnostic(`unread LISTs: ${answered} answered 200 (headers only), ${[...c.dataBytes.values()].reduce((a, b) => a + b, 0)} DATA bytes sent`);
      const honest = await withTimeout(probeClient.request('GET', coll, auth()), 10_000, 'honest LIST');
      assert.equal(honest.status, 200);
      assert.equal(c.isClosed(), false);
    } finally { c.destroy(); }
  });

  test('1,000 unread LISTs on one connection do not hold every LIST body in memory', async (t) => {
    const before = await settled();
    const { c } = await unreadLists(t, 3000);
    try {
      const grown = retained() - before;
      t.diagnostic(`unread LISTs: retained +${(grown / MiB).toFixed(1)} MiB`);
      // Go's server blocks the handler on the flow-control window: a buffer per stream, not the body.
      assert.ok(grown < 128 * MiB, `retained +${(grown / MiB).toFixed(1)} MiB for 1,000 unread LISTs on one connection`);
    } finally { c.destroy(); }
  });

  test('100 watches that never read while 3,000 writes happen: slow watchers are closed, memory bounded, writers unaffected', async (t) => {
    const base = s.server.watchers.size;
    const c = await raw({ settings: [[S.INITIAL_WINDOW_SIZE, 0]] });
    const before = await settled();
    const mine = () => [...s.server.watchers].slice(base);
    try {
      const all = ids(100);
      c.write(Buffer.concat(all.map((id) => get(id, `${coll}?watch=1&resourceVersion=0`))));
      await waitUntil(() => s.server.watchers.size >= base + 100, 5000, '100 watches registered');
      await underAttack(t, 'unread watches', async () => {
        for (let i = 0; i < 3000; i += 100) {
          const rs = await Promise.all(Array.from({ length: 100 }, (_, j) => probeClient.request('POST', coll, { ...auth(), 'content-type': 'application/json' }, JSON.stringify(llama(`w-${i + j}`, { flood: 'yes' })))));
          assert.deepEqual(new Set(rs.map((r) => r.status)), new Set([201]));
        }
      });
      const grown = retained() - before;
      const open = mine().filter((w) => !w.closedReason).length;
      t.diagnostic(`unread watches: ${open} of 100 still queueing, ${s.server.watchers.size - base} still registered; retained +${(grown / MiB).toFixed(1)} MiB`);
      // Each watcher buffers at most --watch-queue (1000) events: 3,000 writes overflow every one.
      assert.equal(open, 0, `${open} never-reading watchers still queue events`);
      assert.ok(grown < 64 * MiB, `retained +${(grown / MiB).toFixed(1)} MiB`);
    } finally {
      c.destroy();
      await probeClient.request('DELETE', `${coll}?labelSelector=flood%3Dyes`, auth());
    }
    await waitUntil(() => s.server.watchers.size === base, 5000, `watchers released once the client left (still ${s.server.watchers.size - base})`);
  });
});

describe('request bodies', () => {
  test('a body sent at a trickle forever is ended by the body timeout (504), not held', async () => {
    const c = connect(s.url, { ca: s.caPem });
    c.on('error', () => undefined);
    try {
      const post = c.request({ ':method': 'POST', ':path': coll, 'content-type': 'application/json', 'content-length': '100000', ...auth() }, { endStream: false });
      post.on('error', () => undefined);
      let sent = 0;
      const trickle = setInterval(() => { if (!post.closed && sent < 100) { post.write(' '); sent++; } }, 100);
      const t0 = Date.now();
      try {
        const [h] = await withTimeout(once(post, 'response') as Promise<[Record<string, unknown>]>, BODY_TIMEOUT_MS + 3000, 'an answer to the trickle');
        post.resume();
        const took = Date.now() - t0;
        assert.equal(h[':status'], 504);
        assert.ok(took >= BODY_TIMEOUT_MS * 0.9 && took < BODY_TIMEOUT_MS + 2000, `answered after ${took} ms`);
        await withTimeout(once(post, 'close'), BODY_TIMEOUT_MS + 3000, 'the trickling stream ended');
      } finally { clearInterval(trickle); }
      const g = c.request({ ':path': `${coll}/l-0002`, ...auth() });
      g.resume();
      const [gh] = await once(g, 'response') as [Record<string, unknown>];
      assert.equal(gh[':status'], 200, 'the same connection still serves');
    } finally { c.destroy(); }
  });

  test('a body longer than its content-length is a stream error, not a 5xx; nothing is created', {
    // Node 20 (nghttp2 1.61) answers RST_STREAM PROTOCOL_ERROR, as Go does; Node 24 (nghttp2 1.70) a GOAWAY
    // INTERNAL_ERROR for the whole connection, reproduced with a plain node:http2 server.
    todo: NGHTTP2_GOAWAY_ON_LONG_BODY ? 'DEFECT (nghttp2 1.70, Node >= 24): a DATA frame past content-length ends the whole connection (GOAWAY), not the stream' : false,
  }, async () => {
    const c = await raw();
    try {
      const body = Buffer.from(JSON.stringify(llama('too-long')));
      c.write(Buffer.concat([
        headersFrame(1, requestFields('POST', coll, [['content-type', 'application/json'], ['content-length', '10']]), F.END_HEADERS),
        frame(T.DATA, F.END_STREAM, 1, body),
      ]));
      await c.waitFor((f) => (f.stream === 1 && (f.type === T.RST_STREAM || f.type === T.HEADERS)) || f.type === T.GOAWAY, 5000, 'an answer');
      const o = c.outcome(1);
      assert.ok(o.rst !== undefined || (o.status !== undefined && Number(o.status) < 500), `→ ${JSON.stringify(o)}`);
      await stillServes(c, 3, 'after a body past its content-length');
      assert.equal((await probeClient.request('GET', `${coll}/too-long`, auth())).status, 404);
    } finally { c.destroy(); }
  });

  test('DATA after END_STREAM is refused without a crash; other connections unaffected', async () => {
    const c = await raw();
    try {
      c.write(Buffer.concat([get(1, `${coll}/l-0003`), frame(T.DATA, 0, 1, Buffer.from('{"late":true}')), frame(T.DATA, F.END_STREAM, 1, Buffer.from('x'))]));
      await c.waitFor((f) => (f.stream === 1 && f.type === T.RST_STREAM) || f.type === T.GOAWAY, 5000, 'a stream or connection error');
      const g = c.goaway();
      assert.ok(c.outcome(1).rst === ERR.STREAM_CLOSED || g?.code === ERR.STREAM_CLOSED || g?.code === ERR.PROTOCOL_ERROR, `→ ${JSON.stringify(c.outcome(1))} GOAWAY ${JSON.stringify(g)}`);
      await probeOnce();
    } finally { c.destroy(); }
  });
});

describe('pseudo-header and header-field confusion', () => {
  const base = (): [string, string][] => requestFields('GET', `${coll}/l-0004`);
  const without = (name: string) => base().filter(([n]) => n !== name);
  const replace = (name: string, value: string) => base().map(([n, v]): [string, string] => [n, n === name ? value : v]);
  /** Malformed requests (RFC 9113 §8.1.1): each must be a stream error, the connection serving on. */
  const malformed = (): [string, [string, string][]][] => [
    ['no :path', without(':path')],
    ['no :method', without(':method')],
    ['no :scheme', without(':scheme')],
    [':path "*" on GET', replace(':path', '*')],
    ['empty :path', replace(':path', '')],
    ['absolute-form :path', replace(':path', `https://127.0.0.1${coll}/l-0004`)],
    ['CONNECT with :path and :scheme (extended CONNECT not enabled)', replace(':method', 'CONNECT')],
    ['duplicate :path', [...base(), [':path', '/livez']]],
    ['pseudo-header after a regular one', [...without(':path'), [':path', '/livez']]],
    ['unknown pseudo-header', [...base(), [':foo', 'bar']]],
    ['response pseudo-header :status in a request', [...base(), [':status', '200']]],
    ['uppercase header name', [...base(), ['X-Upper', 'yes']]],
    ['connection: keep-alive', [...base(), ['connection', 'keep-alive']]],
    ['transfer-encoding: chunked', [...base(), ['transfer-encoding', 'chunked']]],
    ['upgrade: h2c', [...base(), ['upgrade', 'h2c']]],
    ['keep-alive', [...base(), ['keep-alive', 'timeout=5']]],
    ['proxy-connection', [...base(), ['proxy-connection', 'keep-alive']]],
    ['te: gzip (only "trailers" allowed)', [...base(), ['te', 'gzip']]],
  ];
  /** Fields with bytes RFC 9113 §8.2.1 forbids: refused, or dropped before the application sees them. */
  const badBytes = (): [string, [string, string]][] => [
    ['CR LF in a value (header injection)', ['x-inject', 'a\r\nauthorization: Bearer other']],
    ['NUL in a value', ['x-nul', 'a\0b']],
    ['leading space in a value', ['x-lws', ' v']],
    ['space in a name', ['x bad', 'v']],
    ['colon inside a name', ['x:bad', 'v']],
    ['non-ASCII byte in a name', ['x-\u00e9', 'v']],
    ['DEL in a name', ['x-\u007f', 'v']],
    ['empty name', ['', 'v']],
  ];
  test('each malformed header block is a stream error (or a 4xx): the connection and the process go on', async (t) => {
    const c = await raw();
    try {
      let id = 1;
      const seen: string[] = [];
      const wrong: string[] = [];
      for (const [name, fields] of malformed()) {
        const sid = id;
        id += 2;
        c.write(headersFrame(sid, fields));
        await c.waitFor((f) => (f.stream === sid && (f.type === T.RST_STREAM || f.type === T.HEADERS)) || f.type === T.GOAWAY, 5000, `${name}: an answer`);
        const o = c.outcome(sid);
        seen.push(`${name}: ${JSON.stringify(o)}`);
        assert.equal(c.goaway(), undefined, `${name}: connection ended (GOAWAY ${JSON.stringify(c.goaway())})`);
        if (!(o.rst !== undefined || (o.status !== undefined && Number(o.status) >= 400 && Number(o.status) < 500))) wrong.push(`${name} → ${JSON.stringify(o)}`);
      }
      t.diagnostic(seen.join('; '));
      assert.deepEqual(wrong, [], 'served as if well-formed');
      await stillServes(c, id, 'after every malformed request');
    } finally { c.destroy(); }
  });

  test('a field with forbidden bytes is refused or dropped: it never reaches the handler', async (t) => {
    const c = await raw();
    const delivered = new Map<string, string[]>();
    const capture = (req: { headers: Record<string, unknown>; rawHeaders: string[] }) => { delivered.set(String(req.headers['x-case']), req.rawHeaders); };
    s.server.app.server.on('request', capture);
    try {
      let id = 1;
      const seen: string[] = [];
      const leaked: string[] = [];
      for (const [name, [field, value]] of badBytes()) {
        const sid = id;
        id += 2;
        c.write(headersFrame(sid, [...requestFields('GET', `${coll}/l-0004`), ['x-case', String(sid)], [field, value]]));
        await c.waitFor((f) => (f.stream === sid && (f.type === T.RST_STREAM || f.type === T.HEADERS)) || f.type === T.GOAWAY, 5000, `${name}: an answer`);
        const o = c.outcome(sid);
        const raw = delivered.get(String(sid));
        const reached = raw !== undefined && raw.some((v, i) => i % 2 === 0 ? v === field : false);
        seen.push(`${name}: ${JSON.stringify(o)}${raw ? (reached ? ', field delivered' : ', field dropped') : ''}`);
        if (reached) leaked.push(`${name}: ${JSON.stringify(raw.filter((_, i) => i % 2 === 0))}`);
        assert.ok(o.status === undefined || Number(o.status) < 500, `${name} → ${JSON.stringify(o)}`);
      }
      t.diagnostic(seen.join('; '));
      assert.deepEqual(leaked, [], 'forbidden bytes reached the handler');
      await stillServes(c, id, 'after forbidden bytes');
    } finally { c.destroy(); s.server.app.server.off('request', capture); }
  });

  test('CONNECT (no :path, no :scheme, as RFC 9113 §8.5 allows) gets a 4xx Status, not a crash or 5xx', async () => {
    const c = await raw();
    try {
      c.write(headersFrame(1, [[':method', 'CONNECT'], [':authority', '127.0.0.1:443'], ['authorization', `Bearer ${s.token}`]], F.END_HEADERS));
      await c.waitFor((f) => (f.stream === 1 && (f.type === T.RST_STREAM || f.type === T.HEADERS)) || f.type === T.GOAWAY, 5000, 'an answer to CONNECT');
      const o = c.outcome(1);
      assert.ok(o.rst !== undefined || (o.status !== undefined && Number(o.status) >= 400 && Number(o.status) < 500), `CONNECT → ${JSON.stringify(o)}`);
      await stillServes(c, 3, 'after CONNECT');
    } finally { c.destroy(); }
  });

  test('OPTIONS * and odd but valid paths get 4xx Statuses or 200, never 5xx (node:http2 client)', async () => {
    const c: ClientHttp2Session = connect(s.url, { ca: s.caPem });
    c.on('error', () => undefined);
    try {
      await once(c, 'remoteSettings');
      const cases: [string, string][] = [['OPTIONS', '*'], ['GET', '//'], ['GET', '/%'], ['GET', `${coll}/%00`], ['GET', `/apis/${'a/'.repeat(3000)}`], ['FOO', coll], ['GET', `${coll}?a=%zz`]];
      for (const [method, path] of cases) {
        const r = c.request({ ':method': method, ':path': path, ...auth() });
        r.on('error', () => undefined);
        r.resume();
        const [h] = await withTimeout(once(r, 'response') as Promise<[Record<string, unknown>]>, 5000, `${method} ${path.slice(0, 40)}`);
        const code = Number(h[':status']);
        assert.ok(code >= 200 && code < 500, `${method} ${path.slice(0, 60)} → ${code}`);
      }
    } finally { c.destroy(); }
  });
});

describe('protocol confusion on the shared port', () => {
  test('an h2c upgrade over HTTP/1.1 is not honoured: an ordinary answer, no 101, no 5xx', async () => {
    const r = await rawExchange(s, Buffer.from(`GET ${coll}/l-0005 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.token}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`, 'latin1'));
    assert.equal(r.status, 200, r.head);
  });

  test("the HTTP/2 preface on an HTTP/1.1 (ALPN http/1.1) connection is refused promptly, not a hang or 5xx", async () => {
    const { port } = new URL(s.url);
    const out = await new Promise<{ text: string; ms: number }>((resolve, reject) => {
      const t0 = Date.now();
      const sock = tlsConnect({ host: '127.0.0.1', port: Number(port), ca: s.caPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => {
        assert.equal(sock.alpnProtocol, 'http/1.1');
        sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), settingsFrame([]), get(1, coll)]));
      });
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => { sock.destroy(); reject(new Error('no close within 5 s')); }, 5000);
      sock.on('data', (d: Buffer) => chunks.push(d));
      sock.on('error', () => undefined);
      sock.on('close', () => { clearTimeout(timer); resolve({ text: Buffer.concat(chunks).toString('latin1'), ms: Date.now() - t0 }); });
    });
    const m = /^HTTP\/1\.1 (\d{3})/.exec(out.text);
    if (m) assert.ok(Number(m[1]) >= 400 && Number(m[1]) < 500, out.text.slice(0, 300));
    assert.ok(out.ms < 3000, `closed after ${out.ms} ms`);
    await probeOnce();
  });

  test('HTTP/1.1 text on an h2 (ALPN) connection ends that connection with GOAWAY or a close, promptly', async () => {
    const c = await openRaw(s.url, s.caPem, { preface: false });
    try {
      c.write(Buffer.from(`GET ${coll} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, 'latin1'));
      await withTimeout(c.closed, 3000, 'connection closed');
      await probeOnce();
    } finally { c.destroy(); }
  });

  test('frames that break the connection (bad preface, oversized frame, SETTINGS on a stream) end only that connection', async () => {
    const attacks: [string, Buffer][] = [
      ['garbage preface', Buffer.from('PRI * HTTP/1.1\r\n\r\nXX\r\n\r\n', 'latin1')],
      ['frame over the advertised 256 KiB', frame(T.HEADERS, F.END_HEADERS | F.END_STREAM, 1, Buffer.alloc(256 * 1024 + 1))],
      ['SETTINGS on stream 1', frame(T.SETTINGS, 0, 1, Buffer.alloc(6))],
      ['WINDOW_UPDATE of 0', windowUpdate(0, 0)],
      ['even (server-side) stream id', get(2, coll)],
      ['PUSH_PROMISE from a client', frame(T.PUSH_PROMISE, F.END_HEADERS, 1, Buffer.concat([u32(2), block([[':path', '/']])]))],
      ['window overflow past 2^31-1', Buffer.concat([windowUpdate(0, 0x7fffffff), windowUpdate(0, 0x7fffffff)])],
    ];
    for (const [name, bytes] of attacks) {
      const c = await openRaw(s.url, s.caPem, { preface: name !== 'garbage preface' });
      try {
        c.write(bytes);
        await withTimeout(c.closed, 3000, `${name}: connection ended`).catch(async (e: Error) => {
          const g: Frame | undefined = c.frames.find((f) => f.type === T.GOAWAY);
          if (!g) throw e;
        });
        await probeOnce();
      } finally { c.destroy(); }
    }
  });
});
