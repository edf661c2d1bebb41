// Duplicate keys on every body path, as kube-apiserver decodes them. A body is generated as a tree of
// ordered entries with one or two keys repeated at random places (top level, metadata, labels, spec,
// status, inside list items), written as JSON (compact or one entry a line) or block YAML, and sent by
// every verb that takes a body (create, update, merge patch, JSON patch, apply; main resource and
// /status) with every fieldValidation. The expected answer comes from the tree:
// - JSON of create/update/patch: sigs.k8s.io/json's `duplicate field "a.b[0].c"` (kjson.UnmarshalStrict);
// - YAML of create/update: yaml.YAMLToJSONStrict's `yaml: unmarshal errors:\n  line N: key "k" already
//   set in map` (runtime/serializer/json Serializer.unmarshal), N the line where the repeated key's
//   value starts (goyaml.v2 decoder.setMapIndex), in goyaml's order (a value's own errors first);
// - apply (YAML or JSON text): applyPatcher's yaml.UnmarshalStrict, the same lines behind
//   `error strict decoding patch: error converting YAML to JSON: `.
// Strict → 400 (a JSON or JSON-patch patch: 422) and nothing written; Warn or absent → the write, one
// Warning per finding (rest.go parseYAMLWarnings splits the YAML error a line each); Ignore → the write,
// no Warning. A written object holds the last of the repeated values (goyaml and Go's JSON keep the last).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { assertResponsive, assertStatus, client, llamasOf, runs, warningHeaders, type Client, type Reply } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const ns = 'dupkeys';
const coll = llamasOf(ns);

before(async () => { s = await startTestServer(); c = client(s); });
after(async () => { c.close(); await s.close(); });

type Value = string | number | boolean | MapNode | ListNode;
interface MapNode { kind: 'map'; entries: [string, Value][] }
interface ListNode { kind: 'list'; items: Value[] }
const map = (entries: [string, Value][]): MapNode => ({ kind: 'map', entries });
const isMap = (v: Value): v is MapNode => typeof v === 'object' && v.kind === 'map';
const isList = (v: Value): v is ListNode => typeof v === 'object' && v.kind === 'list';

// ---- valid values for every place a key may be repeated ----

const weight = fc.integer({ min: 1, max: 500 });
const labelKey = fc.constantFrom('app', 'tier', 'farm.example.com/pen', 'a');
const labelValue = fc.constantFrom('x', 'llama', 'v1.2', '');
const labels: fc.Arbitrary<MapNode> = fc.uniqueArray(fc.tuple(labelKey, labelValue), { minLength: 1, maxLength: 3, selector: ([k]) => k })
  .map((es) => map(es));
const spec: fc.Arbitrary<MapNode> = fc.record({ weight, height: fc.constantFrom(1, 1.5, 2), color: fc.constantFrom('white', 'brown') })
  .map((r) => map([['weight', r.weight], ['height', r.height], ['color', r.color]]));
const condition: fc.Arbitrary<MapNode> = fc.record({ status: fc.constantFrom('True', 'False', 'Unknown'), reason: fc.constantFrom('Fine', 'Hungry'), message: fc.constantFrom('ok', 'needs hay') })
  .map((r) => map([['type', 'Ready'], ['status', r.status], ['lastTransitionTime', '2024-01-01T00:00:00Z'], ['reason', r.reason], ['message', r.message]]));
const status: fc.Arbitrary<MapNode> = fc.tuple(condition, fc.nat(5)).map(([cond, g]) => map([['conditions', { kind: 'list', items: [cond] }], ['observedGeneration', g]]));

