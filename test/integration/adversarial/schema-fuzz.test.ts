// Schema-driven fuzzing over our own OpenAPI v3 document: every verb and route, bodies valid, slightly
// invalid and hostile, in JSON, YAML, no Content-Type and garbage types, query parameters of any shape.
// For every request: no 5xx, a Status for anything not 2xx, a rejected request changes nothing, an
// accepted write reads back exactly as it was answered, and the server stays responsive.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';
import {
  assertResponsive, assertWellFormed, client, llamasOf, runs, snapshot, type Client, type Reply,
} from '../../helpers/adversarial.js';
import {
  applyMutation, edgeNumbers, mutation, resolve, schemaPaths, validValue, wrongTypeFor, type Json, type OpenApiDoc, type Schema,
} from '../../helpers/openapiArbitraries.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
let doc: OpenApiDoc;
const ns = 'fuzz';
const coll = llamasOf(ns);
const pool = ['alpaca', 'vicuna', 'guanaco'];
const LLAMA = 'com.example.farm.v1alpha.Llama';
const DELETE_OPTIONS = 'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions';

before(async () => {
  s = await startTestServer();
  c = client(s);
  const r = await c.send({ method: 'GET', path: '/openapi/v3/apis/farm.example.com/v1alpha' });
  assert.equal(r.status, 200);
  doc = JSON.parse(r.body) as OpenApiDoc;
  assert.ok(doc.components.schemas[LLAMA] && doc.components.schemas[DELETE_OPTIONS], 'the OpenAPI document names Llama and DeleteOptions');
});
after(async () => { c.close(); await s.close(); });

type Encoding = 'json' | 'yaml' | 'none' | 'garbage' | 'bytes';
interface Generated {
  method: string;
  route: 'collection' | 'item' | 'allNamespaces';
  name: string;
  query: [string, string][];
  body?: Json;
  encoding: Encoding;
  contentType?: string;
  garbageBytes?: number[];
}

// Header-safe (Node refuses other bytes) but otherwise anything.
const headerText = fc.string({ maxLength: 40, unit: fc.integer({ min: 0x20, max: 0xff }).filter((n) => n !== 0x7f).map((n) => String.fromCharCode(n)) });
const garbageType = fc.oneof(
  fc.constantFrom('text/plain', 'application/xml', 'application/json; charset=utf-16', 'application/*', '*/*', ';', 'application/json;;;',
    'multipart/form-data; boundary=x', 'application/vnd.kubernetes.protobuf', 'application/strategic-merge-patch+json',
    'application/apply-patch+yaml', 'APPLICATION/JSON', 'application/json ; charset=UTF-8', 'application/yaml; x=y'),
  headerText,
);

/** Values for a query parameter of `type`: right, wrong, empty, overflowing, repeated. */
function queryValue(name: string, type: string | undefined): fc.Arbitrary<string> {
  const valid: Record<string, string[]> = {
    dryRun: ['All'], fieldValidation: ['Strict', 'Warn', 'Ignore'], propagationPolicy: ['Foreground', 'Background', 'Orphan'],
    resourceVersion: ['0', ''], resourceVersionMatch: ['NotOlderThan', 'Exact'], labelSelector: ['app=a', 'app in (a,b)', '!tier'],
    fieldSelector: ['metadata.name=alpaca', 'spec.color=white', 'metadata.namespace!=x'], pretty: ['true'], fieldManager: ['fuzzer'],
  };
  const hostile = fc.oneof(
    fc.constantFrom('', '-1', '1.5', '99999999999999999999', '9223372036854775808', 'TRUE', 'yes', '0x10', ' 1', '1e3', '%00', 'null', '[]', '{}'),
    fc.string({ maxLength: 20, unit: 'binary' }),
  );
  const right = type === 'boolean' ? fc.constantFrom('true', 'false', '1', '0')
    : type === 'integer' ? fc.integer({ min: 0, max: 50 }).map(String)
      : valid[name] ? fc.constantFrom(...valid[name]) : fc.string({ maxLength: 10 });
  return fc.oneof({ weight: 4, arbitrary: right }, { weight: 1, arbitrary: hostile });
}

