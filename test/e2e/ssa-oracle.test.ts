// Differential oracle for server-side apply, managedFields and the /status subresource (issue 11):
// the same request sequences go, through one real kube-apiserver with the same credentials, to
// llamas.oracle.example.com (a CRD whose schema is derived from our published Llama schema) and to
// our llamas.farm.example.com; every answer must match after normalisation (test/e2e/ssaOracle/normalise.ts).
//
// Env: SSA_ORACLE_RUNS (generated sequences, default 300), SSA_ORACLE_SEED (first shard's seed),
// SSA_ORACLE_SELF=1 (check the harness: diff the CRD against a second CRD llamas.oracle2.example.com),
// SSA_ORACLE_SURVEY=1 (run every generated sequence without shrinking, print the classes of first
// differences with one example each; fails if any).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { LONG_MANAGER, sequenceArb } from './ssaOracle/arbitraries.js';
import { comparedAsSets } from './ssaOracle/normalise.js';
import { createNamespace, crdSchemaFromOpenApi, publishedOpenApi, registerCrd, type JsonSchema } from './ssaOracle/crd.js';
import { differenceClass, runSequence, type Sequence } from './ssaOracle/runner.js';
import type { Step, Target } from './ssaOracle/steps.js';
import { apiClient, type ApiClient } from './ssaOracle/targets.js';

const SELF = process.env.SSA_ORACLE_SELF === '1';
const SURVEY = process.env.SSA_ORACLE_SURVEY === '1';
const RUNS = Number(process.env.SSA_ORACLE_RUNS ?? 300);
const SEED = Number(process.env.SSA_ORACLE_SEED ?? 1123_2026);
const SHARDS = 6;
const NS = 'ssa-oracle';
const ORACLE_GROUP = 'oracle.example.com';
const TESTED_GROUP = SELF ? 'oracle2.example.com' : 'farm.example.com';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-ssa-'));
let cluster: FarmCluster;
let api: ApiClient;
let oracle: Target;
let tested: Target;
let derived: JsonSchema;
let published: JsonSchema;
let objects = 0;

before(async () => {
  assert.ok(Number.isInteger(RUNS) && RUNS > 0 && RUNS <= 100_000, `SSA_ORACLE_RUNS: want a whole number from 1 to 100000, got ${process.env.SSA_ORACLE_RUNS}`);
  assert.ok(Number.isInteger(SEED), `SSA_ORACLE_SEED: want an integer, got ${process.env.SSA_ORACLE_SEED}`);
  const t0 = Date.now();
  cluster = await startFarmCluster({ dir: tmp, log: (l) => console.log(`[cluster] ${l}`) });
  api = apiClient(cluster.cp);
  await createNamespace(api.call, NS);
  const doc = await publishedOpenApi(api.call);
  published = doc;
  console.log(`[ssa-oracle] our OpenAPI document read after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  derived = crdSchemaFromOpenApi(doc);
  await registerCrd(api.call, ORACLE_GROUP, derived);
  if (SELF) await registerCrd(api.call, TESTED_GROUP, derived);
  oracle = api.target(ORACLE_GROUP, 'oracle (CRD llamas.oracle.example.com)');
  tested = api.target(TESTED_GROUP, SELF ? 'self-check (CRD llamas.oracle2.example.com)' : 'farm-apiserver (llamas.farm.example.com)');
  console.log(`[ssa-oracle] CRDs established after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`[ssa-oracle] comparing ${tested.label} against ${oracle.label}; seed ${SEED}, ${RUNS} generated sequences`);
}, { timeout: 15 * 60_000 });

after(async () => {
  api?.close();
  await cluster?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[cluster] kept ${tmp}`);
});

const nextName = (prefix: string) => `${prefix}-${++objects}`;

/** Runs one sequence on a fresh object name; fails with the full report of its first difference. */
async function expectSameAnswers(steps: Step[], prefix = 'fixed'): Promise<void> {
  const d = await runSequence({ steps }, oracle, tested, NS, nextName(prefix));
  if (d) assert.fail(d.report);
}

function walk(node: unknown, visit: (key: string, value: unknown) => void): void {
  if (Array.isArray(node)) node.forEach((n) => walk(n, visit));
  else if (typeof node === 'object' && node !== null) for (const [k, v] of Object.entries(node)) { visit(k, v); walk(v, visit); }
}

test('the oracle CRD schema is our published Llama schema, made structural', async () => {
  const keys: string[] = [];
  walk(derived, (k) => keys.push(k));
  for (const banned of ['$ref', 'allOf', 'x-kubernetes-group-version-kind', 'uniqueItems']) assert.ok(!keys.includes(banned), `${banned} left in the derived schema`);
  const llama = (published.components as { schemas: Record<string, { properties: Record<string, { properties?: Record<string, unknown> }> }> }).schemas['com.example.farm.v1alpha.Llama'];
  const props = derived.properties as Record<string, { properties?: Record<string, unknown> }>;
  assert.deepEqual(Object.keys(props).sort(), Object.keys(llama.properties).sort());
  for (const p of ['spec', 'status']) assert.deepEqual(Object.keys(props[p].properties ?? {}).sort(), Object.keys(llama.properties[p].properties ?? {}).sort(), p);
  assert.deepEqual(props.metadata, { type: 'object' });
  // kube-apiserver accepted it as a structural schema and publishes it back with our fields.
  const crd = await api.call('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/llamas.${ORACLE_GROUP}`);
  assert.equal(crd.status, 200, crd.body);
  const nonStructural = (crd.json.status.conditions as Array<{ type: string; status: string; message: string }>).find((c) => c.type === 'NonStructuralSchema');
  assert.equal(nonStructural, undefined, nonStructural?.message);
});

