// The reference controller (examples/llama-controller) against the real control plane: kube-apiserver's
// aggregator in front of farm-apiserver, the controller a child process (`node --import tsx main.ts`)
// authenticated as the ServiceAccount of examples/llama-controller/rbac.yaml with only that RBAC, and
// every check through real kubectl: the finalizer and Ready (`kubectl wait --for=condition=Ready`),
// observedGeneration following the spec, no hot loop, Events in `kubectl describe`, deletion waiting
// for the controller (stopped, then started again), other finalizers untouched, and the informer
// recovering when farm-apiserver restarts (its in-memory llamas and resourceVersions start over: 410).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { writeKubeconfig } from '../../src/certs/kubeconfig.js';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { kubectl, type KubectlResult } from '../helpers/kubectl.js';
import { eventually, sleep } from './e2e.helpers.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CONTROLLER_DIR = join(REPO, 'examples/llama-controller');
const NS = 'llama-ctl';
const FINALIZER = 'farm.example.com/llama-controller';
const SA_USER = 'system:serviceaccount:farm-system:llama-controller';
const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-controller-'));
const home = join(tmp, 'home'); // startFarmCluster's kubectl HOME: discovery is cached already
let cluster: FarmCluster;
let controllerKubeconfig: string;
let controller: Controller | undefined;
/** Every controller run's log lines, for the checks that span restarts. */
const allLogs: LogLine[] = [];

// ---- the controller as a child process ----------------------------------------------------------

interface LogLine { level?: string; msg?: string; llama?: string; text: string; [k: string]: unknown }

class Controller {
  readonly lines: LogLine[] = [];
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly listeners = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    let partial = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      partial += d;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const text of parts) {
        let line: LogLine;
        try { line = { ...(JSON.parse(text) as Record<string, unknown>), text }; } catch { line = { text }; }
        this.lines.push(line);
        allLogs.push(line);
        appendFileSync(join(tmp, 'llama-controller.log'), `${text}\n`);
      }
      for (const l of [...this.listeners]) l();
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => { for (const text of d.split('\n').filter(Boolean)) this.lines.push({ text }); });
    this.exited = new Promise((r) => child.once('exit', (code, signal) => { for (const l of [...this.listeners]) l(); r({ code, signal }); }));
  }

  get running(): boolean { return this.child.exitCode === null && this.child.signalCode === null; }

  count(msg: string, llama?: string): number {
    return this.lines.filter((l) => l.msg === msg && (llama === undefined || l.llama === llama)).length;
  }

  log(): string { return this.lines.map((l) => l.text).join('\n'); }

  waitForLog(msg: string, timeoutMs: number): Promise<void> {
    return new Promise((res, rej) => {
      const check = () => {
        if (this.lines.some((l) => l.msg === msg)) { done(); res(); } else if (!this.running) {
          done(); rej(new Error(`controller exited (${this.child.exitCode ?? this.child.signalCode}) before logging "${msg}":\n${this.log()}`));
        }
      };
      const timer = setTimeout(() => { done(); rej(new Error(`controller did not log "${msg}" within ${timeoutMs} ms:\n${this.log()}`)); }, timeoutMs);
      const done = () => { clearTimeout(timer); this.listeners.delete(check); };
      this.listeners.add(check);
      check();
    });
  }

  /** SIGTERM (a graceful stop), SIGKILL after 15 s; the exit it made. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    const r = await this.exited;
    clearTimeout(timer);
    return r;
  }
}

async function startController(): Promise<Controller> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(CONTROLLER_DIR, 'main.ts')], {
    cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'],
    // Nothing of the caller's kube setup: the ServiceAccount's kubeconfig only, found by loadFromDefault.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, KUBECONFIG: controllerKubeconfig, LLAMA_CONTROLLER_LOG_LEVEL: 'debug' },
  });
  const c = new Controller(child);
  controller = c;
  await c.waitForLog('started', 60_000);
  return c;
}

async function stopController(): Promise<void> {
  const c = controller;
  controller = undefined;
  if (!c) return;
  const r = await c.stop();
  assert.deepEqual(r, { code: 0, signal: null }, `the controller's graceful stop:\n${c.log()}`);
  assert.equal(c.count('stopped'), 1, 'the controller logged its stop');
}

// ---- kubectl as the admin -------------------------------------------------------------------

const k = (args: string[], input?: string): Promise<KubectlResult> =>
  kubectl(args, { kubeconfig: cluster.cp.adminKubeconfig, home, timeoutMs: 60_000, input });

async function must(args: string[], input?: string): Promise<string> {
  const r = await k(args, input);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}\n--- controller log ---\n${controller?.log() ?? '(not running)'}`);
  return r.stdout;
}

interface Condition { type: string; status: string; reason: string; message: string; lastTransitionTime: string; observedGeneration?: number }
interface ManagedFieldsEntry { manager: string; operation: string; subresource?: string; fieldsV1?: unknown }
interface Llama {
  metadata: {
    name: string; uid: string; resourceVersion: string; generation: number; deletionTimestamp?: string;
    finalizers?: string[]; managedFields?: ManagedFieldsEntry[];
  };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[] };
}
interface CoreEvent {
  reason: string; message: string; type: string; count?: number; reportingComponent?: string; source?: { component?: string };
  involvedObject: { apiVersion?: string; kind?: string; name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** The llama, or undefined once it is gone. */