function queryFor(method: string, path: string): fc.Arbitrary<[string, string][]> {
  const params = (doc.paths[path]?.[method]?.parameters ?? []).filter((p) => p.in === 'query');
  const one = fc.constantFrom(...params).chain((p) => queryValue(p.name, p.schema?.type).map((v): [string, string] => [p.name, v]));
  return params.length ? fc.array(one, { maxLength: 3 }) : fc.constant([]);
}

const llamaSchema = (): Schema => doc.components.schemas[LLAMA];

/** A Llama (mostly a plausible one, so that writes get accepted too), then at most one mutation. */
function llamaBody(forName?: string): fc.Arbitrary<Json> {
  const metadata = fc.record({
    name: forName ? fc.constantFrom(forName, forName, forName, 'someone-else')
      : fc.oneof({ weight: 3, arbitrary: fc.nat(100_000).map((n) => `newcomer-${n}`) }, { weight: 2, arbitrary: fc.constantFrom(...pool, 'Bad_Name', '') }),
    namespace: fc.constantFrom(ns, ns, ns, 'elsewhere'),
    resourceVersion: fc.constantFrom('$RV', '$RV', '1', ''),
    labels: validValue(doc, { type: 'object' }, 'metadata.labels'),
    annotations: validValue(doc, { type: 'object' }, 'metadata.annotations'),
    finalizers: validValue(doc, { type: 'array' }, 'metadata.finalizers'),
  }, { requiredKeys: forName ? ['name', 'resourceVersion'] : ['name'] });
  const base = validValue(doc, llamaSchema(), '', {
    metadata: metadata as fc.Arbitrary<Json>,
    // The schema says "string"; kube says "this group/version and kind". Mostly right, sometimes not.
    apiVersion: fc.oneof({ weight: 8, arbitrary: fc.constant('farm.example.com/v1alpha') }, { weight: 1, arbitrary: fc.constantFrom('farm.example.com/v1', 'v1') }),
    kind: fc.oneof({ weight: 8, arbitrary: fc.constant('Llama') }, { weight: 1, arbitrary: fc.constant('Alpaca') }),
  });
  return fc.tuple(base, mutation(doc, llamaSchema())).map(([v, m]) => applyMutation(v, m));
}

function mergePatchBody(): fc.Arbitrary<Json> {
  const spec = resolve(doc, llamaSchema()).properties!.spec;
  const partial = fc.record({
    spec: fc.record(Object.fromEntries(Object.entries(resolve(doc, spec).properties!).map(([k, v]) => [k, fc.oneof(validValue(doc, v), fc.constant(null))])), { requiredKeys: [] }),
    metadata: fc.record({ labels: fc.oneof(validValue(doc, { type: 'object' }, 'metadata.labels'), fc.constant(null)), finalizers: fc.oneof(validValue(doc, { type: 'array' }, 'metadata.finalizers'), fc.constant(null)) }, { requiredKeys: [] }),
  }, { requiredKeys: [] }) as fc.Arbitrary<Json>;
  return fc.tuple(partial, mutation(doc, llamaSchema())).map(([v, m]) => applyMutation(v, m));
}

