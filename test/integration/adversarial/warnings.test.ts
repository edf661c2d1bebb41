// Warnings never break a commit: unknown (and duplicate) fields named with any Unicode — beyond Latin-1,
// astral, quotes, backslashes, control characters, very long — give 201, one Warning header per
// warning as k8s.io/apiserver's recorder writes them (UTF-8 on the wire), the body is the stored
// object, and a retry is a 409 (so the 201 really was the one commit).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';
import { assertResponsive, assertStatus, client, llamasOf, runs, warningHeaders, type Client, type Reply } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const coll = llamasOf('warnings');

before(async () => { s = await startTestServer(); c = client(s); });
after(async () => { c.close(); await s.close(); });

const known = new Set(['weight', 'height', 'color', 'favoriteFood', 'shorn', 'apiVersion', 'kind', 'metadata', 'spec', 'status']);
// unicode.IsControl: C0, DEL, C1. NewWarningHeader refuses a text containing one.
// eslint-disable-next-line no-control-regex
const control = /[\u0000-\u001f\u007f-\u009f]/;
const runes = (t: string) => [...t].length;

/** k8s.io/apiserver filters/warning.go: dedupe, 4096 runes in all, then every warning cut to 256 runes. */
function expectedHeaders(texts: string[]): string[] {
  const ordered: string[] = [];
  const seen = new Set<string>();
  let out: string[] = [];
  let written = 0;
  let truncating = false;
  const cut = (t: string) => (runes(t) > 256 ? [...t].slice(0, 256).join('') : t);
  const header = (t: string) => `299 - "${t.replace(/["\\]/g, (ch) => `\\${ch}`)}"`;
  for (const raw of texts) {
    if (raw === '' || (truncating && written >= 4096) || seen.has(raw)) continue;
    seen.add(raw);
    ordered.push(raw);
    const t = truncating ? cut(raw) : raw;
    if (control.test(t)) continue;
    if (written + runes(t) <= 4096 || truncating) { written += runes(t); out.push(header(t)); continue; }
    truncating = true;
    written = 0;
    out = [];
    for (const w of ordered.map(cut)) if (!control.test(w)) { written += runes(w); out.push(header(w)); }
  }
  return out;
}

const fieldName = fc.oneof(
  fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }),
  fc.string({ minLength: 1, maxLength: 6, unit: fc.constantFrom('ß', '体', '重', '🦙', '"', '\\', '\u2028', 'é', '\u00a0', 'Ω', '\u200b', '\u0085', '\t') }),
  fc.constantFrom('größe', '体重', '🦙', 'constructor', 'toString', 'a"b', 'back\\slash', 'dotted.name', 'nul\u0000byte', '\u001b[31mred'),
).filter((n) => !known.has(n) && n !== '__proto__'); // __proto__ has its own test below, so that it does not mask the rest

interface Case { names: string[]; where: 'spec' | 'root'; duplicate: boolean; encoding: 'json' | 'yaml'; query: string }

function bodyOf(k: Case, name: string): string {
  const unknown = k.names.map((n, i) => `${JSON.stringify(n)}:${i}`);
  const specKeys = ['"weight":5', '"height":1', ...(k.where === 'spec' ? unknown : [])];
  if (k.duplicate) specKeys.push('"weight":6');
  const root = [`"apiVersion":"farm.example.com/v1alpha"`, `"kind":"Llama"`, `"metadata":{"name":${JSON.stringify(name)}}`, `"spec":{${specKeys.join(',')}}`,
    ...(k.where === 'root' ? unknown : [])];
  const json = `{${root.join(',')}}`;
  return k.encoding === 'json' ? json : toYaml(JSON.parse(json));
}

function expectedTexts(k: Case): string[] {
  const prefix = k.where === 'spec' ? 'spec.' : '';
  const dup = k.duplicate ? ['duplicate field "spec.weight"'] : [];
  return [...dup, ...k.names.map((n) => `unknown field "${prefix}${n}"`)];
}

