// Real clients doing server-side apply through the real aggregator (issue 11): kubectl 1.32
// (`apply --server-side` twice, a real `kubectl edit` in between, the conflict as kubectl prints it,
// `--force-conflicts`; the client-side → server-side migration; `diff --server-side`; server dry run;
// `apply --subresource=status` + `wait --for=condition=Ready`) and kube-rs 5.0 (`Patch::Apply` with
// `Api::patch` and `Api::patch_status`, test/clients/kubers `apply` mode).
//
// Every scenario runs twice in the same control plane: on llamas.crd.example.com, a CRD whose schema
// is our published Llama schema (as the oracle builds it), and on our llamas.farm.example.com. The
// explicit expectations must hold on both (so they are kube-apiserver's behaviour, not our guess),
// and the two transcripts (exit codes, outputs, objects) must match once the group, times,
// resourceVersions and uids are normalised.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { ensureKubeRs } from '../clients/clients.js';
import { kubectl as runKubectl, spawnKubectl, type KubectlResult } from '../helpers/kubectl.js';
import { sleep } from './e2e.helpers.js';
import { createNamespace, crdSchemaFromOpenApi, publishedOpenApi, registerCrd } from './ssaOracle/crd.js';
import { apiClient, type ApiClient } from './ssaOracle/targets.js';

const NS = 'ssa-clients';
const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-ssa-clients-'));
const home = join(tmp, 'home'); // startFarmCluster's kubectl HOME: discovery is cached already
let cluster: FarmCluster;
let api: ApiClient;
let kubeRsBin: string;

/** Where a scenario runs: our group or the CRD copy, both served by the same kube-apiserver. */
interface Target { label: string; group: string; resource: string }
const crd: Target = { label: 'kube-apiserver (CRD llamas.crd.example.com)', group: 'crd.example.com', resource: 'llamas.crd.example.com' };
const farm: Target = { label: 'farm-apiserver (llamas.farm.example.com)', group: 'farm.example.com', resource: 'llamas.farm.example.com' };
/** The CRD first: an expectation it fails is a wrong expectation, not a defect of ours. */
const TARGETS = [crd, farm];

interface ManagedFieldsEntry { manager: string; operation: string; apiVersion: string; fieldsType: string; fieldsV1: unknown; time?: string; subresource?: string }
interface LlamaObject {
  apiVersion: string; kind: string;
  metadata: {
    name: string; namespace: string; resourceVersion: string; uid: string; generation: number; creationTimestamp: string;
    labels?: Record<string, string>; annotations?: Record<string, string>; managedFields?: ManagedFieldsEntry[];
  };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

before(async () => {
  const t0 = Date.now();
  // A cold cargo build takes minutes: it runs while the control plane starts.
  [cluster, kubeRsBin] = await Promise.all([
    startFarmCluster({ dir: tmp, log: (l) => console.log(`[cluster] ${l}`) }),
    ensureKubeRs(),
  ]);
  api = apiClient(cluster.cp);
  await createNamespace(api.call, NS);
  const doc = await publishedOpenApi(api.call);
  await registerCrd(api.call, crd.group, crdSchemaFromOpenApi(doc));
  console.log(`[ssa-clients] cluster, CRD and kube-rs binary ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}, { timeout: 20 * 60_000 });

after(async () => {
  api?.close();
  await cluster?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[cluster] kept ${tmp}`);
});

// ---- recording what each target answered -------------------------------------------------------

/** One target's run of a scenario: every kubectl call and every object read, in order. */
class Transcript {
  readonly entries: unknown[] = [];
  constructor(readonly target: Target) {}