function jsonPatchBody(): fc.Arbitrary<Json> {
  const paths = schemaPaths(doc, llamaSchema()).filter((p) => !p.path.includes('[]'));
  const pointer = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...paths).map((p) => ({ ptr: `/${p.path.split('.').join('/')}`, schema: p.schema })) },
    { weight: 1, arbitrary: fc.constantFrom('', '/', '/metadata/labels/a~1b', '/metadata/finalizers/-', '/metadata/finalizers/0', '/spec/~2', '/spec/x/-', '/-', 'spec')
      .map((ptr) => ({ ptr, schema: {} as Schema })) },
  );
  const op: fc.Arbitrary<Json> = fc.tuple(fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test', 'bogus'), pointer, pointer)
    .chain(([name, to, from]) => fc.oneof(validValue(doc, to.schema), wrongTypeFor(to.schema.type), edgeNumbers, fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>)
      .map((value): Json => {
        const o: { [k: string]: Json } = { op: name, path: to.ptr };
        if (name === 'move' || name === 'copy') o.from = from.ptr;
        else if (name !== 'remove') o.value = value;
        return o;
      }));
  // Sometimes the ops themselves are confused: a field of the wrong type, a missing field, not a list.
  const confused = fc.tuple(op, fc.constantFrom('op', 'path', 'from', 'value'), wrongTypeFor('string'))
    .map(([o, k, v]) => ({ ...(o as Record<string, Json>), [k]: v }) as Json);
  // Operations a client really sends, so that some patches apply.
  const plausible: fc.Arbitrary<Json> = fc.oneof(
    fc.double({ min: 0.1, max: 500, noNaN: true }).map((v): Json => ({ op: 'replace', path: '/spec/weight', value: v })),
    fc.constantFrom<Json>({ op: 'add', path: '/metadata/labels', value: { app: 'a' } }, { op: 'test', path: '/spec/color', value: 'white' },
      { op: 'add', path: '/spec/favoriteFood', value: 'hay' }, { op: 'replace', path: '/spec/shorn', value: true }, { op: 'add', path: '/metadata/annotations', value: { note: '🦙' } }),
  );
  return fc.oneof({ weight: 4, arbitrary: fc.array(plausible, { minLength: 1, maxLength: 2 }) }, { weight: 4, arbitrary: fc.array(fc.oneof(plausible, op), { minLength: 1, maxLength: 3 }) }, { weight: 1, arbitrary: fc.array(confused, { minLength: 1, maxLength: 2 }) }, { weight: 1, arbitrary: op });
}

function deleteOptionsBody(): fc.Arbitrary<Json> {
  const schema = doc.components.schemas[DELETE_OPTIONS];
  const overrides: Record<string, fc.Arbitrary<Json>> = {
    dryRun: fc.constantFrom(['All'], [], ['Nope']),
    propagationPolicy: fc.constantFrom('Foreground', 'Background', 'Orphan', 'Sideways'),
    gracePeriodSeconds: fc.constantFrom(0, 1, 30, -1),
    kind: fc.constant('DeleteOptions'),
    apiVersion: fc.constantFrom('v1', 'meta.k8s.io/v1'),
    preconditions: fc.record({ uid: fc.constantFrom('$UID', 'not-the-uid'), resourceVersion: fc.constantFrom('$RV', '1') }, { requiredKeys: [] }) as fc.Arbitrary<Json>,
  };
  return fc.tuple(validValue(doc, schema, '', overrides), mutation(doc, schema)).map(([v, m]) => applyMutation(v, m));
}

function encoded(g: Generated, defaultType: string): { body?: string | Buffer; contentType?: string | null } {
  if (g.body === undefined && g.encoding !== 'bytes') return {};
  switch (g.encoding) {
    case 'json': return { body: JSON.stringify(g.body), contentType: defaultType };
    case 'yaml': return { body: toYaml(g.body), contentType: defaultType === 'application/json' ? 'application/yaml' : defaultType };
    case 'none': return { body: JSON.stringify(g.body), contentType: null };
    case 'garbage': return { body: JSON.stringify(g.body), contentType: g.contentType };
    case 'bytes': return { body: Buffer.from(g.garbageBytes ?? []), contentType: g.contentType ?? defaultType };
  }
}

/** Fills in what only the running server knows: the target's current resourceVersion and uid. */
function substitute(body: string | Buffer | undefined, target: { rv: string; uid: string } | undefined): string | Buffer | undefined {
  if (typeof body !== 'string') return body;
  return body.replaceAll('$RV', target?.rv ?? '1').replaceAll('$UID', target?.uid ?? 'none');
}

interface Listed { items: { metadata: { name: string; resourceVersion: string; uid: string } }[] }

const encoding = fc.constantFrom<Encoding>('json', 'json', 'json', 'json', 'yaml', 'yaml', 'none', 'garbage', 'bytes');
const bytes = fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 });

function path(g: Generated): string {
  const base = g.route === 'allNamespaces' ? '/apis/farm.example.com/v1alpha/llamas' : g.route === 'item' ? `${coll}/${g.name}` : coll;
  const q = g.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  return q ? `${base}?${q}` : base;
}

const dryRunAll = (g: Generated) => g.query.some(([k, v]) => k === 'dryRun' && v === 'All');

