// Watch fan-out as an adversary shapes it (issue 30, item 2): hundreds of watchers that read nothing, each
// with a ~30 KiB label selector of `!key` terms, and creates of objects carrying 14,000 labels. Per event
// that is watchers × labels × terms of matching plus a TLS write per watcher, all on one thread: the
// fan-out must run in paced turns (storage/cacher/fanout.ts, apimachinery/turns.ts) so another client is
// answered promptly meanwhile, and what the watchers held must be released once they are gone.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { client, type Client } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

const NS = 'adv-fanout';
const COLL = `/apis/farm.example.com/v1alpha/namespaces/${NS}/llamas`;
const WATCHERS = 300;
const CREATES = 6;
const LABELS = 14_000;
/** A probe on its own connection must answer within this (2 cores, TLS, the server in this process). */
const PROBE_BOUND_MS = 1000;
const MiB = 1 << 20;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => { gc(); return process.memoryUsage().heapUsed; };

let s: TestServer;
let c: Client;
before(async () => { s = await startTestServer(); c = client(s); });
after(async () => { c.close(); await s.close(); });

/** Distinct per watcher, so no two share a parsed selector or a match. */
function selector(salt: number): string {
  const parts: string[] = [];
  for (let i = 0, n = 0; n < 30 * 1024; i++) { const t = `!k${i}-${salt}`; parts.push(t); n += t.length + 1; }
  return parts.join(',');
}

function silentWatch(salt: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: '127.0.0.1', port: Number(new URL(s.url).port), ca: s.caPem, ALPNProtocols: ['http/1.1'] }, () => {
      sock.write(`GET ${COLL}?watch=1&labelSelector=${encodeURIComponent(selector(salt))} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.token}\r\n\r\n`);
      sock.pause();
      resolve(sock);
    });
    sock.on('error', reject);
  });
}

const bigLlama = (name: string) => {
  const labels: Record<string, string> = {};
  for (let i = 0; i < LABELS; i++) labels[`label-${i.toString(36)}.example.com/key-${i}`] = `value-${i}-${'x'.repeat(20)}`;
  return JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels }, spec: { weight: 100, height: 1.5 } });
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

test(`${WATCHERS} silent watchers with 30 KiB selectors, ${CREATES} creates of ${LABELS} labels: another client is answered within ${PROBE_BOUND_MS} ms; the watchers' memory is released`, { timeout: 180_000 }, async (t) => {
  const bodies = Array.from({ length: CREATES }, (_, i) => bigLlama(`big-${i}`));
  const base = s.server.watchers.size;
  const sockets: TLSSocket[] = [];
  try {
    const before = heapUsed();
    for (let i = 0; i < WATCHERS; i++) sockets.push(await silentWatch(i));
    for (let i = 0; i < 1000 && s.server.watchers.size < base + WATCHERS; i++) await sleep(20);
    assert.equal(s.server.watchers.size, base + WATCHERS, 'every watch is open');
    const watching = heapUsed();

    let done = false;
    const latencies: number[] = [];
    const probing = (async () => {
      for (let i = 0; i < 5000 && !done; i++) {
        const r = await c.send({ method: 'GET', path: '/livez', timeoutMs: 10_000 });
        assert.equal(r.status, 200, `/livez → ${r.status}`);
        latencies.push(r.ms);
        await sleep(20);
      }
    })();
    try {
      for (const b of bodies) {
        const r = await c.send({ method: 'POST', path: COLL, body: b, timeoutMs: 60_000 });
        assert.equal(r.status, 201, r.body.slice(0, 200));
      }
      // Until every watcher was offered every change (each one's queue holds them: its client reads nothing).
      await sleep(2000);
    } finally { done = true; }
    await probing;
    const sorted = [...latencies].sort((a, b) => a - b);
    const worst = sorted[sorted.length - 1];
    t.diagnostic(`${latencies.length} probes: p50 ${sorted[sorted.length >> 1]} ms, p90 ${sorted[Math.floor(sorted.length * 0.9)]} ms, worst ${worst} ms; heap +${((watching - before) / MiB).toFixed(0)} MiB with the watchers`);
    assert.ok(worst <= PROBE_BOUND_MS, `a probe on another connection took ${worst} ms (bound ${PROBE_BOUND_MS})`);

    for (const sock of sockets.splice(0)) sock.destroy();
    for (let i = 0; i < 500 && s.server.watchers.size > base; i++) await sleep(20);
    assert.equal(s.server.watchers.size, base, 'every watcher released');
    await sleep(200);
    const afterAll = heapUsed();
    const objects = CREATES * 12 * MiB; // each stored object with its JSON, field set and history entry, generously
    t.diagnostic(`heap: ${(before / MiB).toFixed(0)} MiB before, ${(watching / MiB).toFixed(0)} with the watchers, ${(afterAll / MiB).toFixed(0)} after they closed`);
    assert.ok(afterAll - before < objects, `heap +${((afterAll - before) / MiB).toFixed(0)} MiB after the watchers closed (objects ≤ ${objects / MiB} MiB)`);
  } finally {
    for (const sock of sockets) sock.destroy();
  }
});