async function getLlama(name: string): Promise<Llama | undefined> {
  const r = await k(['get', 'llama', name, '-n', NS, '-o', 'json', '--show-managed-fields']);
  if (r.code !== 0 && /NotFound/.test(r.stderr)) return undefined;
  assert.equal(r.code, 0, `kubectl get llama ${name}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Llama;
}

async function mustGet(name: string): Promise<Llama> {
  const l = await getLlama(name);
  assert.ok(l, `llama ${name} is gone`);
  return l;
}

async function createLlama(name: string, finalizers?: string[]): Promise<void> {
  await must(['create', '-f', '-'], stringify({
    apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
    metadata: { name, namespace: NS, ...(finalizers && { finalizers }) },
    spec: { weight: 120, height: 1.7, color: 'brown' },
  }));
}

async function waitReady(name: string): Promise<void> {
  const r = await k(['wait', '--for=condition=Ready', `llama/${name}`, '-n', NS, '--timeout=30s']);
  assert.deepEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr },
    { code: 0, stdout: `llama.farm.example.com/${name} condition met\n`, stderr: '' },
    `kubectl wait --for=condition=Ready llama/${name}\n--- controller log ---\n${controller?.log() ?? '(not running)'}`);
}

async function eventsOf(name: string, reason?: string): Promise<CoreEvent[]> {
  const selector = `involvedObject.name=${name}${reason ? `,reason=${reason}` : ''}`;
  return (JSON.parse(await must(['get', 'events', '-n', NS, '--field-selector', selector, '-o', 'json'])) as { items: CoreEvent[] }).items;
}

/** The resourceVersion stays put for a while: nobody (above all not the controller) writes the llama. */
async function assertQuiet(name: string, ms: number): Promise<void> {
  const before = await mustGet(name);
  await sleep(ms);
  const afterwards = await mustGet(name);
  assert.equal(afterwards.metadata.resourceVersion, before.metadata.resourceVersion,
    `llama ${name} was written while nothing changed (hot loop?)\n--- controller log ---\n${controller?.log()}`);
}

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

// ---- setup ------------------------------------------------------------------------------------

before(async () => {
  const t0 = Date.now();
  cluster = await startFarmCluster({ dir: tmp, log: (l) => console.log(`[cluster] ${l}`) });
  await must(['create', 'namespace', NS]);
  await must(['apply', '-f', join(CONTROLLER_DIR, 'rbac.yaml')]);
  // The controller runs as the ServiceAccount rbac.yaml binds: that RBAC is what the test proves.
  const token = (await must(['-n', 'farm-system', 'create', 'token', 'llama-controller', '--duration=2h'])).trim();
  controllerKubeconfig = join(tmp, 'llama-controller.kubeconfig');
  await writeKubeconfig(controllerKubeconfig, {
    server: cluster.cp.apiserverUrl, caPem: readFileSync(cluster.cp.clusterCa, 'utf8'), token, contextName: 'llama-controller',
  });
  await startController();
  console.log(`[controller] cluster and controller ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}, { timeout: 10 * 60_000 });