/** Status codes seen by the current property: each must see both accepted and rejected requests. */
let tally = new Map<number, number>();
let samples: string[] = [];
function startTally(): void { tally = new Map(); samples = []; }
function assertTally(t: { diagnostic(m: string): void }, requireAccepted = true): void {
  const seen = [...tally.entries()].sort(([a], [b]) => a - b);
  t.diagnostic(`statuses: ${seen.map(([k, v]) => `${k}×${v}`).join(' ')}`);
  if (process.env.ADVERSARIAL_VERBOSE) for (const x of samples) t.diagnostic(x);
  if (requireAccepted) assert.ok(seen.some(([k]) => k < 300), 'no generated request was accepted: the generator no longer reaches the write path');
  assert.ok(seen.some(([k]) => k >= 400), 'no generated request was rejected: the generator is not hostile');
}

/** Sends one generated request and checks every invariant that request must keep. */
async function check(g: Generated, defaultType: string): Promise<void> {
  const beforeText = await snapshot(c, ns);
  const listed = JSON.parse(beforeText) as Listed;
  const target = listed.items.find((i) => i.metadata.name === g.name)?.metadata;
  const { body, contentType } = encoded(g, defaultType);
  const p = path(g);
  const watch = g.method === 'GET' && g.query.some(([k, v]) => k === 'watch' && !/^(false|0|)$/i.test(v));
  const r: Reply = await c.send({ method: g.method, path: p, body: substitute(body, target ? { rv: target.resourceVersion, uid: target.uid } : undefined), contentType, stream: watch });
  const ctx = `${g.method} ${p} [${contentType === null ? 'no Content-Type' : contentType ?? ''}] ${typeof body === 'string' ? body.slice(0, 300) : body ? `<${body.length} bytes>` : ''}`;
  tally.set(r.status, (tally.get(r.status) ?? 0) + 1);
  samples.push(`${ctx.slice(0, 250)} → ${r.status} ${r.body.slice(0, 200)}`);
  assertWellFormed(r, ctx);
  const afterText = await snapshot(c, ns);
  const write = g.method !== 'GET';
  if (r.status >= 300 || !write || dryRunAll(g)) {
    assert.equal(afterText, beforeText, `${ctx} → ${r.status}: the namespace changed\n${r.body.slice(0, 300)}`);
  } else if (g.method === 'DELETE' && g.route === 'collection') {
    for (const item of (JSON.parse(r.body) as Listed).items ?? []) {
      const got = await c.send({ method: 'GET', path: `${coll}/${item.metadata.name}` });
      assert.ok(got.status === 404 || (got.status === 200 && JSON.parse(got.body).metadata.deletionTimestamp), `${ctx}: ${item.metadata.name} still there`);
    }
  } else {
    const returned = JSON.parse(r.body) as { kind: string; metadata?: { name?: string; deletionTimestamp?: string } };
    const name = returned.kind === 'Status' ? g.name : returned.metadata?.name ?? '';
    const got = await c.send({ method: 'GET', path: `${coll}/${name}` });
    if (g.method === 'DELETE') {
      assert.ok(got.status === 404 || got.status === 200, `${ctx}: GET after delete → ${got.status}`);
      if (got.status === 200) assert.deepEqual(JSON.parse(got.body), returned, `${ctx}: a pending delete reads back otherwise than answered`);
    } else {
      assert.equal(got.status, 200, `${ctx} → ${r.status}, but GET → ${got.status} ${got.body.slice(0, 200)}`);
      assert.deepEqual(JSON.parse(got.body), returned, `${ctx}: the stored object differs from the one answered`);
    }
  }
  await assertResponsive(c);
  // Put back what a successful delete removed, so later runs have targets.
  const present = new Set((JSON.parse(afterText) as Listed).items.map((i) => i.metadata.name));
  for (const name of pool) {
    if (!present.has(name)) {
      const created = await c.send({ method: 'POST', path: coll, body: JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 50, height: 1 } }) });
      assert.ok(created.status === 201 || created.status === 409, `re-seeding ${name}: ${created.status} ${created.body.slice(0, 200)}`);
    }
  }
}

const itemPath = '/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas/{name}';
const collPath = '/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas';
const allPath = '/apis/farm.example.com/v1alpha/llamas';