/** Another valid value for `key` in the map at `path` (indices dropped): what the repeated key carries. */
function valueFor(path: string, key: string, name: string, rv: string): fc.Arbitrary<Value> {
  switch (path) {
    case 'metadata.labels': return labelValue;
    case 'spec': case '[].value': return key === 'weight' ? weight : key === 'height' ? fc.constantFrom(1, 3) : fc.constantFrom('black', 'grey');
    case 'status': return key === 'conditions' ? condition.map((cnd): Value => ({ kind: 'list', items: [cnd] })) : fc.nat(5);
    case 'status.conditions[]': {
      const fixed: Record<string, Value> = { type: 'Ready', lastTransitionTime: '2024-01-01T00:00:00Z', status: 'False', reason: 'Sleepy', message: 'zzz' };
      return fc.constantFrom(fixed[key], key === 'type' || key === 'lastTransitionTime' ? fixed[key] : 'Unknown');
    }
    case '[]': return key === 'value' ? spec : fc.constant(key === 'op' ? 'replace' : '/spec'); // a JSON patch's operation
  }
  switch (key) { // the top level and metadata
    case 'apiVersion': return fc.constant('farm.example.com/v1alpha');
    case 'kind': return fc.constant('Llama');
    case 'name': return fc.constant(name);
    case 'resourceVersion': return fc.constant(rv);
    case 'metadata': return labels.map((l) => map([['name', name], ...(rv ? [['resourceVersion', rv] as [string, Value]] : []), ['labels', l]]));
    case 'labels': return labels;
    case 'spec': return spec;
    case 'status': return status;
    default: return weight;
  }
}

// ---- the verbs ----

type Verb = 'create' | 'update' | 'updateStatus' | 'merge' | 'mergeStatus' | 'jsonPatch' | 'apply' | 'applyStatus';
type Encoding = 'json' | 'jsonLines' | 'yaml';
const jsonOnly: Verb[] = ['merge', 'mergeStatus', 'jsonPatch'];

/** The body a verb sends (before keys are repeated); a JSON patch's value is the spec. */
function bodyFor(verb: Verb, name: string, rv: string, parts: { labels: MapNode; spec: MapNode; status: MapNode }): Value {
  // An update names the version it replaces (a status update must).
  const meta = map([['name', name], ...(verb.startsWith('update') ? [['resourceVersion', rv] as [string, Value]] : []), ['labels', parts.labels]]);
  const head: [string, Value][] = [['apiVersion', 'farm.example.com/v1alpha'], ['kind', 'Llama'], ['metadata', meta]];
  switch (verb) {
    case 'create': case 'update': case 'updateStatus': return map([...head, ['spec', parts.spec], ['status', parts.status]]);
    case 'apply': return map([...head, ['spec', parts.spec]]);
    case 'applyStatus': return map([...head, ['status', parts.status]]);
    case 'merge': return map([['metadata', map([['labels', parts.labels]])], ['spec', parts.spec]]);
    case 'mergeStatus': return map([['status', parts.status]]);
    case 'jsonPatch': return { kind: 'list', items: [map([['op', 'replace'], ['path', '/spec'], ['value', parts.spec]])] };
  }
}

/** Every map of the tree with its path as sigs.k8s.io/json names it (`a.b[0].c`). */
function mapsOf(v: Value, path = '', out: { path: string; node: MapNode }[] = []): { path: string; node: MapNode }[] {
  if (isMap(v)) {
    out.push({ path, node: v });
    for (const [k, x] of v.entries) mapsOf(x, path ? `${path}.${k}` : k, out);
  } else if (isList(v)) {
    v.items.forEach((x, i) => mapsOf(x, `${path}[${i}]`, out));
  }
  return out;
}

interface Injection { mapIndex: number; keyIndex: number; at: number; seed: number }

/**
 * Repeats keys in a copy of the tree: each injection adds one more entry for a key of one of its maps,
 * after the key's first entry, with a value `valueOf` gives for the map's path and the key.
 */
function repeatKeys(body: Value, injections: Injection[], valueOf: (path: string, key: string, seed: number) => Value): Value {
  const copy = structuredClone(body);
  const maps = mapsOf(copy);
  for (const inj of injections) {
    const { path, node } = maps[inj.mapIndex % maps.length];
    const i = inj.keyIndex % node.entries.length;
    const key = node.entries[i][0];
    const first = node.entries.findIndex(([k]) => k === key);
    const pos = first + 1 + (inj.at % (node.entries.length - first));
    node.entries.splice(pos, 0, [key, valueOf(path, key, inj.seed)]);
  }
  return copy;
}

// ---- writing the tree, keeping the line where each map entry's value starts ----

