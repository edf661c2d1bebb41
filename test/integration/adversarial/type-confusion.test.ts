// Type confusion: a body field or query parameter of the wrong type is a 400 and changes nothing —
// never ignored, never half-applied. The oracles are upstream's decoders: encoding/json for
// DeleteOptions (null is fine for any field), runtime/conversion.go for query parameters (int64 by
// strconv.ParseInt of the first value; booleans: only "0" and "false" are false), sigs.k8s.io/json for
// duplicate keys.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { assertResponsive, assertStatus, assertWellFormed, client, ensureLlama, llamasOf, runs, warningHeaders, type Client } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const ns = 'confused';
const coll = llamasOf(ns);
const target = `${coll}/victim`;

before(async () => { s = await startTestServer(); c = client(s); await ensureLlama(c, ns, 'victim'); });
after(async () => { c.close(); await s.close(); });

type JsonType = 'string' | 'int64' | 'bool' | 'object' | 'stringArray';
/** metav1.DeleteOptions, field by field, with the Go type each decodes into. */
const deleteOptionFields: [string[], JsonType][] = [
  [['dryRun'], 'stringArray'], [['preconditions'], 'object'], [['preconditions', 'uid'], 'string'], [['preconditions', 'resourceVersion'], 'string'],
  [['propagationPolicy'], 'string'], [['orphanDependents'], 'bool'], [['gracePeriodSeconds'], 'int64'],
  [['kind'], 'string'], [['apiVersion'], 'string'], [['ignoreStoreReadErrorWithClusterBreakingPotential'], 'bool'],
];

/** JSON texts that encoding/json refuses to decode into `type` (null is never among them). */
function wrongJson(type: JsonType): fc.Arbitrary<string> {
  const str = fc.string({ maxLength: 6 }).map((x) => JSON.stringify(x));
  const num = fc.oneof(fc.integer().map(String), fc.constantFrom('1.5', '0.0', '-3', '1e2'));
  const bool = fc.constantFrom('true', 'false');
  const arr = fc.constantFrom('[]', '[1]', '["All"]', '[null]');
  const obj = fc.constantFrom('{}', '{"a":1}', '{"uid":"x"}');
  switch (type) {
    case 'string': return fc.oneof(num, bool, arr, obj);
    case 'bool': return fc.oneof(str, num, arr, obj);
    case 'object': return fc.oneof(str, num, bool, arr);
    // Go's int64 decoding: strconv.ParseInt of the literal — fractions, exponents and overflow fail.
    case 'int64': return fc.oneof(str, bool, arr, obj, fc.constantFrom('1.5', '5.0', '1e2', '1E0', '-0.5', '9223372036854775808', '-9223372036854775809', '1e400'));
    case 'stringArray': return fc.oneof(str, num, bool, obj, fc.constantFrom('[1]', '[true]', '[{}]', '[[]]', '["All",5]'));
  }
}

function nestIn(path: string[], valueText: string): string {
  return path.reduceRight((inner, key) => `{${JSON.stringify(key)}:${inner}}`, valueText);
}