after(async () => {
  if (controller?.running) controller.child.kill('SIGKILL');
  await cluster?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[cluster] kept ${tmp} (the controller's log: llama-controller.log)`);
});

// ---- the scenarios ----------------------------------------------------------------------------

test('rbac.yaml grants the controller exactly what it uses', { timeout: 60_000 }, async () => {
  const can = async (verb: string, resource: string, subresource?: string) => {
    const r = await k(['auth', 'can-i', verb, resource, `--as=${SA_USER}`, '-n', NS, ...(subresource ? [`--subresource=${subresource}`] : [])]);
    return r.stdout.trim();
  };
  const want: Array<[string, string, string | undefined, 'yes' | 'no']> = [
    ['list', 'llamas.farm.example.com', undefined, 'yes'], ['watch', 'llamas.farm.example.com', undefined, 'yes'],
    ['get', 'llamas.farm.example.com', undefined, 'yes'], ['patch', 'llamas.farm.example.com', undefined, 'yes'],
    ['patch', 'llamas.farm.example.com', 'status', 'yes'], ['create', 'events', undefined, 'yes'], ['patch', 'events', undefined, 'yes'],
    ['create', 'llamas.farm.example.com', undefined, 'no'], ['update', 'llamas.farm.example.com', undefined, 'no'],
    ['delete', 'llamas.farm.example.com', undefined, 'no'], ['update', 'llamas.farm.example.com', 'status', 'no'],
    ['list', 'events', undefined, 'no'], ['list', 'pods', undefined, 'no'],
  ];
  const got = await Promise.all(want.map(async ([verb, resource, sub]) => [verb, resource, sub, await can(verb, resource, sub)]));
  assert.deepEqual(got, want);
});

test('a new llama gets the finalizer and Ready=True by server-side apply; observedGeneration follows the spec; no hot loop', { timeout: 3 * 60_000 }, async () => {
  const name = 'dolly';
  await createLlama(name);
  await waitReady(name);
  const ready = await mustGet(name);
  assert.deepEqual(ready.metadata.finalizers, [FINALIZER]);
  assert.equal(ready.metadata.generation, 1);
  assert.equal(ready.status?.observedGeneration, 1);
  const [cond] = ready.status?.conditions ?? [];
  assert.equal(ready.status?.conditions?.length, 1);
  assert.match(cond.lastTransitionTime, RFC3339);
  assert.deepEqual({ ...cond, lastTransitionTime: '<t>' }, {
    type: 'Ready', status: 'True', reason: 'Reconciled', observedGeneration: 1, lastTransitionTime: '<t>',
    message: 'The llama is at home: llama-controller has reconciled this generation',
  });
  // Both writes are the controller's applies: metadata.finalizers on the llama, the status on /status.
  const mine = (ready.metadata.managedFields ?? []).filter((e) => e.manager === 'llama-controller')
    .map((e) => ({ operation: e.operation, subresource: e.subresource ?? '', fieldsV1: e.fieldsV1 }))
    .sort((a, b) => a.subresource.localeCompare(b.subresource));
  assert.deepEqual(mine, [
    { operation: 'Apply', subresource: '', fieldsV1: { 'f:metadata': { 'f:finalizers': { [`v:"${FINALIZER}"`]: {} } } } },
    {
      operation: 'Apply', subresource: 'status', fieldsV1: {
        'f:status': {
          'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:observedGeneration': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} } },
          'f:observedGeneration': {},
        },
      },
    },
  ], 'the controller\'s managedFields');

  // Its own status write comes back as a watch event: it must not answer it with another write.
  await assertQuiet(name, 2500);
  const key = `${NS}/${name}`;
  assert.equal(controller!.count('finalizer added', key), 1, controller!.log());
  assert.equal(controller!.count('status applied', key), 1, controller!.log());

  await must(['patch', 'llama', name, '-n', NS, '--type=merge', '-p', '{"spec":{"weight":130}}']);
  const r = await k(['wait', '--for=jsonpath={.status.observedGeneration}=2', `llama/${name}`, '-n', NS, '--timeout=30s']);
  assert.equal(r.code, 0, `observedGeneration never reached 2: ${r.stderr}\n${controller!.log()}`);
  const changed = await mustGet(name);
  assert.equal(changed.metadata.generation, 2);
  const [cond2] = changed.status?.conditions ?? [];
  assert.equal(cond2.observedGeneration, 2);
  assert.equal(cond2.status, 'True');
  assert.equal(cond2.lastTransitionTime, cond.lastTransitionTime, 'Ready stayed True: lastTransitionTime must not move');
  await assertQuiet(name, 2500);
  assert.equal(controller!.count('status applied', key), 2, controller!.log());
  assert.equal(controller!.count('finalizer added', key), 1, controller!.log());
});

