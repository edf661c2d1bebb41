// Property-based attack on every route, driven by the server's own OpenAPI v3 document: objects that
// are valid, nearly valid and hostile (wrong types, nulls, unknown fields with any Unicode name, deep
// nesting), sent with every verb and several content types. Properties: never a 5xx; every error is a
// metav1.Status whose code is the HTTP status; a refused request changes nothing; an accepted write is
// stored as answered; the server keeps answering /livez. Seeds are fixed, so a failure reproduces.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { startTestServer, type Response, type TestServer } from '../helpers/testServer.js';

interface Schema { type?: string; properties?: Record<string, Schema>; additionalProperties?: Schema | boolean; items?: Schema; $ref?: string; allOf?: Schema[]; enum?: unknown[] }

let s: TestServer;
let schemas: Record<string, Schema>;
const ns = 'fuzz';
const coll = `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`;
const seeded = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'target', labels: { a: 'b' } }, spec: { weight: 80, height: 1.5 } };

before(async () => {
  s = await startTestServer();
  const index = (await s.request('GET', '/openapi/v3')).json<{ paths: Record<string, { serverRelativeURL: string }> }>();
  const doc = (await s.request('GET', index.paths['apis/farm.example.com/v1alpha'].serverRelativeURL)).json<{ components: { schemas: Record<string, Schema> } }>();
  schemas = doc.components.schemas;
  assert.equal((await s.request('POST', coll, { body: seeded })).status, 201);
});
after(async () => { await s.close(); });

const resolve = (x: Schema): Schema => {
  if (x.$ref) return resolve(schemas[x.$ref.replace('#/components/schemas/', '')]);
  if (x.allOf?.length === 1) return resolve(x.allOf[0]);
  return x;
};

/** Unicode of every kind, including astral characters, controls and lone surrogates. */
const anyText = fc.string({ unit: 'binary', maxLength: 24 });
const hostileScalar = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.double(), anyText, fc.constant(''), fc.constant('\u0000'), fc.constant(1e308));
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(hostileScalar, fc.array(hostileScalar, { maxLength: 4 }), fc.dictionary(anyText, hostileScalar, { maxKeys: 4 }));

/** A value for the schema: mostly right, sometimes of the wrong type, null, or with unknown fields. */
function fromSchema(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const x = resolve(schema);
  const wrong = depth > 4 ? hostileScalar : hostileValue;
  let right: fc.Arbitrary<unknown>;
  if (x.enum) right = fc.constantFrom(...x.enum);
  else if (x.properties) {
    const known = fc.record(Object.fromEntries(Object.entries(x.properties).map(([k, v]) => [k, fromSchema(v, depth + 1)])), { requiredKeys: [] });
    right = fc.tuple(known, fc.dictionary(anyText, hostileValue, { maxKeys: 3 }), fc.boolean()).map(([k, extra, withExtra]) => (withExtra ? { ...extra, ...k } : k));
  } else if (x.type === 'array') right = fc.array(x.items ? fromSchema(x.items, depth + 1) : hostileScalar, { maxLength: 3 });
  else if (x.type === 'object') right = fc.dictionary(anyText, x.additionalProperties && typeof x.additionalProperties === 'object' ? fromSchema(x.additionalProperties, depth + 1) : hostileScalar, { maxKeys: 3 });
  else if (x.type === 'string') right = fc.oneof(anyText, fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/));
  else if (x.type === 'integer') right = fc.oneof(fc.integer(), fc.constant(2 ** 63));
  else if (x.type === 'number') right = fc.double({ noNaN: true });
  else if (x.type === 'boolean') right = fc.boolean();
  else right = hostileValue;
  return fc.oneof({ arbitrary: right, weight: 8 }, { arbitrary: wrong, weight: 1 }, { arbitrary: fc.constant(null), weight: 1 });
}

/** The namespace's llamas as stored (the list's own resourceVersion left out). */
async function snapshot(): Promise<string> {
  const r = await s.request('GET', coll);
  assert.equal(r.status, 200, r.body);
  return JSON.stringify(r.json<{ items: unknown[] }>().items);
}

function checkAnswer(r: Response, what: string): void {
  assert.ok(r.status < 500, `${what} → ${r.status} ${r.body.slice(0, 300)}`);
  if (r.status >= 300) {
    const st = r.json<{ kind: string; apiVersion: string; code: number; status: string }>();
    assert.equal(st.kind, 'Status', `${what}: ${r.body.slice(0, 300)}`);
    assert.equal(st.apiVersion, 'v1');
    assert.equal(st.code, r.status);
    assert.equal(st.status, 'Failure');
  }
}

type Encoding = 'json' | 'yaml' | 'none' | 'garbage';
const encodings = fc.constantFrom<Encoding>('json', 'json', 'yaml', 'none', 'garbage');

function encode(body: unknown, enc: Encoding): { body: string; contentType?: string; headers?: Record<string, string> } {
  const json = JSON.stringify(body) ?? 'null';
  switch (enc) {
    case 'json': return { body: json, contentType: 'application/json' };
    case 'yaml': return { body: dump(JSON.parse(json)), contentType: 'application/yaml' };
    case 'none': return { body: json, headers: { 'content-type': '' } };
    case 'garbage': return { body: json, contentType: 'text/x-llama; charset=ü' };
  }
}