test(`${RUNS} generated sequences give the same answers on both (seed ${SEED})`, { timeout: 10 * 60_000 }, async () => {
  // SHARDS properties run side by side (seeds SEED, SEED+1, …), each over single sequences, so a
  // counterexample shrinks to one sequence and the servers see several objects written at once.
  const perShard = Math.ceil(RUNS / SHARDS);
  const seeds = Array.from({ length: SHARDS }, (_, i) => SEED + i);
  let sequences = 0;
  const run = (seq: Sequence) => { sequences++; return runSequence(seq, oracle, tested, NS, nextName('gen')); };
  const started = Date.now();
  if (SURVEY) {
    const classes = new Map<string, { count: number; example: string }>();
    await Promise.all(seeds.map(async (seed) => {
      for (const seq of fc.sample(sequenceArb, { seed, numRuns: perShard })) {
        const d = await run(seq);
        if (!d) continue;
        const c = differenceClass(d);
        const e = classes.get(c);
        if (e) e.count++; else classes.set(c, { count: 1, example: d.report });
      }
    }));
    const lines = [...classes].sort((a, b) => b[1].count - a[1].count).map(([c, { count }]) => `${String(count).padStart(5)}  ${c}`);
    console.log(`[ssa-oracle] survey of ${sequences} sequences (seeds ${seeds.join(', ')}): ${classes.size} classes of first difference\n${lines.join('\n')}`);
    for (const [c, { example }] of classes) console.log(`\n[ssa-oracle] example of "${c}":\n${example}`);
    assert.equal(classes.size, 0, `${[...classes.values()].reduce((n, e) => n + e.count, 0)} of ${sequences} sequences differ`);
    return;
  }
  // Shrinking reruns sequences against the servers; the time limit bounds it (and a run cut short fails).
  const outcomes = await Promise.allSettled(seeds.map((seed) => fc.assert(fc.asyncProperty(sequenceArb, async (seq) => {
    const d = await run(seq);
    if (d) throw new Error(`\n${d.report}`);
  }), { seed, numRuns: perShard, includeErrorInReport: true, plugins: [fc.interruptAfterTimeLimit(3 * 60_000, { failOnInterrupt: true })] })));
  const failures = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [`shard seed ${seeds[i]}: ${(o.reason as Error).message}`] : []));
  if (failures.length) assert.fail(`${failures.length} of ${SHARDS} shards found a difference (reproduce with SSA_ORACLE_SEED=${SEED} SSA_ORACLE_RUNS=${RUNS})\n\n${failures.join('\n\n')}`);
  console.log(`[ssa-oracle] ${sequences} sequences agreed (${((Date.now() - started) / 1000).toFixed(1)} s; `
    + `${comparedAsSets.count} answers compared managedFields as a set, their writes having straddled a second)`);
  assert.ok(sequences >= RUNS, `only ${sequences} sequences ran`);
});

const spec = { weight: 120, height: 1.7 };

test('two appliers conflicting: 409 with FieldManagerConflict causes; same value is no conflict', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { ...spec, color: 'brown' }, labels: { app: 'web' } } },
  { op: 'apply', sub: 'main', manager: 'beta', config: { spec: { ...spec, color: 'black', weight: 42 }, labels: { app: 'db' } } },
  { op: 'apply', sub: 'main', manager: 'beta', config: { spec: { ...spec, color: 'brown' } } },
  { op: 'apply', sub: 'main', manager: 'beta', yaml: true, config: { spec: { color: 'grey' } } },
]));

test('force takes ownership; the loser keeps the fields no one took', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { ...spec, color: 'brown', favoriteFood: 'hay' } } },
  { op: 'apply', sub: 'main', manager: 'beta', force: true, config: { spec: { color: 'black', shorn: true } } },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { ...spec, favoriteFood: 'hay' } } },
]));