describe('schema-driven fuzzing of every verb', () => {
  before(async () => { for (const name of pool) await check({ method: 'GET', route: 'item', name, query: [], encoding: 'json' }, 'application/json'); });

  it('POST (create): bodies from the Llama schema, bent', async (t) => {
    startTally();
    await fc.assert(fc.asyncProperty(
      fc.record({ body: llamaBody(), query: queryFor('post', collPath), encoding, contentType: garbageType, garbageBytes: bytes }),
      async (g) => check({ method: 'POST', route: 'collection', name: '', ...g }, 'application/json'),
    ), runs(90, 25_000));
    assertTally(t);
  });

  it('PUT (update): bodies from the Llama schema for an existing or missing name, bent', async (t) => {
    startTally();
    await fc.assert(fc.asyncProperty(
      fc.constantFrom(...pool, 'absent').chain((name) => fc.record({ name: fc.constant(name), body: llamaBody(name), query: queryFor('put', itemPath), encoding, contentType: garbageType, garbageBytes: bytes })),
      async (g) => check({ method: 'PUT', route: 'item', ...g }, 'application/json'),
    ), runs(70, 25_000));
    assertTally(t);
  });

  it('PATCH (merge patch): partial Llamas with nulls, bent', async (t) => {
    startTally();
    await fc.assert(fc.asyncProperty(
      fc.record({ name: fc.constantFrom(...pool, 'absent'), body: mergePatchBody(), query: queryFor('patch', itemPath), encoding: fc.constantFrom<Encoding>('json', 'json', 'json', 'json', 'none', 'garbage', 'bytes'), contentType: garbageType, garbageBytes: bytes }),
      async (g) => check({ method: 'PATCH', route: 'item', ...g }, 'application/merge-patch+json'),
    ), runs(70, 25_000));
    assertTally(t);
  });

  it('PATCH (JSON patch): operations over the schema\'s paths, values of any type, confused operations', async (t) => {
    startTally();
    await fc.assert(fc.asyncProperty(
      fc.record({ name: fc.constantFrom(...pool, 'absent'), body: jsonPatchBody(), query: queryFor('patch', itemPath), encoding: fc.constantFrom<Encoding>('json', 'json', 'json', 'garbage', 'bytes'), contentType: garbageType, garbageBytes: bytes }),
      async (g) => check({ method: 'PATCH', route: 'item', ...g }, 'application/json-patch+json'),
    ), runs(70, 25_000));
    assertTally(t);
  });

  it('DELETE (item and collection): generated DeleteOptions bodies and query parameters', async (t) => {
    startTally();
    await fc.assert(fc.asyncProperty(
      fc.oneof(
        { weight: 4, arbitrary: fc.record({ route: fc.constant<'item'>('item'), name: fc.constantFrom(...pool, 'absent'), body: fc.option(deleteOptionsBody(), { nil: undefined }), query: queryFor('delete', itemPath) }) },
        { weight: 1, arbitrary: fc.record({ route: fc.constant<'collection'>('collection'), name: fc.constant(''), body: fc.option(deleteOptionsBody(), { nil: undefined }), query: queryFor('delete', collPath) }) },
      ).chain((g) => fc.record({ encoding: fc.constantFrom<Encoding>('json', 'json', 'yaml', 'none', 'garbage'), contentType: garbageType }).map((e) => ({ ...g, ...e }))),
      async (g) => check({ method: 'DELETE', ...g }, 'application/json'),
    ), runs(50, 25_000));
    assertTally(t);
  });

  it('GET, LIST and WATCH: query parameters of every shape, on a namespace and across namespaces', async (t) => {
    startTally();
    await fc.assert(fc.asyncProperty(
      fc.oneof(
        fc.record({ route: fc.constant<'item'>('item'), name: fc.constantFrom(...pool, 'absent'), query: queryFor('get', itemPath) }),
        fc.record({ route: fc.constant<'collection'>('collection'), name: fc.constant(''), query: queryFor('get', collPath) }),
        fc.record({ route: fc.constant<'allNamespaces'>('allNamespaces'), name: fc.constant(''), query: queryFor('get', allPath) }),
      ).filter((g) => !g.query.some(([k, v]) => k === 'resourceVersion' && /^\d{16,19}$/.test(v))), // future RVs wait 3 s: their own test
      async (g) => check({ method: 'GET', encoding: 'json', ...g }, 'application/json'),
    ), runs(100, 25_000));
    assertTally(t);
  });
});
