// Memory amplification: a small request must not make a big object. JSON patch copies are capped at
// 3 MiB accumulated (evanphx/json-patch v4 as kube-apiserver configures it: exact byte counts), merge
// patches cannot grow a stored object past 3 MiB, YAML aliases cannot expand without bound, and a
// body of 200k unknown fields gets an answer. Never a 5xx; a rejected request changes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { assertResponsive, assertStatus, client, llama, llamasOf, runs, snapshot, warningHeaders, type Client } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const ns = 'amplify';
const coll = llamasOf(ns);
const COPY_LIMIT = 3 * 1024 * 1024; // JSONPatchMaxCopyBytes
const OBJECT_LIMIT = 3 * 1024 * 1024;

before(async () => { s = await startTestServer(); c = client(s); });
after(async () => { c.close(); await s.close(); });

let counter = 0;
async function fresh(extra: Record<string, unknown> = {}): Promise<string> {
  const name = `amp-${counter++}`;
  const body = { ...llama(name), ...extra, metadata: { name, ...(extra.metadata as object | undefined) } };
  const r = await c.send({ method: 'POST', path: coll, body: JSON.stringify(body) });
  assert.equal(r.status, 201, r.body.slice(0, 300));
  return name;
}

/**
 * The JSON patch and, from json-patch v4's copy(): each copy adds the compact JSON size of the copied
 * value to the running total and fails the whole patch as soon as the total passes the limit.
 */
function copyPatch(seedLength: number, copies: number, mode: 'double' | 'fanout'): { ops: unknown[]; exceededAt?: number } {
  const ops: unknown[] = [{ op: 'add', path: '/spec/x', value: ['7'.repeat(seedLength)] }];
  let size = seedLength + 4; // ["…"]
  let accumulated = 0;
  for (let i = 0; i < copies; i++) {
    ops.push(mode === 'double' ? { op: 'copy', from: '/spec/x', path: '/spec/x/-' } : { op: 'copy', from: '/spec/x', path: `/spec/y${i}` });
    accumulated += size;
    if (accumulated > COPY_LIMIT) return { ops, exceededAt: accumulated };
    if (mode === 'double') size = 2 * size + 1; // [e1,…,en] + "," + copy
  }
  return { ops };
}