test('an applier dropping a field prunes it, unless another manager owns it too', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { ...spec, favoriteFood: 'hay', color: 'grey' }, labels: { app: 'web', tier: 'db' }, finalizers: ['example.com/guard'] } },
  { op: 'apply', sub: 'main', manager: 'beta', config: { spec: { color: 'grey' }, labels: { tier: 'db' } } },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec } },
  { op: 'get' },
]));

test('an update after an apply steals the fields it changed, silently; the next apply conflicts', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'kubectl', config: { spec: { ...spec, color: 'white' }, labels: { app: 'web' } } },
  { op: 'merge', sub: 'main', change: { spec: { color: 'spotted' } }, w: { userAgent: 'kubectl-edit/v1.32.0 (linux/amd64) kubernetes/70d3cc9' } },
  { op: 'update', sub: 'main', change: { labels: { app: 'db' } }, w: { fieldManager: 'controller' } },
  { op: 'apply', sub: 'main', manager: 'kubectl', config: { spec: { ...spec, color: 'white' }, labels: { app: 'web' } } },
]));

test('managedFields in a request: [{}] resets, a valid list replaces, an undecodable one is ignored', () => expectSameAnswers([
  { op: 'create', config: { spec, labels: { app: 'web' } }, w: { fieldManager: 'creator' } },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { color: 'brown' } } },
  { op: 'merge', sub: 'main', change: { managedFields: 'reset' }, w: {} },
  { op: 'merge', sub: 'main', change: { managedFields: 'replace' }, w: {} },
  { op: 'update', sub: 'main', change: { managedFields: 'badOperation' }, w: {} },
  { op: 'merge', sub: 'main', change: { managedFields: 'badFieldsType' }, w: {} },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { color: 'black' } } },
]));

test('dry run writes nothing: apply, create, patch, update, delete', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', dryRun: true, config: { spec } },
  { op: 'get' },
  { op: 'create', config: { spec }, w: { fieldManager: 'creator', dryRun: true } },
  { op: 'get' },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec, finalizers: ['example.com/guard'] } },
  { op: 'apply', sub: 'main', manager: 'beta', dryRun: true, force: true, config: { spec: { weight: 7, color: 'grey' } } },
  { op: 'merge', sub: 'main', change: { spec: { shorn: true } }, w: { fieldManager: 'patcher', dryRun: true } },
  { op: 'update', sub: 'main', change: { spec: { favoriteFood: 'carrots' } }, w: { dryRun: true } },
  { op: 'delete', dryRun: true },
]));

test('/status: apply, merge patch and PUT own status only; the main resource ignores status', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec, status: { observedGeneration: 3 } } },
  { op: 'apply', sub: 'status', manager: 'controller', config: { status: { observedGeneration: 1 }, labels: { app: 'web' } } },
  { op: 'apply', sub: 'status', manager: 'other', config: { status: { observedGeneration: 2 } } },
  { op: 'merge', sub: 'status', change: { status: { observedGeneration: 4 }, spec: { color: 'black' } }, w: { fieldManager: 'patcher' } },
  { op: 'update', sub: 'status', change: { status: { observedGeneration: 5 } }, w: { userAgent: 'flux/1.0' } },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec: { ...spec, color: 'grey' } } },
  { op: 'get' },
]));

test('apply creates a missing object; metadata lists and maps merge by their markers', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', yaml: true, config: { spec, labels: { app: 'web' }, finalizers: ['example.com/guard'],
    ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'cm-a', uid: '6b1a3f2e-0000-4000-8000-00000000000a' }] } },
  { op: 'apply', sub: 'main', manager: 'beta', config: { finalizers: ['example.com/audit'], annotations: { note: 'hello' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'dep-b', uid: '6b1a3f2e-0000-4000-8000-00000000000b', controller: true }] } },
  { op: 'apply', sub: 'main', manager: 'alpha', config: { spec, finalizers: [] } },
  { op: 'json', sub: 'main', ops: [{ op: 'add', path: '/metadata/finalizers/-', value: 'example.com/guard' }], w: { userAgent: 'curl/8.5.0' } },
]));

test('invalid requests: apply without fieldManager, force on a patch, a 129-character manager, wrong type, unknown field', () => expectSameAnswers([
  { op: 'create', config: { spec }, w: { fieldManager: LONG_MANAGER } },
  { op: 'create', config: { spec }, w: {} },
  { op: 'apply', sub: 'main', config: { spec } },
  { op: 'apply', sub: 'main', manager: LONG_MANAGER, config: { spec } },
  { op: 'merge', sub: 'main', change: { spec: { color: 'grey' } }, w: { force: true } },
  { op: 'json', sub: 'main', ops: [{ op: 'replace', path: '/spec/weight', value: 9 }], w: { force: true, fieldManager: 'x' } },
  { op: 'apply', sub: 'main', manager: 'alpha', wrongType: 'kind', config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', wrongType: 'version', config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', wrongType: 'group', config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', unknownField: true, fieldValidation: 'Strict', config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', unknownField: true, yaml: true, config: { spec } },
]));