test('kubectl describe llama shows the controller\'s Events', { timeout: 60_000 }, async () => {
  const name = 'dolly';
  const llama = await mustGet(name);
  const row = (reason: string, message: string) => new RegExp(`^\\s+Normal\\s+${reason}\\s+\\S+\\s+llama-controller\\s+${message.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm');
  const rows = [
    row('FinalizerAdded', `Added finalizer ${FINALIZER}`),
    row('Reconciled', 'Ready: observed generation 1'),
    row('Reconciled', 'Ready: observed generation 2'),
  ];
  const described = await eventually('the events in kubectl describe', 20_000, async () => {
    const out = await must(['describe', 'llama', name, '-n', NS]);
    const events = out.slice(out.indexOf('\nEvents:'));
    return out.includes('\nEvents:') && rows.every((re) => re.test(events)) ? out : undefined;
  });
  assert.match(described, /^Name:\s+dolly$/m);

  const events = await eventsOf(name);
  assert.equal(events.length, 3, JSON.stringify(events, null, 1));
  for (const e of events) {
    assert.deepEqual({ ...e.involvedObject, resourceVersion: undefined }, {
      apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', name, namespace: NS, uid: llama.metadata.uid, resourceVersion: undefined,
    });
    assert.match(e.involvedObject.resourceVersion ?? '', /^\d+$/);
    assert.equal(e.reportingComponent, 'llama-controller');
    assert.equal(e.source?.component, 'llama-controller');
    assert.equal(e.type, 'Normal');
    assert.equal(e.count, 1);
  }
});

test('deletion waits for the controller: stopped, the llama stays; started again, it goes', { timeout: 3 * 60_000 }, async () => {
  const name = 'dolly';
  await stopController();
  await must(['delete', 'llama', name, '-n', NS, '--wait=false']);
  for (let i = 0; i < 2; i++) {
    const deleting = await mustGet(name);
    assert.ok(deleting.metadata.deletionTimestamp, 'deletionTimestamp is set');
    assert.deepEqual(deleting.metadata.finalizers, [FINALIZER]);
    if (i === 0) await sleep(1500);
  }

  await startController();
  const r = await k(['wait', '--for=delete', `llama/${name}`, '-n', NS, '--timeout=30s']);
  assert.equal(r.code, 0, `the llama was not deleted: ${r.stdout}${r.stderr}\n${controller!.log()}`);
  assert.equal(await getLlama(name), undefined);
  const finalizing = await eventually('the Finalizing event', 15_000, async () => {
    const ev = await eventsOf(name, 'Finalizing');
    return ev.length > 0 ? ev : undefined;
  });
  assert.equal(finalizing[0].message, `Llama is being deleted: ${FINALIZER} cleans up and lets it go`);

  // With the controller running, a plain (waiting) delete just completes.
  await createLlama('molly');
  await waitReady('molly');
  const del = await k(['delete', 'llama', 'molly', '-n', NS, '--timeout=30s']);
  assert.deepEqual({ code: del.code, stdout: del.stdout }, { code: 0, stdout: 'llama.farm.example.com "molly" deleted\n' }, del.stderr);
  assert.equal(await getLlama('molly'), undefined);
});

test('other finalizers are never touched', { timeout: 2 * 60_000 }, async () => {
  const name = 'keeper';
  const other = 'example.com/keep-me';
  await createLlama(name, [other]);
  await waitReady(name);
  assert.deepEqual((await mustGet(name)).metadata.finalizers, [other, FINALIZER]);

  await must(['delete', 'llama', name, '-n', NS, '--wait=false']);
  const left = await eventually('the controller to remove its finalizer only', 30_000, async () => {
    const l = await getLlama(name);
    return l && l.metadata.finalizers?.length === 1 ? l : undefined;
  });
  assert.deepEqual(left.metadata.finalizers, [other]);
  assert.ok(left.metadata.deletionTimestamp);
  await sleep(1500);
  assert.deepEqual((await mustGet(name)).metadata.finalizers, [other], 'the controller left the other finalizer alone');

  await must(['patch', 'llama', name, '-n', NS, '--type=json', '-p', `[{"op":"test","path":"/metadata/finalizers/0","value":"${other}"},{"op":"remove","path":"/metadata/finalizers/0"}]`]);
  const r = await k(['wait', '--for=delete', `llama/${name}`, '-n', NS, '--timeout=30s']);
  assert.equal(r.code, 0, r.stderr);
});

test('the informer recovers when farm-apiserver restarts (watch broken, then 410 Gone: relist)', { timeout: 3 * 60_000 }, async () => {
  const c = controller!;
  const listsBefore = c.count('listed llamas');
  // In memory, the restarted server has no llamas and resourceVersions no earlier process issued.
  await cluster.restartFarm();
  await must(['wait', '--for=condition=Available', 'apiservice/v1alpha.farm.example.com', '--timeout=60s']);
  const name = 'phoenix';
  await eventually('creating a llama after the restart', 30_000, async () => (await k(['create', '-f', '-'], stringify({
    apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, namespace: NS }, spec: { weight: 90, height: 1.5 },
  }))).code === 0);
  await waitReady(name);
  assert.ok(c.count('listed llamas') > listsBefore, `the informer relisted:\n${c.log()}`);
  assert.equal(c, controller, 'the same controller process');
  assert.ok(c.running, 'the controller kept running');
  await assertQuiet(name, 2000);
  assert.equal(c.count('status applied', `${NS}/${name}`), 1, c.log());
});

test('no controller run logged an unhandled rejection', () => {
  assert.ok(allLogs.length > 0);
  assert.deepEqual(allLogs.filter((l) => l.msg === 'unhandled rejection'), []);
});