  async kubectl(args: string[], opts: { input?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<KubectlResult> {
    const r = await runKubectl(args, { kubeconfig: cluster.cp.adminKubeconfig, home, timeoutMs: 60_000, ...opts });
    // JSON output is recorded parsed, so its times and resourceVersions normalise like the objects'.
    const stdout: unknown = r.stdout.startsWith('{') ? JSON.parse(r.stdout) : r.stdout;
    this.entries.push({ args, code: r.code, stdout, stderr: r.stderr });
    return r;
  }

  /** The llama as `kubectl get -o json --show-managed-fields` prints it. */
  async get(name: string): Promise<LlamaObject> {
    const r = await runKubectl(['get', `${this.target.resource}/${name}`, '-n', NS, '-o', 'json', '--show-managed-fields'],
      { kubeconfig: cluster.cp.adminKubeconfig, home, timeoutMs: 60_000 });
    assert.equal(r.code, 0, `${this.target.label}: kubectl get ${name}: ${r.stderr}`);
    const o = JSON.parse(r.stdout) as LlamaObject;
    this.entries.push({ get: name, object: o });
    return o;
  }

  record(what: string, value: unknown): void { this.entries.push({ [what]: value }); }
}

/** What may differ between the two targets: the group, generated names, times, resourceVersions, uids, temp paths. */
function normalised(tr: Transcript): unknown {
  const text = JSON.stringify(tr.entries).replaceAll(tr.target.group, '<group>');
  return JSON.parse(text, function (key: string, value: unknown) {
    if (typeof value === 'string') {
      if (['resourceVersion', 'uid', 'creationTimestamp', 'time'].includes(key)) return `<${key}>`;
      return value
        .replace(/(LIVE|MERGED)-\d+/g, '$1-<n>')
        .replace(/^((?:---|\+\+\+) \S+)\t.*$/gm, '$1\t<mtime>')
        .replace(/^([ +-]*resourceVersion: )"\d+"$/gm, '$1"<rv>"')
        .replace(/^([ +-]*uid: )[0-9a-f-]{36}$/gm, '$1<uid>')
        .replace(/^([ +-]*creationTimestamp: )"[^"]+"$/gm, '$1"<time>"');
    }
    // managedFields' order follows their times; compare them as a set.
    if (key === 'managedFields' && Array.isArray(value)) return [...value].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    return value;
  });
}

/** Runs a scenario on the CRD, then on ours, and checks both transcripts are the same. */
async function onBoth(scenario: (tr: Transcript) => Promise<void>): Promise<void> {
  const transcripts: Transcript[] = [];
  for (const target of TARGETS) {
    const tr = new Transcript(target);
    transcripts.push(tr);
    await scenario(tr);
  }
  assert.deepEqual(normalised(transcripts[1]), normalised(transcripts[0]),
    `${farm.label} answered differently from ${crd.label} (both passed this file's expectations)`);
}

// ---- expectations ----------------------------------------------------------------------------

interface WantEntry { manager: string; operation: 'Apply' | 'Update'; subresource?: string; fieldsV1: unknown; timed?: boolean }

/** managedFields as a set (their order follows their times), each entry exact but for its time's value. */
function assertManagedFields(tr: Transcript, o: LlamaObject, want: WantEntry[], what: string): void {
  const key = (e: { manager: string; operation: string; subresource?: string }) => `${e.manager}/${e.operation}/${e.subresource ?? ''}`;
  const got = (o.metadata.managedFields ?? []).map((e) => ({
    manager: e.manager, operation: e.operation, ...(e.subresource !== undefined && { subresource: e.subresource }),
    apiVersion: e.apiVersion, fieldsType: e.fieldsType, fieldsV1: e.fieldsV1, timed: typeof e.time === 'string' && !Number.isNaN(Date.parse(e.time)),
  })).sort((a, b) => key(a).localeCompare(key(b)));
  const expected = want.map((w) => ({
    manager: w.manager, operation: w.operation, ...(w.subresource !== undefined && { subresource: w.subresource }),
    apiVersion: `${tr.target.group}/v1alpha`, fieldsType: 'FieldsV1', fieldsV1: w.fieldsV1, timed: w.timed ?? true,
  })).sort((a, b) => key(a).localeCompare(key(b)));
  assert.deepEqual(got, expected, `${tr.target.label}: managedFields ${what}`);
}

function assertRan(tr: Transcript, r: KubectlResult, want: { code: number; stdout: string; stderr?: string }, what: string): void {
  assert.deepEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr }, { stderr: '', ...want }, `${tr.target.label}: ${what}`);
}

function manifest(tr: Transcript, name: string, body: { labels?: Record<string, string>; spec?: Record<string, unknown>; status?: Record<string, unknown> }): string {
  return stringify({
    apiVersion: `${tr.target.group}/v1alpha`, kind: 'Llama',
    metadata: { name, namespace: NS, ...(body.labels && { labels: body.labels }) },
    ...(body.spec && { spec: body.spec }), ...(body.status && { status: body.status }),
  });
}

const f = (...names: string[]) => Object.fromEntries(names.map((n) => [`f:${n}`, {}]));
const spec = { weight: 120, height: 1.7 };
/** The spec as stored: `shorn` has a schema default. */
const stored = (s: Record<string, unknown>) => ({ shorn: false, ...s });

/** kubectl's text around an apply conflict (k8s.io/kubectl/pkg/cmd/apply), after the server's message. */
const CONFLICT_ADVICE = `Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the \`--force-conflicts\` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
`;

// ---- kubectl -------------------------------------------------------------------------------

test('kubectl apply --server-side twice (no-op), kubectl edit, apply → conflict, --force-conflicts → kubectl owns the field', { timeout: 5 * 60_000 }, () => onBoth(async (tr) => {
  const name = 'dolly';
  const applied = manifest(tr, name, { labels: { app: 'web' }, spec: { ...spec, color: 'brown' } });
  const apply = (extra: string[] = []) => tr.kubectl(['apply', '--server-side', ...extra, '-f', '-'], { input: applied });

  assertRan(tr, await apply(), { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'first apply');
  const first = await tr.get(name);
  assert.deepEqual(first.spec, stored({ ...spec, color: 'brown' }), `${tr.target.label}: spec`);
  assert.deepEqual(first.metadata.labels, { app: 'web' }, `${tr.target.label}: labels`);
  const kubectlOwnsAll: WantEntry = { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': f('app') }, 'f:spec': f('color', 'height', 'weight') } };
  assertManagedFields(tr, first, [kubectlOwnsAll], 'after the first apply');

  assertRan(tr, await apply(), { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'second apply');
  const second = await tr.get(name);
  assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion, `${tr.target.label}: a no-op apply wrote`);
  assert.deepEqual(second, first, `${tr.target.label}: a no-op apply changed the object`);

  // The real `kubectl edit`: EDITOR is a script rewriting the file kubectl hands it.
  const editor = join(tmp, 'editor.sh');
  writeFileSync(editor, '#!/bin/sh\nsed -i \'s/^  color: brown$/  color: spotted/\' "$1"\n');
  chmodSync(editor, 0o755);
  assertRan(tr, await tr.kubectl(['edit', `${tr.target.resource}/${name}`, '-n', NS], { env: { EDITOR: editor } }),
    { code: 0, stdout: `llama.${tr.target.group}/${name} edited\n` }, 'kubectl edit');
  const edited = await tr.get(name);
  assert.deepEqual(edited.spec, stored({ ...spec, color: 'spotted' }), `${tr.target.label}: spec after the edit`);
  assert.equal(edited.metadata.generation, 2, `${tr.target.label}: generation after the edit`);
  assertManagedFields(tr, edited, [
    { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': f('app') }, 'f:spec': f('height', 'weight') } },
    { manager: 'kubectl-edit', operation: 'Update', fieldsV1: { 'f:spec': f('color') } },
  ], 'after kubectl edit');

  assertRan(tr, await apply(), {
    code: 1, stdout: '',
    stderr: `error: Apply failed with 1 conflict: conflict with "kubectl-edit" using ${tr.target.group}/v1alpha: .spec.color\n${CONFLICT_ADVICE}`,
  }, 'apply over the edit');
  assert.deepEqual(await tr.get(name), edited, `${tr.target.label}: a conflicting apply changed the object`);

  assertRan(tr, await apply(['--force-conflicts']), { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'apply --force-conflicts');
  const forced = await tr.get(name);
  assert.deepEqual(forced.spec, stored({ ...spec, color: 'brown' }), `${tr.target.label}: spec after --force-conflicts`);
  assert.equal(forced.metadata.generation, 3, `${tr.target.label}: generation after --force-conflicts`);
  // kubectl-edit lost its only field: its entry goes.
  assertManagedFields(tr, forced, [kubectlOwnsAll], 'after --force-conflicts');
}));

test('kubectl apply (client-side), then apply --server-side of a changed file: no conflict, annotation updated', { timeout: 5 * 60_000 }, () => onBoth(async (tr) => {
  const name = 'molly';
  const v1 = { labels: { app: 'web' }, spec: { ...spec, color: 'brown' } };
  const v2 = { labels: { app: 'web' }, spec: { ...spec, color: 'grey' } };
  const lastApplied = (o: LlamaObject) => JSON.parse(o.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'] ?? 'null') as unknown;
  const meta = { name, namespace: NS, labels: { app: 'web' } };

  assertRan(tr, await tr.kubectl(['apply', '-f', '-'], { input: manifest(tr, name, v1) }),
    { code: 0, stdout: `llama.${tr.target.group}/${name} created\n` }, 'client-side apply');
  const csa = await tr.get(name);
  assert.deepEqual(lastApplied(csa), { apiVersion: `${tr.target.group}/v1alpha`, kind: 'Llama', metadata: { ...meta, annotations: {} }, spec: v1.spec },
    `${tr.target.label}: last-applied after client-side apply`);
  assertManagedFields(tr, csa, [{
    manager: 'kubectl-client-side-apply', operation: 'Update',
    fieldsV1: {
      'f:metadata': { 'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} }, 'f:labels': { '.': {}, 'f:app': {} } },
      'f:spec': { '.': {}, ...f('color', 'height', 'shorn', 'weight') },
    },
  }], 'after client-side apply');

  // kubectl moves the client-side manager's fields to its server-side one and keeps the annotation
  // current through the manager kubectl-last-applied (k8s.io/kubectl/pkg/cmd/apply, csaupgrade).
  assertRan(tr, await tr.kubectl(['apply', '--server-side', '-f', '-'], { input: manifest(tr, name, v2) }),
    { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'server-side apply after client-side');
  const ssa = await tr.get(name);
  assert.deepEqual(ssa.spec, stored(v2.spec), `${tr.target.label}: spec after the migration`);
  assert.deepEqual(lastApplied(ssa), { apiVersion: `${tr.target.group}/v1alpha`, kind: 'Llama', metadata: meta, spec: v2.spec },
    `${tr.target.label}: last-applied after server-side apply`);
  assertManagedFields(tr, ssa, [
    { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': f('app') }, 'f:spec': f('color', 'height', 'weight') } },
    // kubectl sends this entry without a time (upstream keeps it so).
    { manager: 'kubectl-last-applied', operation: 'Apply', timed: false, fieldsV1: { 'f:metadata': { 'f:annotations': f('kubectl.kubernetes.io/last-applied-configuration') } } },
  ], 'after the migration');
}));

test('kubectl diff --server-side: exit 0 and nothing when equal, exit 1 and the diff when not; nothing written', { timeout: 5 * 60_000 }, () => onBoth(async (tr) => {
  const name = 'polly';
  const brown = manifest(tr, name, { spec: { ...spec, color: 'brown' } });
  assertRan(tr, await tr.kubectl(['apply', '--server-side', '-f', '-'], { input: brown }), { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'apply');
  const before = await tr.get(name);

  assertRan(tr, await tr.kubectl(['diff', '--server-side', '-f', '-'], { input: brown }), { code: 0, stdout: '' }, 'diff of the same file');
  const changed = await tr.kubectl(['diff', '--server-side', '-f', '-'], { input: manifest(tr, name, { spec: { ...spec, color: 'white' } }) });
  assert.equal(changed.code, 1, `${tr.target.label}: diff of a changed file: exit ${changed.code}\n${changed.stderr}`);
  assert.equal(changed.stderr, '', `${tr.target.label}: diff stderr`);
  const lines = changed.stdout.split('\n');
  assert.match(lines[0], new RegExp(`^diff -u -N \\S+/LIVE-\\d+/${tr.target.group}\\.v1alpha\\.Llama\\.${NS}\\.${name} \\S+/MERGED-\\d+/${tr.target.group}\\.v1alpha\\.Llama\\.${NS}\\.${name}$`), `${tr.target.label}: diff header`);
  const changes = lines.filter((l) => /^[+-]/.test(l) && !/^(---|\+\+\+) /.test(l));
  assert.deepEqual(changes, ['-  generation: 1', '+  generation: 2', '-  color: brown', '+  color: white'], `${tr.target.label}: the diff's changed lines\n${changed.stdout}`);

  const after = await tr.get(name);
  assert.deepEqual(after, before, `${tr.target.label}: kubectl diff wrote`);
}));

test('kubectl apply --server-side --dry-run=server answers the result and changes nothing', { timeout: 5 * 60_000 }, () => onBoth(async (tr) => {
  const name = 'holly';
  assertRan(tr, await tr.kubectl(['apply', '--server-side', '-f', '-'], { input: manifest(tr, name, { spec: { ...spec, color: 'brown' } }) }),
    { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'apply');
  const before = await tr.get(name);
  const white = manifest(tr, name, { labels: { tier: 'db' }, spec: { ...spec, color: 'white' } });

  assertRan(tr, await tr.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], { input: white }),
    { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied (server dry run)\n` }, 'dry-run apply');
  const answered = await tr.kubectl(['apply', '--server-side', '--dry-run=server', '-o', 'json', '--show-managed-fields', '-f', '-'], { input: white });
  assert.equal(answered.code, 0, `${tr.target.label}: dry-run apply -o json: ${answered.stderr}`);
  const dry = JSON.parse(answered.stdout) as LlamaObject;
  assert.deepEqual(dry.spec, stored({ ...spec, color: 'white' }), `${tr.target.label}: the dry run's answer`);
  assert.deepEqual(dry.metadata.labels, { tier: 'db' }, `${tr.target.label}: the dry run's labels`);
  assert.equal(dry.metadata.generation, 2, `${tr.target.label}: the dry run's generation`);
  assert.equal(dry.metadata.resourceVersion, before.metadata.resourceVersion, `${tr.target.label}: the dry run's resourceVersion`);
  assertManagedFields(tr, dry, [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': f('tier') }, 'f:spec': f('color', 'height', 'weight') } }], 'in the dry run\'s answer');

  assert.deepEqual(await tr.get(name), before, `${tr.target.label}: a dry run wrote`);
}));

test('kubectl apply --server-side --subresource=status sets Ready; kubectl wait --for=condition=Ready returns', { timeout: 5 * 60_000 }, () => onBoth(async (tr) => {
  const name = 'wally';
  assertRan(tr, await tr.kubectl(['apply', '--server-side', '-f', '-'], { input: manifest(tr, name, { spec: { ...spec, color: 'brown' } }) }),
    { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'apply');
  const waitArgs = ['wait', '--for=condition=Ready', `${tr.target.resource}/${name}`, '-n', NS];
  assertRan(tr, await tr.kubectl([...waitArgs, '--timeout=1s']),
    { code: 1, stdout: '', stderr: `error: timed out waiting for the condition on llamas/${name}\n` }, 'wait before any status');

  // The wait starts first, so it sees the condition arrive (on its watch, or its first read if slower).
  const waiting = spawnKubectl([...waitArgs, '--timeout=30s'], { kubeconfig: cluster.cp.adminKubeconfig, home, timeoutMs: 60_000 });
  await sleep(1000);
  const status = {
    observedGeneration: 1,
    conditions: [{ type: 'Ready', status: 'True', reason: 'Fed', message: 'all good', lastTransitionTime: '2026-01-02T03:04:05Z' }],
  };
  // spec in a status apply is ignored by /status.
  assertRan(tr, await tr.kubectl(['apply', '--server-side', '--subresource=status', '--field-manager=llama-controller', '-f', '-'],
    { input: manifest(tr, name, { spec: { color: 'black' }, status }) }),
  { code: 0, stdout: `llama.${tr.target.group}/${name} serverside-applied\n` }, 'status apply');
  const waited = await waiting.exited;
  tr.record('wait', { code: waited.code, stdout: waited.stdout, stderr: waited.stderr });
  assert.deepEqual({ code: waited.code, stdout: waited.stdout, stderr: waited.stderr },
    { code: 0, stdout: `llama.${tr.target.group}/${name} condition met\n`, stderr: '' }, `${tr.target.label}: kubectl wait`);

  const o = await tr.get(name);
  assert.deepEqual(o.status, status, `${tr.target.label}: status`);
  assert.deepEqual(o.spec, stored({ ...spec, color: 'brown' }), `${tr.target.label}: spec after the status apply`);
  assert.equal(o.metadata.generation, 1, `${tr.target.label}: generation after the status apply`);
  assertManagedFields(tr, o, [
    { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': f('color', 'height', 'weight') } },
    {
      manager: 'llama-controller', operation: 'Apply', subresource: 'status',
      fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, ...f('lastTransitionTime', 'message', 'reason', 'status', 'type') } }, 'f:observedGeneration': {} } },
    },
  ], 'after the status apply');
}));

// ---- kube-rs -------------------------------------------------------------------------------

interface KubeRsLine { client: string; step: string; ok: boolean; detail: unknown; error?: string }
const KUBERS_STEPS = ['apply', 'apply-noop', 'apply-conflict', 'apply-force', 'apply-status'];

function runKubeRs(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(kubeRsBin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', (e) => { clearTimeout(timer); rej(e); });
    child.on('close', (code) => { clearTimeout(timer); res({ code, stdout, stderr }); });
  });
}

test('kube-rs Patch::Apply: create, no-op, 409 conflict, force, and patch_status with a Ready condition', { timeout: 5 * 60_000 }, () => onBoth(async (tr) => {
  const name = 'rusty';
  const [manager, rival] = ['kube-rs-controller', 'kube-rs-rival'];
  const r = await runKubeRs(['apply', '--kubeconfig', cluster.cp.adminKubeconfig, '--namespace', NS, '--name', name,
    '--manager', manager, '--rival', rival, '--group', tr.target.group, '--timeout', '60']);
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as KubeRsLine);
  tr.record('kube-rs', lines);
  const failed = lines.find((l) => !l.ok);
  assert.equal(failed, undefined, `${tr.target.label}: kube-rs step ${failed?.step}: ${failed?.error}\n${JSON.stringify(failed?.detail)}`);
  assert.deepEqual(lines.map((l) => l.step), KUBERS_STEPS, `${tr.target.label}: kube-rs exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  assert.equal(r.code, 0, `${tr.target.label}: kube-rs exit code; stderr:\n${r.stderr}`);
  const step = (s: string) => lines.find((l) => l.step === s)!.detail;

  const created = step('apply') as LlamaObject;
  assert.deepEqual(created.spec, stored({ ...spec, color: 'brown' }), `${tr.target.label}: spec after kube-rs apply`);
  assertManagedFields(tr, created, [{ manager, operation: 'Apply', fieldsV1: { 'f:spec': f('color', 'height', 'weight') } }], 'after kube-rs apply');
  assert.deepEqual(step('apply-noop'), created, `${tr.target.label}: a no-op kube-rs apply changed the object`);

  assert.deepEqual(step('apply-conflict'), {
    code: 409, status: 'Failure', reason: 'Conflict', metadata: {},
    message: `Apply failed with 1 conflict: conflict with "${manager}": .spec.color`,
    details: { causes: [{ reason: 'FieldManagerConflict', message: `conflict with "${manager}"`, field: '.spec.color' }] },
  }, `${tr.target.label}: the conflict Status kube-rs decoded`);

  const forced = step('apply-force') as LlamaObject;
  assert.deepEqual(forced.spec, stored({ ...spec, color: 'black' }), `${tr.target.label}: spec after the forced apply`);
  assert.equal(forced.metadata.generation, 2, `${tr.target.label}: generation after the forced apply`);
  const specEntries: WantEntry[] = [
    { manager, operation: 'Apply', fieldsV1: { 'f:spec': f('height', 'weight') } },
    { manager: rival, operation: 'Apply', fieldsV1: { 'f:spec': f('color') } },
  ];
  assertManagedFields(tr, forced, specEntries, 'after the forced kube-rs apply');

  const withStatus = step('apply-status') as LlamaObject;
  assert.deepEqual(withStatus.status, {
    observedGeneration: 2,
    conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled', message: 'kube-rs applied this', lastTransitionTime: '2026-01-02T03:04:05Z', observedGeneration: 2 }],
  }, `${tr.target.label}: status after patch_status`);
  assert.deepEqual(withStatus.spec, forced.spec, `${tr.target.label}: spec after patch_status`);
  assert.equal(withStatus.metadata.generation, 2, `${tr.target.label}: generation after patch_status`);
  assertManagedFields(tr, withStatus, [...specEntries, {
    manager, operation: 'Apply', subresource: 'status',
    fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, ...f('lastTransitionTime', 'message', 'observedGeneration', 'reason', 'status', 'type') } }, 'f:observedGeneration': {} } },
  }], 'after patch_status');
  assert.deepEqual(await tr.get(name), withStatus, `${tr.target.label}: GET differs from patch_status's answer`);
}));