/** One request under the properties: checked answer, and if refused, nothing changed. */
async function attempt(method: string, path: string, payload: { body?: string; contentType?: string; headers?: Record<string, string> }): Promise<Response> {
  const before = await snapshot();
  const r = await s.request(method, path, payload);
  checkAnswer(r, `${method} ${path} ${payload.contentType ?? ''} ${(payload.body ?? '').slice(0, 200)}`);
  if (r.status >= 300) assert.equal(await snapshot(), before, `${method} ${path} was refused (${r.status}) but changed the stored llamas`);
  return r;
}

const llamaSchema = () => schemas['com.example.farm.v1alpha.Llama'];
const fuzzName = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
const runs = { seed: 20261123, numRuns: 150, endOnFailure: true };

describe('schema-driven fuzzing of every verb (fixed seed)', () => {
  it('POST: generated llamas in any encoding', async () => {
    await fc.assert(fc.asyncProperty(fromSchema(llamaSchema()), fuzzName, encodings, async (obj, name, enc) => {
      const body = obj && typeof obj === 'object' && !Array.isArray(obj) ? { ...obj, metadata: { ...((obj as { metadata?: object }).metadata ?? {}), name } } : obj;
      const r = await attempt('POST', `${coll}?fieldValidation=${enc === 'yaml' ? 'Strict' : 'Warn'}`, encode(body, enc));
      if (r.status === 201) {
        // Stored exactly as answered; a second create of the same name is a conflict, not a 500.
        const stored = await s.request('GET', `${coll}/${r.json<{ metadata: { name: string } }>().metadata.name}`);
        assert.equal(stored.body, r.body);
        checkAnswer(await s.request('POST', coll, encode(body, 'json')), 'repeat create');
        await s.request('DELETE', `${coll}/${r.json<{ metadata: { name: string } }>().metadata.name}`);
      }
    }), runs);
  });

  it('PUT: generated replacements of the seeded llama', async () => {
    await fc.assert(fc.asyncProperty(fromSchema(llamaSchema()), encodings, fc.boolean(), async (obj, enc, keepRV) => {
      const current = (await s.request('GET', `${coll}/target`)).json<{ metadata: { resourceVersion: string } }>();
      const body = obj && typeof obj === 'object' && !Array.isArray(obj)
        ? { ...obj, metadata: { ...((obj as { metadata?: object }).metadata ?? {}), name: 'target', ...(keepRV ? { resourceVersion: current.metadata.resourceVersion } : {}) } } : obj;
      await attempt('PUT', `${coll}/target`, encode(body, enc));
    }), runs);
  });

  it('PATCH: generated merge patches and JSON patches', async () => {
    const paths = fc.constantFrom('/spec', '/spec/weight', '/spec/x', '/metadata/labels/a', '/metadata/labels', '/metadata/finalizers', '/metadata/finalizers/-', '/status', '', '/', '/~1', '/spec/0', '/metadata/name');
    const op = fc.record({ op: fc.oneof(fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test'), hostileScalar), path: fc.oneof(paths, hostileScalar), from: fc.oneof(paths, hostileScalar), value: hostileValue }, { requiredKeys: ['op'] });
    const patch = fc.oneof(
      fromSchema(llamaSchema()).map((b) => ({ type: 'application/merge-patch+json', body: b })),
      fc.array(op, { maxLength: 5 }).map((b) => ({ type: 'application/json-patch+json', body: b as unknown })),
      hostileValue.map((b) => ({ type: 'application/json-patch+json', body: b })),
    );
    await fc.assert(fc.asyncProperty(patch, fc.constantFrom('Strict', 'Warn', 'Ignore'), async (p, fv) => {
      await attempt('PATCH', `${coll}/target?fieldValidation=${fv}`, { body: JSON.stringify(p.body) ?? 'null', contentType: p.type });
    }), runs);
  });

  it('DELETE: generated DeleteOptions never delete when refused (dry run when accepted)', async () => {
    const options = fromSchema(schemas['io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions']);
    await fc.assert(fc.asyncProperty(options, async (opts) => {
      // Accepted deletes run as dry runs (a query dryRun=All always applies), so the target stays.
      const r = await attempt('DELETE', `${coll}/target?dryRun=All`, { body: JSON.stringify(opts) ?? 'null', contentType: 'application/json' });
      if (r.status < 300) assert.equal((await s.request('GET', `${coll}/target`)).status, 200);
    }), runs);
  });

  it('GET/LIST/WATCH: generated query parameters of any shape', async () => {
    const keys = fc.constantFrom('limit', 'continue', 'resourceVersion', 'resourceVersionMatch', 'labelSelector', 'fieldSelector', 'timeoutSeconds', 'allowWatchBookmarks', 'sendInitialEvents', 'includeObject', 'watch', 'fieldValidation', 'dryRun');
    const query = fc.array(fc.tuple(keys, fc.oneof(anyText, fc.integer().map(String), fc.constantFrom('true', '0', '-1', '9223372036854775808', 'Exact', 'NotOlderThan', 'a in (b', ''))), { maxLength: 5 });
    const accept = fc.constantFrom(undefined, 'application/json', 'application/yaml', 'application/json;as=Table;v=v1;g=meta.k8s.io', 'text/html', 'application/vnd.kubernetes.protobuf', '*/*;q=0');
    await fc.assert(fc.asyncProperty(query, accept, fc.constantFrom(coll, `${coll}/target`), async (q, acc, path) => {
      const qs = q.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
      // A watch may legitimately stream; bound it.
      const r = await s.request('GET', `${path}?${qs}&timeoutSeconds=1`, acc ? { headers: { accept: acc } } : {});
      checkAnswer(r, `GET ${path}?${qs} [${acc}]`);
    }), { ...runs, numRuns: 200 });
  });
});

describe('classes with a known boundary (fixed seed)', () => {
  it('nesting: ≤ 10,000 levels decode (any answer but 5xx), more is 400 "exceeded max depth", in every body kind', async () => {
    const nested = (d: number, arr: boolean) => (arr ? '['.repeat(d) + ']'.repeat(d) : '{"a":'.repeat(d) + '1' + '}'.repeat(d));
    const where = fc.constantFrom('create', 'merge', 'jsonpatch');
    await fc.assert(fc.asyncProperty(fc.integer({ min: 9_000, max: 11_000 }), fc.boolean(), where, async (depth, arr, kind) => {
      // The wrapper adds 2 levels (object + spec member, or the op list + op).
      const inner = nested(depth - 2, arr);
      const req = kind === 'create'
        ? { method: 'POST', path: coll, body: `{"metadata":{"name":"deep"},"spec":${inner}}`, type: 'application/json' }
        : kind === 'merge'
          ? { method: 'PATCH', path: `${coll}/target`, body: `{"spec":${inner}}`, type: 'application/merge-patch+json' }
          : { method: 'PATCH', path: `${coll}/target`, body: `[{"op":"add","path":"/spec/x","value":${inner}}]`, type: 'application/json-patch+json' };
      const r = await attempt(req.method, req.path, { body: req.body, contentType: req.type });
      if (depth > 10_000) {
        assert.equal(r.status, 400, r.body.slice(0, 200));
        assert.match(r.json<{ message: string }>().message, /exceeded max depth/);
      } else {
        assert.doesNotMatch(r.body, /exceeded max depth/);
      }
      await s.request('DELETE', `${coll}/deep`);
    }), { seed: 7, numRuns: 24 });
  });

  it('unknown fields named with any Unicode: answered (never 5xx), and a 201 is a real commit (the same create again is 409)', async () => {
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 5 }), fuzzName, async (fields, name) => {
      const spec: Record<string, unknown> = { weight: 1, height: 1 };
      for (const f of fields) if (!(f in spec) && !['color', 'favoriteFood', 'shorn'].includes(f)) spec[f] = 1;
      const r = await attempt('POST', coll, { body: JSON.stringify({ metadata: { name: `w${name}` }, spec }), contentType: 'application/json' });
      if (r.status === 201) {
        assert.equal((await s.request('POST', coll, { body: JSON.stringify({ metadata: { name: `w${name}` }, spec }), contentType: 'application/json' })).status, 409);
        await s.request('DELETE', `${coll}/w${name}`);
      }
    }), { seed: 11, numRuns: 150 });
  });

  it('DeleteOptions fields of every wrong JSON type are 400 (never ignored) and delete nothing', async () => {
    const isString = (v: unknown) => typeof v === 'string';
    // Whether the value has the JSON type the Go field decodes from (null is nil, always fine).
    const fields: [string, (v: unknown) => boolean][] = [
      ['dryRun', (v) => Array.isArray(v) && v.every(isString)],
      ['gracePeriodSeconds', (v) => Number.isInteger(v) && Math.abs(v as number) < 2 ** 63],
      ['orphanDependents', (v) => typeof v === 'boolean'],
      ['propagationPolicy', isString],
      ['preconditions', (v) => typeof v === 'object' && !Array.isArray(v)
        && ['uid', 'resourceVersion'].every((k) => { const x = (v as Record<string, unknown>)[k]; return x === undefined || x === null || isString(x); })],
    ];
    await fc.assert(fc.asyncProperty(fc.constantFrom(...fields), hostileValue, async ([field, rightType], value) => {
      const r = await attempt('DELETE', `${coll}/target`, { body: JSON.stringify({ [field]: value }), contentType: 'application/json' });
      const wrongType = value !== null && !rightType(value);
      assert.equal(r.status === 400, wrongType, `${field}=${JSON.stringify(value)} → ${r.status} ${r.body.slice(0, 200)}`);
      if (r.status >= 300) assert.equal((await s.request('GET', `${coll}/target`)).status, 200);
      else assert.equal(await s.request('POST', coll, { body: seeded }).then((x) => x.status), 201, 'recreate the target after an accepted delete');
    }), { seed: 3, numRuns: 200 });
  });

  it('the server still answers /livez after all of it', async () => {
    assert.equal((await s.request('GET', '/livez')).status, 200);
  });
});
