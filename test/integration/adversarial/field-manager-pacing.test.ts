// Event-loop stalls of the field manager: every write of an object with a huge map or set (100k labels,
// 100k finalizers) walks it several times to record managedFields or to apply a configuration. Each
// walk pauses every few thousand items, so the event loop (this process's: the test server runs in it)
// is never held for the whole write: create, apply that creates, apply of one label, merge patch, and a
// PUT that sends the managedFields back (kubectl replace). The writes themselves must succeed.
// Measured here: before the walks paused 0.55–1.3 s of blocked loop per write; after, 0.1–0.3 s.
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { assertResponsive, client, llamasOf, type Client } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const ns = 'pacing';
const coll = llamasOf(ns);
const N = 100_000;
/** A write may hold the loop for one walk of a stage, never for the whole write. */
const BOUND_MS = 600;
const API_VERSION = 'farm.example.com/v1alpha';
const APPLY = 'application/apply-patch+yaml';

before(async () => { s = await startTestServer(); c = client(s); });
after(async () => { c.close(); await s.close(); });

/**
 * The test server shares this process: the longest event-loop delay while a write runs is the longest
 * time the server kept every other request (and /livez) waiting.
 */
function watchLoop(): { stop(): number } {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  return { stop: () => { h.disable(); return h.max / 1e6; } };
}

type Big = 'labels' | 'finalizers';
const bigMetadata = (big: Big): Record<string, unknown> => big === 'labels'
  ? { labels: Object.fromEntries(Array.from({ length: N }, (_, i) => [`l${i.toString(36)}`, 'v'])) }
  : { finalizers: Array.from({ length: N }, (_, i) => `f/${i.toString(36)}`) };
const body = (name: string, metadata: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: API_VERSION, kind: 'Llama', metadata: { name, ...metadata }, spec: { weight: 80, height: 1.2 } });

interface Stored { metadata: { labels?: Record<string, string>; finalizers?: string[]; managedFields?: unknown[]; resourceVersion: string } }

async function get(name: string): Promise<{ text: string; obj: Stored }> {
  const r = await c.send({ method: 'GET', path: `${coll}/${name}`, timeoutMs: 30_000 });
  assert.equal(r.status, 200, `GET ${name}: ${r.body.slice(0, 300)}`);
  return { text: r.body, obj: JSON.parse(r.body) as Stored };
}

/** Runs the write, then checks it succeeded, never held the loop past the bound, and /livez answers. */
async function timed(what: string, write: () => Promise<{ status: number; body: string }>): Promise<void> {
  const loop = watchLoop();
  let r: { status: number; body: string };
  let maxMs: number;
  try {
    r = await write();
  } finally {
    maxMs = loop.stop();
  }
  console.log(`${what}: longest event-loop block ${maxMs.toFixed(0)} ms`);
  assert.ok(r.status >= 200 && r.status < 300, `${what}: ${r.status} ${r.body.slice(0, 300)}`);
  assert.ok(maxMs <= BOUND_MS, `${what}: the event loop was blocked for ${maxMs.toFixed(0)} ms (bound ${BOUND_MS} ms)`);
  await assertResponsive(c);
}

describe('the field manager pauses on big objects', () => {
  for (const big of ['finalizers', 'labels'] as const) {
    it(`100k ${big}: create, apply that creates, apply of a label, merge patch and a PUT with managedFields keep /livez answering`, async () => {
      const name = `big-${big}`;
      await timed(`POST with ${big}`, () => c.send({ method: 'POST', path: `${coll}?fieldManager=creator`, body: body(name, bigMetadata(big)), timeoutMs: 60_000 }));
      const created = await get(name);
      assert.ok(created.obj.metadata.managedFields?.length, 'the created object records its manager');

      await timed(`apply creating with ${big}`, () => c.send({
        method: 'PATCH', path: `${coll}/applied-${big}?fieldManager=applier`, contentType: APPLY, body: body(`applied-${big}`, bigMetadata(big)), timeoutMs: 60_000,
      }));

      await timed(`apply of one label onto ${big}`, () => c.send({
        method: 'PATCH', path: `${coll}/${name}?fieldManager=labeller`, contentType: APPLY,
        body: JSON.stringify({ apiVersion: API_VERSION, kind: 'Llama', metadata: { name, labels: { applied: 'yes' } } }), timeoutMs: 60_000,
      }));
      await timed(`merge patch of ${big}`, () => c.send({
        method: 'PATCH', path: `${coll}/${name}`, contentType: 'application/merge-patch+json', body: '{"metadata":{"labels":{"patched":"yes"}}}', timeoutMs: 60_000,
      }));

      // kubectl replace: the whole object back, managedFields included, with one change.
      const live = await get(name);
      const replaced = JSON.parse(live.text) as Stored;
      replaced.metadata.labels = { ...replaced.metadata.labels, replaced: 'yes' };
      await timed(`PUT of ${big} with its managedFields`, () => c.send({ method: 'PUT', path: `${coll}/${name}?fieldManager=replacer`, body: JSON.stringify(replaced), timeoutMs: 60_000 }));

      const final = await get(name);
      assert.equal(final.obj.metadata.labels?.applied, 'yes');
      assert.equal(final.obj.metadata.labels?.patched, 'yes');
      assert.equal(final.obj.metadata.labels?.replaced, 'yes');
      const size = big === 'labels' ? Object.keys(final.obj.metadata.labels ?? {}).length : final.obj.metadata.finalizers?.length;
      assert.equal(size, big === 'labels' ? N + 3 : N);
      const managers = (final.obj.metadata.managedFields as Array<{ manager: string }>).map((e) => e.manager);
      for (const m of ['creator', 'labeller', 'replacer']) assert.ok(managers.includes(m), `${m} in ${managers.join(',')}`);
    });
  }
});