interface Written { text: string; valueLines: Map<[string, Value], number> }

function writeJson(v: Value, lines: boolean): Written {
  const valueLines = new Map<[string, Value], number>();
  let line = 1;
  const nl = (indent: number) => { if (!lines) return ''; line++; return `\n${'  '.repeat(indent)}`; };
  const write = (x: Value, indent: number): string => {
    if (!isMap(x) && !isList(x)) return JSON.stringify(x);
    const [open, close] = isMap(x) ? ['{', '}'] : ['[', ']'];
    const parts: string[] = [];
    const items: (Value | [string, Value])[] = isMap(x) ? x.entries : x.items;
    for (const item of items) {
      let s = nl(indent + 1);
      if (isMap(x)) {
        const entry = item as [string, Value];
        valueLines.set(entry, line);
        s += `${JSON.stringify(entry[0])}:${lines ? ' ' : ''}${write(entry[1], indent + 1)}`;
      } else {
        s += write(item as Value, indent + 1);
      }
      parts.push(s);
    }
    return `${open}${parts.join(',')}${items.length ? nl(indent) : ''}${close}`;
  };
  return { text: write(v, 0), valueLines };
}

function writeYaml(v: MapNode, quoteKeys: boolean): Written {
  const valueLines = new Map<[string, Value], number>();
  const out: string[] = [];
  const key = (k: string) => (quoteKeys || !/^[a-z][a-zA-Z./]*$/.test(k) ? JSON.stringify(k) : k);
  // `first`: what goes before the first line (a list item's "- "); the others are indented to match.
  const writeMap = (m: MapNode, indent: number, first = ''): void => {
    m.entries.forEach((entry, i) => {
      const pad = i === 0 && first ? first : ' '.repeat(indent);
      const [k, x] = entry;
      if ((isMap(x) && x.entries.length) || (isList(x) && x.items.length)) {
        out.push(`${pad}${key(k)}:`);
        valueLines.set(entry, out.length + 1);
        if (isMap(x)) writeMap(x, indent + 2);
        else writeList(x, indent + 2);
      } else {
        out.push(`${pad}${key(k)}: ${isMap(x) ? '{}' : isList(x) ? '[]' : JSON.stringify(x)}`);
        valueLines.set(entry, out.length);
      }
    });
  };
  const writeList = (l: ListNode, indent: number): void => {
    for (const x of l.items) {
      if (isMap(x) && x.entries.length) writeMap(x, indent + 2, `${' '.repeat(indent)}- `);
      else out.push(`${' '.repeat(indent)}- ${JSON.stringify(isMap(x) ? {} : x)}`);
    }
  };
  writeMap(v, 0);
  return { text: `${out.join('\n')}\n`, valueLines };
}

// ---- what upstream finds ----

/** sigs.k8s.io/json: a repeated key is reported where it is met, then its value is read. */
function jsonFindings(v: Value, path = '', out: string[] = []): string[] {
  if (isMap(v)) {
    const seen = new Set<string>();
    for (const [k, x] of v.entries) {
      const p = path ? `${path}.${k}` : k;
      if (seen.has(k)) out.push(`duplicate field ${JSON.stringify(p)}`);
      seen.add(k);
      jsonFindings(x, p, out);
    }
  } else if (isList(v)) {
    v.items.forEach((x, i) => jsonFindings(x, `${path}[${i}]`, out));
  }
  return out;
}

/** goyaml.v2 decoder.mapping: a value is decoded (its own errors first), then setMapIndex finds the key set. */
function yamlFindings(v: Value, lines: Map<[string, Value], number>, out: string[] = []): string[] {
  if (isMap(v)) {
    const seen = new Set<string>();
    for (const entry of v.entries) {
      yamlFindings(entry[1], lines, out);
      if (seen.has(entry[0])) out.push(`line ${lines.get(entry)}: key ${JSON.stringify(entry[0])} already set in map`);
      seen.add(entry[0]);
    }
  } else if (isList(v)) {
    for (const x of v.items) yamlFindings(x, lines, out);
  }
  return out;
}