describe('type confusion', () => {
  it('DeleteOptions: every field with every wrong JSON type is a 400 and the llama is still there, unchanged', async () => {
    await fc.assert(fc.asyncProperty(
      fc.constantFrom(...deleteOptionFields).chain(([path, type]) => wrongJson(type).map((value) => ({ path, value }))),
      async ({ path, value }) => {
        await ensureLlama(c, ns, 'victim');
        const before = await c.send({ method: 'GET', path: target });
        const body = nestIn(path, value);
        const r = await c.send({ method: 'DELETE', path: target, body });
        assertStatus(r, 400, `DELETE with ${body}`, /cannot unmarshal|json/);
        const after = await c.send({ method: 'GET', path: target });
        assert.equal(after.status, 200, `DELETE with ${body} → ${r.status}, and the llama is gone`);
        assert.equal(after.body, before.body, `DELETE with ${body} changed the llama`);
      },
    ), { ...runs(150, 20_000), examples: [[{ path: ['dryRun'], value: '"All"' }], [{ path: ['preconditions'], value: '"x"' }]] });
    await assertResponsive(c);
  });

  it('DeleteOptions: null for any field is no value at all (encoding/json), so a dry run with it succeeds', async () => {
    await fc.assert(fc.asyncProperty(fc.subarray(deleteOptionFields.filter(([p]) => p[0] !== 'kind' && p[0] !== 'apiVersion'), { minLength: 1 }), async (fields) => {
      const body: Record<string, unknown> = {};
      for (const [path] of fields) {
        if (path.length === 1) body[path[0]] = null;
        else body[path[0]] = { ...(body[path[0]] as object ?? {}), [path[1]]: null };
      }
      const r = await c.send({ method: 'DELETE', path: `${target}?dryRun=All`, body: JSON.stringify(body) });
      assert.equal(r.status, 200, `DELETE ?dryRun=All with ${JSON.stringify(body)} → ${r.status} ${r.body.slice(0, 300)}`);
      assert.equal((await c.send({ method: 'GET', path: target })).status, 200);
    }), runs(30));
  });

  it('DeleteOptions.gracePeriodSeconds: every int64 literal ≥ 0 is accepted, exactly (a dry run answers 200)', async () => {
    await fc.assert(fc.asyncProperty(fc.bigInt({ min: 0n, max: 9223372036854775807n }), async (n) => {
      const body = `{"gracePeriodSeconds":${n}}`;
      const r = await c.send({ method: 'DELETE', path: `${target}?dryRun=All`, body });
      assert.equal(r.status, 200, `DELETE ?dryRun=All ${body} → ${r.status} ${r.body.slice(0, 300)}`);
    }), { ...runs(30), examples: [[0n], [30n], [9223372036854775807n]] });
  });

  it('int64 query parameters (limit, timeoutSeconds): 400 exactly when strconv.ParseInt(first value, 10, 64) fails', async () => {
    const value = fc.oneof(
      fc.constantFrom('', '-', '+5', '-0', '007', '1.5', '1e3', '0x10', ' 1', '1 ', '9223372036854775807', '9223372036854775808', '99999999999999999999', 'NaN', '٣'),
      fc.integer({ min: 0, max: 1_000 }).map(String),
      fc.string({ maxLength: 6, unit: 'binary' }),
    );
    const parses = (v: string) => /^[+-]?[0-9]+$/.test(v) && BigInt(v) <= 9223372036854775807n && BigInt(v) >= -9223372036854775808n;
    await fc.assert(fc.asyncProperty(
      fc.record({ param: fc.constantFrom('limit', 'timeoutSeconds'), values: fc.array(value, { minLength: 1, maxLength: 2 }), watch: fc.boolean() }),
      async ({ param, values, watch }) => {
        fc.pre(!parses(values[0]) || !values[0].startsWith('-')); // a negative int parses; what it means is another rule
        const q = [...values.map((v) => `${param}=${encodeURIComponent(v)}`), ...(watch ? ['watch=true'] : [])].join('&');
        const r = await c.send({ method: 'GET', path: `${coll}?${q}`, stream: watch });
        if (parses(values[0])) assert.equal(r.status, 200, `?${q} → ${r.status} ${r.body.slice(0, 300)}`);
        else assertStatus(r, 400, `?${q}`);
      },
    ), { ...runs(80, 20_000), examples: [[{ param: 'limit', values: ['9223372036854775808'], watch: false }], [{ param: 'limit', values: [''], watch: false }]] });
  });

  it('boolean query parameters: only "0" and "false" (any case) are false, anything else is true — never a 400 (conversion.go)', async () => {
    const value = fc.oneof(fc.constantFrom('', 'true', 'false', 'FALSE', 'False', '0', '1', 'yes', 'no', 'maybe', 'null', '00'), fc.string({ maxLength: 5, unit: 'binary' }));
    const truthy = (v: string) => !(v === '0' || v.toLowerCase() === 'false');
    await fc.assert(fc.asyncProperty(fc.record({ param: fc.constantFrom('watch', 'allowWatchBookmarks'), v: value }), async ({ param, v }) => {
      const q = `${param}=${encodeURIComponent(v)}`;
      const isWatch = param === 'watch' && truthy(v);
      const r = await c.send({ method: 'GET', path: `${coll}?${q}`, stream: true });
      assert.equal(r.status, 200, `?${q} → ${r.status} ${r.body.slice(0, 300)}`);
      if (!isWatch) assert.equal((JSON.parse(r.body) as { kind: string }).kind, 'LlamaList', `?${q} should be a list`);
      else assert.match(r.headers['content-type'] ?? '', /json/, `?${q} should be a watch`);
    }), { ...runs(40), examples: [[{ param: 'watch', v: 'maybe' }], [{ param: 'watch', v: '' }]] });
  });

  it('continue together with resourceVersion is a 400; an unparsable resourceVersion on GET is a 400', async () => {
    await ensureLlama(c, ns, 'second');
    const page = JSON.parse((await c.send({ method: 'GET', path: `${coll}?limit=1` })).body) as { metadata: { continue?: string; resourceVersion: string } };
    assert.ok(page.metadata.continue, 'two llamas, limit=1: a continue token');
    // storage/interfaces.go: any resourceVersion but "" and "0" next to a continue token is refused.
    await fc.assert(fc.asyncProperty(fc.constantFrom('0', '1', page.metadata.resourceVersion, 'abc'), async (rv) => {
      const r = await c.send({ method: 'GET', path: `${coll}?limit=1&continue=${encodeURIComponent(page.metadata.continue!)}&resourceVersion=${rv}` });
      if (rv === '0') assert.equal(r.status, 200, `continue + resourceVersion=0 → ${r.status} ${r.body.slice(0, 300)}`);
      else assertStatus(r, 400, `continue + resourceVersion=${rv}`, /specifying resource version is not allowed when using continue/);
    }), { ...runs(6), examples: [['0'], ['1'], ['abc']] });
    const rvValue = fc.oneof(fc.constantFrom('abc', '-1', '+1', '1.0', ' 1', '1e3', '18446744073709551616', '0x1', '١'), fc.string({ minLength: 1, maxLength: 6, unit: 'binary' }));
    await fc.assert(fc.asyncProperty(rvValue, async (rv) => {
      fc.pre(!/^[0-9]+$/.test(rv)); // strconv.ParseUint accepts exactly these
      const r = await c.send({ method: 'GET', path: `${target}?resourceVersion=${encodeURIComponent(rv)}` });
      assertStatus(r, 400, `GET ?resourceVersion=${JSON.stringify(rv)}`);
    }), runs(40));
  });

  it('duplicate JSON keys: Strict is a 400 naming each, Warn a Warning each and the last value wins, never a 5xx', async () => {
    const fields: [string, string, string][] = [['spec', 'weight', '2'], ['spec', 'height', '3'], ['spec', 'color', '"brown"'], ['metadata', 'name', '"dup-name"'], ['', 'kind', '"Llama"'], ['', 'apiVersion', '"farm.example.com/v1alpha"']];
    let n = 0;
    await fc.assert(fc.asyncProperty(fc.subarray(fields, { minLength: 1 }), fc.constantFrom('Strict', 'Warn'), async (dups, validation) => {
      const name = `dup-${n++}`;
      const extra = (where: string) => dups.filter(([w]) => w === where).map(([, k, v]) => `,${JSON.stringify(k)}:${v}`).join('');
      const nameDup = dups.some(([w, k]) => w === 'metadata' && k === 'name');
      const body = `{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"name":"${name}"${nameDup ? `,"name":"${name}"` : ''}},"spec":{"weight":1,"height":1,"color":"white"${extra('spec')}}${extra('')}}`;
      const r = await c.send({ method: 'POST', path: `${coll}?fieldValidation=${validation}`, body });
      const paths = dups.map(([w, k]) => (w ? `${w}.${k}` : k));
      assertWellFormed(r, body);
      if (validation === 'Strict') {
        const st = assertStatus(r, 400, body);
        for (const p of paths) assert.ok(st.message?.includes(`duplicate field "${p}"`), `${body}: ${st.message}`);
        assert.equal((await c.send({ method: 'GET', path: `${coll}/${name}` })).status, 404);
      } else {
        assert.equal(r.status, 201, `${body} → ${r.status} ${r.body.slice(0, 300)}`);
        const got = warningHeaders(r);
        for (const p of paths) assert.ok(got.includes(`299 - "duplicate field \\"${p}\\""`), `${body}: ${JSON.stringify(got)}`);
        const stored = JSON.parse(r.body) as { spec: Record<string, unknown> };
        for (const [w, k, v] of dups) if (w === 'spec') assert.deepEqual(stored.spec[k], JSON.parse(v), `${body}: the last ${k} should win`);
      }
    }), runs(30));
  });
});
