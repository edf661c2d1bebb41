// Nesting depth, as encoding/json counts it (one level per open object or array, 10,000 allowed): a
// document up to 10,000 levels deep is handled by kube's field-validation rules (an unknown field deep
// down is dropped with Ignore, a 400 with Strict), one level more is a 400 "exceeded max depth" —
// in create bodies, merge patches, JSON patch values and YAML (flow and block). Never a 5xx, never slow.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { assertResponsive, assertStatus, client, llamasOf, runs, snapshot, type Client, type Reply } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const ns = 'nesting';
const coll = llamasOf(ns);
const MAX_DEPTH = 10_000;

before(async () => {
  s = await startTestServer();
  c = client(s);
  const r = await c.send({ method: 'POST', path: coll, body: JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'target' }, spec: { weight: 7, height: 1 } }) });
  assert.equal(r.status, 201);
});
after(async () => { c.close(); await s.close(); });

/** Nesting shape: containers opened in this cyclic order ('a' array, 'o' object with key k). */
interface Shape { pattern: ('a' | 'o')[]; key: string }
const shape: fc.Arbitrary<Shape> = fc.record({
  pattern: fc.array(fc.constantFrom<'a' | 'o'>('a', 'o'), { minLength: 1, maxLength: 4 }),
  key: fc.string({ minLength: 1, maxLength: 3, unit: 'binary' }),
});

/** A JSON value with exactly `levels` open containers, built as text (JSON.stringify would recurse). */
function nestedJson(levels: number, sh: Shape): string {
  const key = JSON.stringify(sh.key);
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < levels; i++) {
    const kind = sh.pattern[i % sh.pattern.length];
    open.push(kind === 'a' ? '[' : `{${key}:`);
    close.push(kind === 'a' ? ']' : '}');
  }
  return `${open.join('')}1${close.reverse().join('')}`;
}

const depths = [100, 3_000, 9_999, 10_000, 10_001, 100_000];
const validations = ['Ignore', 'Strict', 'Warn'] as const;
type Validation = typeof validations[number];

let counter = 0;
// `depth` is the whole document's depth: the containers above the unknown field count too.
const placements = {
  create: (depth: number, sh: Shape) => {
    const name = `deep-${counter++}`;
    return { name, method: 'POST', path: coll, contentType: 'application/json',
      body: `{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"name":"${name}"},"spec":{"weight":1,"height":1,"junk":${nestedJson(depth - 2, sh)}}}` };
  },
  mergePatch: (depth: number, sh: Shape) =>
    ({ name: 'target', method: 'PATCH', path: `${coll}/target`, contentType: 'application/merge-patch+json', body: `{"spec":{"junk":${nestedJson(depth - 2, sh)}}}` }),
  jsonPatchValue: (depth: number, sh: Shape) =>
    ({ name: 'target', method: 'PATCH', path: `${coll}/target`, contentType: 'application/json-patch+json', body: `[{"op":"add","path":"/spec/junk","value":${nestedJson(depth - 2, sh)}}]` }),
};