/** The JSON value a decoder builds: a repeated key keeps its last value. */
function lastWins(v: Value): unknown {
  if (isMap(v)) return Object.fromEntries(v.entries.map(([k, x]) => [k, lastWins(x)]));
  if (isList(v)) return v.items.map(lastWins);
  return v;
}

// ---- the property ----

interface Case {
  verb: Verb;
  encoding: Encoding;
  quoteKeys: boolean;
  fieldValidation: '' | 'Strict' | 'Warn' | 'Ignore';
  parts: { labels: MapNode; spec: MapNode; status: MapNode };
  injections: Injection[];
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  verb: fc.constantFrom<Verb>('create', 'update', 'updateStatus', 'merge', 'mergeStatus', 'jsonPatch', 'apply', 'applyStatus'),
  encoding: fc.constantFrom<Encoding>('json', 'jsonLines', 'yaml'),
  quoteKeys: fc.boolean(),
  fieldValidation: fc.constantFrom<Case['fieldValidation']>('', 'Strict', 'Warn', 'Ignore'),
  parts: fc.record({ labels, spec, status }),
  injections: fc.array(fc.record({ mapIndex: fc.nat(), keyIndex: fc.nat(), at: fc.nat(), seed: fc.integer() }), { minLength: 1, maxLength: 2 }),
}).map((k) => (jsonOnly.includes(k.verb) && k.encoding === 'yaml' ? { ...k, encoding: 'json' as const } : k));

let counter = 0;

async function get(name: string): Promise<Reply> {
  return c.send({ method: 'GET', path: `${coll}/${name}` });
}