let counter = 0;
async function createAndCheck(k: Case): Promise<Reply> {
  const name = `w-${counter++}`;
  const body = bodyOf(k, name);
  const contentType = k.encoding === 'json' ? 'application/json' : 'application/yaml';
  const r = await c.send({ method: 'POST', path: `${coll}${k.query}`, body, contentType });
  const ctx = `POST ${k.query} [${contentType}] ${JSON.stringify(body.slice(0, 300))}`;
  assert.equal(r.status, 201, `${ctx} → ${r.status} ${r.body.slice(0, 300)}`);
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    assert.doesNotMatch(r.rawHeaders[i + 1], /[\u0000-\u0008\u000a-\u001f\u007f]/, `${ctx}: header ${r.rawHeaders[i]} carries a control character`);
  }
  const stored = await c.send({ method: 'GET', path: `${coll}/${name}` });
  assert.equal(stored.status, 200, `${ctx}: answered 201, but GET → ${stored.status}`);
  assert.deepEqual(JSON.parse(stored.body), JSON.parse(r.body), `${ctx}: the 201 body is not the stored object`);
  assertStatus(await c.send({ method: 'POST', path: coll, body, contentType }), 409, `${ctx} (retry)`, /already exists/);
  return r;
}

describe('warnings', () => {
  it('unknown fields named with any Unicode: 201, the stored object, one Warning header per warning (UTF-8), a retry is 409', async () => {
    await fc.assert(fc.asyncProperty(
      fc.record({
        names: fc.uniqueArray(fieldName, { minLength: 1, maxLength: 6 }),
        where: fc.constantFrom<'spec' | 'root'>('spec', 'root'),
        duplicate: fc.boolean(),
        encoding: fc.constantFrom<'json' | 'yaml'>('json', 'yaml'),
        query: fc.constantFrom('', '?fieldValidation=Warn'),
      }).map((k) => ({ ...k, duplicate: k.duplicate && k.encoding === 'json' })),
      async (k) => {
        const r = await createAndCheck(k);
        const got = warningHeaders(r).sort();
        const clean = expectedHeaders(expectedTexts({ ...k, names: k.names.filter((n) => !control.test(n)) }));
        if (k.names.every((n) => !control.test(n))) {
          assert.deepEqual(got, clean.sort(), `warnings for ${JSON.stringify(k)}`);
        } else {
          // Names with control characters: upstream may quote them (%q) or drop the warning; the others are exact.
          for (const h of clean) assert.ok(got.includes(h), `missing ${JSON.stringify(h)} in ${JSON.stringify(got)}`);
          assert.ok(got.length <= expectedTexts(k).length, `more warnings than warnable fields: ${JSON.stringify(got)}`);
        }
      },
    ), runs(120, 30_000));
    await assertResponsive(c);
  });

  it('very long names: warnings past 4096 runes are each cut to 256 runes, still one header each, still 201', async () => {
    await fc.assert(fc.asyncProperty(
      fc.record({
        names: fc.uniqueArray(fc.tuple(fc.constantFrom('x', 'ü', '体', '🦙', '"'), fc.integer({ min: 200, max: 3_000 }), fc.nat(99)).map(([ch, n, tag]) => `${tag}-${ch.repeat(n)}`),
          { minLength: 1, maxLength: 5, selector: (n) => n.split('-')[0] }),
        where: fc.constant<'spec'>('spec'), duplicate: fc.constant(false), encoding: fc.constant<'json'>('json'), query: fc.constant(''),
      }),
      async (k) => {
        const r = await createAndCheck(k);
        assert.deepEqual(warningHeaders(r).sort(), expectedHeaders(expectedTexts(k)).sort());
      },
    ), runs(25, 20_000));
  });

  it('a field named __proto__ is an unknown field like any other (JSON and YAML): 201 with its warning', async () => {
    for (const encoding of ['json', 'yaml'] as const) {
      for (const where of ['spec', 'root'] as const) {
        const k: Case = { names: ['__proto__', '体重'], where, duplicate: false, encoding, query: '' };
        const r = await createAndCheck(k);
        assert.deepEqual(warningHeaders(r).sort(), expectedHeaders(expectedTexts(k)).sort());
      }
    }
  });

  it('Ignore gives no Warning header and Strict a 400 naming every field, whatever the names', async () => {
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fieldName.filter((n) => !control.test(n)), { minLength: 1, maxLength: 4 }), async (names) => {
      const k: Case = { names, where: 'spec', duplicate: false, encoding: 'json', query: '?fieldValidation=Ignore' };
      const r = await createAndCheck(k);
      assert.deepEqual(warningHeaders(r), []);
      const strict = await c.send({ method: 'POST', path: `${coll}?fieldValidation=Strict`, body: bodyOf(k, `strict-${counter++}`) });
      const st = assertStatus(strict, 400, `Strict with ${JSON.stringify(names)}`);
      for (const n of names) assert.ok(st.message?.includes(`unknown field "spec.${n}"`), `Strict message lacks ${JSON.stringify(n)}: ${st.message}`);
    }), runs(40, 20_000));
  });
});