async function expectDepthRule(placement: keyof typeof placements, depth: number, sh: Shape, validation: Validation): Promise<void> {
  const req = placements[placement](depth, sh);
  const before = await snapshot(c, ns);
  const r: Reply = await c.send({ method: req.method, path: `${req.path}?fieldValidation=${validation}`, body: req.body, contentType: req.contentType, timeoutMs: 10_000 });
  const ctx = `${placement} ${depth} levels (${sh.pattern.join('')}, key ${JSON.stringify(sh.key)}) fieldValidation=${validation}`;
  assert.ok(r.ms < 5_000, `${ctx}: took ${r.ms} ms`);
  if (depth > MAX_DEPTH) {
    assertStatus(r, 400, ctx, /exceeded max depth/);
  } else if (validation === 'Strict') {
    // A create is a 400 strict decoding error; a patch a 422 Invalid on field "patch" (handlers/patch.go).
    assertStatus(r, placement === 'create' ? 400 : 422, ctx, /unknown field "spec\.junk"/);
  } else {
    assert.equal(r.status, placement === 'create' ? 201 : 200, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
    const stored = JSON.parse(r.body) as { spec: Record<string, unknown> };
    assert.equal(stored.spec.junk, undefined, `${ctx}: the unknown field was stored`);
    const warnings = r.rawHeaders.filter((_, i) => i % 2 === 0 && r.rawHeaders[i].toLowerCase() === 'warning').length;
    assert.equal(warnings, validation === 'Warn' ? 1 : 0, `${ctx}: ${warnings} Warning headers`);
  }
  if (r.status >= 400) assert.equal(await snapshot(c, ns), before, `${ctx}: a rejected request changed the namespace`);
  await assertResponsive(c);
}

const plain: Shape = { pattern: ['o'], key: 'a' };
/** Every depth × fieldValidation always runs (fast-check `examples`), then random shapes on top. */
const cases = fc.record({ depth: fc.constantFrom(...depths), shape, validation: fc.constantFrom(...validations) });
const examples = depths.flatMap((depth) => validations.map((validation) => [{ depth, shape: plain, validation }] as [{ depth: number; shape: Shape; validation: Validation }]));

describe('nesting depth', () => {
  for (const placement of Object.keys(placements) as (keyof typeof placements)[]) {
    it(`${placement}: ≤ 10,000 levels follow fieldValidation, more are a 400 "exceeded max depth"`, async () => {
      await fc.assert(fc.asyncProperty(cases, async ({ depth, shape: sh, validation }) => expectDepthRule(placement, depth, sh, validation)),
        { ...runs(examples.length + 12, 30_000), examples });
    });
  }

  // YAML: kube converts it to JSON first (sigs.k8s.io/yaml); the same depth rule applies after.
  const yamlDoc = (name: string, junk: string) =>
    `apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata: {name: ${name}}\nspec:\n  weight: 1\n  height: 1\n  junk: ${junk}\n`;
  const yamlStyles = {
    flowSequences: (n: number) => `${'['.repeat(n)}x${']'.repeat(n)}`,
    flowMaps: (n: number) => `${'{a: '.repeat(n)}x${'}'.repeat(n)}`,
    blockSequences: (n: number) => `\n  ${'- '.repeat(n)}x`,
    // Indentation grows with depth (n² bytes), so only shallow block maps fit in a request.
    blockMaps: (n: number) => Array.from({ length: n }, (_, i) => `\n${' '.repeat(4 + 2 * i)}a:`).join('') + ' x',
  };

  it('YAML flow and block nesting: deep but ≤ 10,000 works by fieldValidation, deeper is a quick 400', async () => {
    const styleNames = Object.keys(yamlStyles) as (keyof typeof yamlStyles)[];
    const yamlCase = fc.record({ style: fc.constantFrom(...styleNames), depth: fc.constantFrom(100, 1_000, 3_000, 9_000, 10_001, 100_000, 1_000_000), validation: fc.constantFrom<Validation>('Ignore', 'Strict') })
      .filter((k) => k.style !== 'blockMaps' || k.depth <= 1_000);
    const yamlExamples = styleNames.flatMap((style) => [100, 1_000, 3_000, 9_000, 10_001, 100_000, 1_000_000]
      .filter((depth) => style !== 'blockMaps' || depth <= 1_000)
      .map((depth) => [{ style, depth, validation: 'Ignore' as Validation }] as [{ style: keyof typeof yamlStyles; depth: number; validation: Validation }]));
    await fc.assert(fc.asyncProperty(yamlCase, async ({ style, depth, validation }) => {
      const name = `yaml-${counter++}`;
      const body = yamlDoc(name, yamlStyles[style](depth));
      const ctx = `YAML ${style} ${depth} levels under spec.junk (${body.length} bytes) fieldValidation=${validation}`;
      const r = await c.send({ method: 'POST', path: `${coll}?fieldValidation=${validation}`, body, contentType: 'application/yaml', timeoutMs: 15_000 });
      assert.ok(r.ms < 5_000, `${ctx}: took ${r.ms} ms`);
      if (depth + 2 > MAX_DEPTH) assertStatus(r, body.length > 3 * 1024 * 1024 ? 413 : 400, ctx);
      else if (validation === 'Strict') assertStatus(r, 400, ctx, /unknown field "spec\.junk"/);
      else assert.equal(r.status, 201, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
      await assertResponsive(c);
    }), { ...runs(yamlExamples.length + 6, 40_000), examples: yamlExamples });
  });
});