async function check(k: Case): Promise<void> {
  const name = `d-${counter++}`;
  let rv = '';
  if (k.verb !== 'create') {
    const seeded = await c.send({ method: 'POST', path: coll, body: JSON.stringify(lastWins(bodyFor('create', name, '', k.parts))) });
    assert.equal(seeded.status, 201, seeded.body.slice(0, 300));
    rv = (JSON.parse(seeded.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  }
  const base = bodyFor(k.verb, name, k.verb.startsWith('update') ? rv : '', k.parts);
  const updateRv = k.verb.startsWith('update') ? rv : '';
  const body = repeatKeys(base, k.injections, (p, key, seed) => fc.sample(valueFor(p.replace(/\[\d+\]/g, '[]'), key, name, updateRv), { seed, numRuns: 1 })[0]);
  const yamlText = k.encoding === 'yaml';
  const written = yamlText ? writeYaml(body as MapNode, k.quoteKeys) : writeJson(body, k.encoding === 'jsonLines');
  const apply = k.verb === 'apply' || k.verb === 'applyStatus';
  const yamlDecoded = apply || yamlText;

  const sub = ['updateStatus', 'mergeStatus', 'applyStatus'].includes(k.verb) ? '/status' : '';
  const query = new URLSearchParams();
  if (k.fieldValidation) query.set('fieldValidation', k.fieldValidation);
  if (apply) { query.set('fieldManager', 'dupkeys'); query.set('force', 'true'); }
  const q = query.size ? `?${query}` : '';
  const method = k.verb === 'create' ? 'POST' : k.verb.startsWith('update') ? 'PUT' : 'PATCH';
  const path = k.verb === 'create' ? `${coll}${q}` : `${coll}/${name}${sub}${q}`;
  const contentType = apply ? 'application/apply-patch+yaml'
    : k.verb.startsWith('merge') ? 'application/merge-patch+json'
      : k.verb === 'jsonPatch' ? 'application/json-patch+json'
        : yamlText ? 'application/yaml' : 'application/json';

  const before = await get(name);
  const r = await c.send({ method, path, body: written.text, contentType });
  const ctx = `${method} ${path} [${contentType}]\n${written.text}`;

  const yamlLines = yamlFindings(body, written.valueLines);
  const jsonErrs = jsonFindings(body).map((f) => (k.verb === 'jsonPatch' ? `json patch ${f}` : f));
  const yamlError = `yaml: unmarshal errors:\n  ${yamlLines.join('\n  ')}`;
  const strictErrs = yamlDecoded ? [yamlError] : jsonErrs;
  const warnings = yamlDecoded ? yamlLines : jsonErrs;
  const strict = k.fieldValidation === 'Strict';

  if (strict) {
    const isPatch = !apply && method === 'PATCH';
    const st = assertStatus(r, isPatch ? 422 : 400, ctx);
    if (apply) {
      assert.equal(st.message, `error strict decoding patch: error converting YAML to JSON: ${yamlError}`, ctx);
    } else if (isPatch) {
      assert.ok(st.message?.endsWith(`strict decoding error: ${strictErrs.join(', ')}`), `${ctx}\n→ ${st.message}`);
    } else {
      assert.equal(st.message, `Llama in version "v1alpha" cannot be handled as a Llama: strict decoding error: ${strictErrs.join(', ')}`, ctx);
    }
    const afterwards = await get(name);
    assert.equal(afterwards.status, before.status, `${ctx}: a refused write changed the object`);
    assert.equal(afterwards.body, before.body, `${ctx}: a refused write changed the object`);
    return;
  }

  assert.equal(r.status, k.verb === 'create' || (apply && before.status === 404) ? 201 : 200, `${ctx}\n→ ${r.status} ${r.body.slice(0, 400)}`);
  const expected = k.fieldValidation === 'Ignore' ? [] : [...new Set(warnings)].map((w) => `299 - "${w.replace(/["\\]/g, (ch) => `\\${ch}`)}"`);
  assert.deepEqual(warningHeaders(r), expected, ctx);
  // The stored object carries the last value of each repeated key.
  const stored = JSON.parse((await get(name)).body) as Record<string, Record<string, unknown>>;
  const sent = lastWins(body) as Record<string, Record<string, unknown>>;
  if (k.verb === 'jsonPatch') {
    const value = (sent as unknown as { value: Record<string, unknown> }[])[0].value;
    assert.deepEqual(pick(stored.spec, value), value, ctx);
    return;
  }
  const field = sub ? 'status' : 'spec';
  if (sent[field]) assert.deepEqual(pick(stored[field], sent[field]), sent[field], ctx);
  const sentLabels = sent.metadata?.labels as Record<string, string> | undefined;
  if (sentLabels && !sub) assert.deepEqual(pick(stored.metadata.labels as Record<string, unknown>, sentLabels), sentLabels, ctx);
}

/** The fields of `stored` that `sent` has (defaults may add others). */
function pick(stored: Record<string, unknown>, sent: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(sent).map((key) => [key, stored?.[key]]));
}

describe('duplicate keys in request bodies', () => {
  it('every verb × encoding × fieldValidation × position: the findings upstream reports, Strict refuses and writes nothing', async () => {
    await fc.assert(fc.asyncProperty(caseArb, check), runs(200, 90_000));
    await assertResponsive(c);
  });

  it('upstream\'s own example: spec.weight twice in an apply body (YAML and JSON text)', async () => {
    const yaml = 'apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: twice\nspec:\n  weight: 1\n  height: 1\n  weight: 2\n';
    const json = '{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"name":"twice"},"spec":{"weight":1,"height":1,"weight":2}}';
    for (const [body, line] of [[yaml, 8], [json, 1]] as const) {
      const path = `${coll}/twice?fieldManager=m`;
      const strict = await c.send({ method: 'PATCH', path: `${path}&fieldValidation=Strict`, body, contentType: 'application/apply-patch+yaml' });
      assertStatus(strict, 400, body);
      assert.equal((JSON.parse(strict.body) as { message: string }).message,
        `error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line ${line}: key "weight" already set in map`);
      assert.equal((await get('twice')).status, 404);
      const warned = await c.send({ method: 'PATCH', path, body, contentType: 'application/apply-patch+yaml' });
      assert.equal(warned.status, 201, warned.body);
      assert.deepEqual(warningHeaders(warned), [`299 - "line ${line}: key \\"weight\\" already set in map"`]);
      assert.equal((JSON.parse(warned.body) as { spec: { weight: number } }).spec.weight, 2);
      assert.equal((await c.send({ method: 'DELETE', path: `${coll}/twice` })).status, 200);
    }
  });
});