describe('memory amplification', () => {
  it('JSON patch copies: past 3 MiB accumulated a 422 with the exact json-patch message and nothing changes; below, 200', async () => {
    const name = await fresh();
    await fc.assert(fc.asyncProperty(
      fc.record({ seedLength: fc.integer({ min: 1, max: 150_000 }), copies: fc.integer({ min: 1, max: 45 }), mode: fc.constantFrom<'double' | 'fanout'>('double', 'fanout') }),
      async ({ seedLength, copies, mode }) => {
        const { ops, exceededAt } = copyPatch(seedLength, mode === 'fanout' ? copies * 20 : copies, mode);
        const body = JSON.stringify(ops);
        fc.pre(body.length < COPY_LIMIT); // a body over 3 MiB is another rule (413)
        const before = await snapshot(c, ns);
        const r = await c.send({ method: 'PATCH', path: `${coll}/${name}`, body, contentType: 'application/json-patch+json', timeoutMs: 15_000 });
        const ctx = `${ops.length - 1} ${mode} copies of a ${seedLength}-byte string (${body.length} bytes of patch)`;
        if (exceededAt !== undefined) {
          assertStatus(r, 422, ctx, new RegExp(`^the server rejected our request due to an error in our request$`));
          assert.ok(r.body.includes(`Unable to complete the copy, the accumulated size increase of copy is ${exceededAt}, exceeding the limit ${COPY_LIMIT}`),
            `${ctx}: expected accumulated ${exceededAt}: ${r.body.slice(0, 500)}`);
          assert.equal(await snapshot(c, ns), before, `${ctx}: the namespace changed`);
        } else {
          assert.equal(r.status, 200, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
          assert.equal((JSON.parse(r.body) as { spec: Record<string, unknown> }).spec.x, undefined, `${ctx}: the unknown field was stored`);
        }
        await assertResponsive(c);
      },
    ), { ...runs(40, 40_000), examples: [[{ seedLength: 100, copies: 40, mode: 'double' }], [{ seedLength: 150_000, copies: 2, mode: 'double' }]] });
  });

  it('JSON patch with more than 10,000 operations is a 413; 10,000 are applied', async () => {
    const name = await fresh();
    for (const count of [10_000, 10_001]) {
      const ops = Array.from({ length: count }, () => ({ op: 'test', path: '/spec/weight', value: 80 }));
      const r = await c.send({ method: 'PATCH', path: `${coll}/${name}`, body: JSON.stringify(ops), contentType: 'application/json-patch+json' });
      if (count > 10_000) assertStatus(r, 413, `${count} ops`, /The allowed maximum operations in a JSON patch is 10000, got 10001/);
      else assert.equal(r.status, 200, r.body.slice(0, 300));
    }
  });

  it('merge patches cannot grow a stored llama past 3 MiB: 413 and unchanged; well below, 200', async () => {
    const MiB = 1024 * 1024;
    await fc.assert(fc.asyncProperty(
      fc.record({ baseMiB: fc.constantFrom(0, 0.5, 1, 1.5, 2), patchMiB: fc.constantFrom(0.25, 1, 1.5, 2.5) }),
      async ({ baseMiB, patchMiB }) => {
        const finalizers = Array.from({ length: Math.floor((baseMiB * MiB) / 24) }, (_, i) => `example.com/f-${String(i).padStart(7, '0')}`);
        const labels = Object.fromEntries(Array.from({ length: Math.floor((patchMiB * MiB) / 96) }, (_, i) => [`farm.example.com/l-${String(i).padStart(7, '0')}`, 'v'.repeat(60)]));
        const patch = JSON.stringify({ metadata: { labels } });
        const name = await fresh({ metadata: { finalizers } });
        const grown = JSON.stringify({ ...llama(name), metadata: { name, finalizers, labels } }).length;
        fc.pre(Math.abs(grown - OBJECT_LIMIT) > 64 * 1024 && patch.length < 3 * MiB); // off the boundary, within the body limit
        const before = await snapshot(c, ns);
        const r = await c.send({ method: 'PATCH', path: `${coll}/${name}`, body: patch, contentType: 'application/merge-patch+json', timeoutMs: 20_000 });
        const ctx = `base ${baseMiB} MiB of finalizers + ${patchMiB} MiB of labels (${grown} bytes)`;
        if (grown > OBJECT_LIMIT) {
          assertStatus(r, 413, ctx);
          assert.equal(await snapshot(c, ns), before, `${ctx}: the namespace changed`);
        } else {
          assert.equal(r.status, 200, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
        }
        // Clean up: finalizers keep a deleted llama, so strip them and delete for real.
        await c.send({ method: 'PATCH', path: `${coll}/${name}`, body: '{"metadata":{"finalizers":null,"labels":null}}', contentType: 'application/merge-patch+json' });
        await c.send({ method: 'DELETE', path: `${coll}/${name}` });
        await assertResponsive(c);
      },
    ), { ...runs(10, 40_000), examples: [[{ baseMiB: 2, patchMiB: 1.5 }], [{ baseMiB: 0.5, patchMiB: 1 }]] });
  });

  it('YAML alias bombs: a large expansion is a quick 4xx, a small one is fine', async () => {
    /** levels of anchors, each a list of `fanout` aliases to the one before: fanout^levels leaves. */
    const bomb = (levels: number, fanout: number, leaf: string) => {
      const lines = [`  l0: &l0 ["${leaf}"]`];
      for (let i = 1; i <= levels; i++) lines.push(`  l${i}: &l${i} [${Array(fanout).fill(`*l${i - 1}`).join(', ')}]`);
      return lines.join('\n');
    };
    await fc.assert(fc.asyncProperty(
      fc.record({ levels: fc.integer({ min: 1, max: 12 }), fanout: fc.integer({ min: 2, max: 12 }), leafLength: fc.constantFrom(1, 100, 10_000) }),
      async ({ levels, fanout, leafLength }) => {
        const leaves = fanout ** levels;
        const expandedBytes = leaves * (leafLength + 3);
        fc.pre(expandedBytes < 100_000 || expandedBytes > 50 * 1024 * 1024); // clearly small or clearly a bomb
        const name = `bomb-${counter++}`;
        const body = `apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata: {name: ${name}}\nspec:\n  weight: 1\n  height: 1\njunk:\n${bomb(levels, fanout, 'x'.repeat(leafLength))}\n`;
        const r = await c.send({ method: 'POST', path: `${coll}?fieldValidation=Ignore`, body, contentType: 'application/yaml', timeoutMs: 20_000 });
        const ctx = `alias bomb ${fanout}^${levels} leaves of ${leafLength} bytes (${expandedBytes} bytes expanded)`;
        assert.ok(r.ms < 5_000, `${ctx}: took ${r.ms} ms`);
        if (expandedBytes > 50 * 1024 * 1024) {
          assert.ok(r.status >= 400 && r.status < 500, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
          assertStatus(r, r.status, ctx);
          assert.equal((await c.send({ method: 'GET', path: `${coll}/${name}` })).status, 404, `${ctx}: the llama was created`);
        } else {
          assert.equal(r.status, 201, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
        }
        await assertResponsive(c);
      },
    ), { ...runs(30, 40_000), examples: [[{ levels: 9, fanout: 9, leafLength: 1 }], [{ levels: 3, fanout: 10, leafLength: 100 }]] });
  });

  it('a quadratic YAML alias (one long string aliased many times) is a quick 4xx', async () => {
    const big = 'y'.repeat(200_000);
    const body = `apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata: {name: quadratic}\nspec: {weight: 1, height: 1}\ns: &s "${big}"\nmany: [${Array(100).fill('*s').join(', ')}]\n`;
    const r = await c.send({ method: 'POST', path: coll, body, contentType: 'application/yaml', timeoutMs: 20_000 });
    assert.ok(r.ms < 5_000, `took ${r.ms} ms`);
    assert.ok(r.status >= 400 && r.status < 500, `→ ${r.status} ${r.body.slice(0, 300)}`);
    assertStatus(r, r.status, 'quadratic alias');
  });

  it('200k unknown fields in a body under 3 MiB: an answer (201 Warn/Ignore with bounded warnings, 400 Strict), quickly, not a 5xx', async () => {
    await fc.assert(fc.asyncProperty(
      fc.record({ count: fc.constantFrom(50_000, 200_000), where: fc.constantFrom('spec', 'root', 'metadata'), validation: fc.constantFrom('Warn', 'Ignore', 'Strict') }),
      async ({ count, where, validation }) => {
        const name = `many-${counter++}`;
        const unknown = Array.from({ length: count }, (_, i) => `"u${i}":0`).join(',');
        const metadata = where === 'metadata' ? `{"name":"${name}",${unknown}}` : `{"name":"${name}"}`;
        const spec = where === 'spec' ? `{"weight":1,"height":1,${unknown}}` : '{"weight":1,"height":1}';
        const body = `{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":${metadata},"spec":${spec}${where === 'root' ? `,${unknown}` : ''}}`;
        assert.ok(body.length < 3 * 1024 * 1024);
        const r = await c.send({ method: 'POST', path: `${coll}?fieldValidation=${validation}`, body, timeoutMs: 30_000 });
        const ctx = `${count} unknown fields in ${where} (${body.length} bytes), fieldValidation=${validation}`;
        assert.ok(r.ms < 15_000, `${ctx}: took ${r.ms} ms`);
        if (validation === 'Strict') {
          assertStatus(r, 400, ctx, /unknown field/);
        } else {
          assert.equal(r.status, 201, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
          const texts = warningHeaders(r);
          if (validation === 'Ignore') assert.deepEqual(texts, []);
          // The recorder stops at 4096 runes (plus the one that crossed it, cut to 256).
          else assert.ok(texts.length > 0 && texts.reduce((n, t) => n + [...t].length, 0) <= 4096 + 256 + texts.length * 10, `${ctx}: ${texts.length} warnings`);
        }
        await assertResponsive(c);
      },
    ), { ...runs(6, 50_000), examples: [[{ count: 200_000, where: 'spec', validation: 'Warn' }]] });
  });
});