test('a key written twice in an apply body (YAML or JSON text): Strict 400, Warn a Warning a line, Ignore nothing', () => expectSameAnswers([
  { op: 'apply', sub: 'main', manager: 'alpha', repeatedKey: 'spec', yaml: true, fieldValidation: 'Strict', config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', repeatedKey: 'spec', yaml: true, config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', repeatedKey: 'metadata', fieldValidation: 'Strict', config: { spec } },
  { op: 'apply', sub: 'main', manager: 'alpha', repeatedKey: 'top', yaml: true, fieldValidation: 'Warn', config: { spec, labels: { app: 'web' } } },
  { op: 'apply', sub: 'main', manager: 'alpha', repeatedKey: 'metadata', yaml: true, fieldValidation: 'Ignore', config: { spec } },
  { op: 'apply', sub: 'status', manager: 'alpha', repeatedKey: 'spec', yaml: true, fieldValidation: 'Strict', config: { status: { observedGeneration: 2 } } },
  { op: 'apply', sub: 'status', manager: 'alpha', repeatedKey: 'spec', config: { status: { observedGeneration: 2 } } },
  { op: 'apply', sub: 'main', manager: 'alpha', repeatedKey: 'spec', yaml: true, unknownField: true, config: { spec } },
]));

test('more than 10 update managers: the oldest two merge into ancient-changes', async () => {
  // Upstream picks the oldest by time in whole seconds: the first two writes are a second apart from
  // the rest, so which entries merge does not depend on where the two targets' clocks tick.
  const name = nextName('ancient');
  const pause = { op: 'get' } as const;
  const run = (steps: Step[]) => runSequence({ steps }, oracle, tested, NS, name);
  for (const steps of [
    [{ op: 'create', config: { spec }, w: { fieldManager: 'updater-00' } }, pause] as Step[],
    [{ op: 'merge', sub: 'main', change: { labels: { app: 'web' } }, w: { fieldManager: 'updater-01' } }] as Step[],
    Array.from({ length: 10 }, (_, i): Step => ({ op: 'merge', sub: 'main', change: { annotations: { note: `n${i}` } }, w: { fieldManager: `updater-${String(i + 2).padStart(2, '0')}` } })),
  ]) {
    const d = await run(steps);
    if (d) assert.fail(d.report);
    await new Promise((r) => setTimeout(r, 1100));
  }
});

test('an invalid continue token: the same 400 as the CRD (ValidateListOptions\'s "invalid continue token: ..." wording)', async () => {
  const token = (o: object) => encodeURIComponent(Buffer.from(JSON.stringify(o)).toString('base64url'));
  // Malformed in ways both servers spell the same; then ones whose detail is Go's own parser error (prefix only).
  const exact = [
    token({ v: 'meta.k8s.io/v2', rv: 5, start: 'a' }),
    token({ v: 'meta.k8s.io/v1', rv: 0, start: 'a' }),
    token({ v: 'meta.k8s.io/v1', rv: 5, start: '' }),
    token({ v: 'meta.k8s.io/v1', rv: 5, start: '../x' }),
  ];
  const prefixOnly = ['not-a-token', token({ v: 'meta.k8s.io/v1', rv: 1.5, start: 'a' }), token({ v: 'meta.k8s.io/v1', rv: '5', start: 'a' })];
  const list = async (group: string, cont: string, rv = '') => {
    const r = await api.call('GET', `/apis/${group}/v1alpha/namespaces/${NS}/llamas?limit=1&continue=${cont}${rv ? `&resourceVersion=${rv}` : ''}`);
    const st = r.json as { code?: number; reason?: string; message?: string } | undefined;
    return { status: r.status, code: st?.code, reason: st?.reason, message: st?.message ?? r.body };
  };
  for (const cont of exact) {
    const [want, got] = [await list(ORACLE_GROUP, cont), await list(TESTED_GROUP, cont)];
    assert.equal(want.status, 400, want.message);
    assert.deepEqual(got, want, `continue=${cont}`);
  }
  for (const [cont, rv] of [...prefixOnly.map((c) => [c, ''] as const), [exact[0], '5'] as const]) {
    const [want, got] = [await list(ORACLE_GROUP, cont, rv), await list(TESTED_GROUP, cont, rv)];
    assert.deepEqual([got.status, got.reason], [want.status, want.reason], `continue=${cont}: ${got.message} vs ${want.message}`);
    assert.match(want.message, /^invalid continue token: continue key is not valid/);
    assert.match(got.message, /^invalid continue token: continue key is not valid/);
  }
});
