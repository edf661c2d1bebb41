// FarmPods end to end: real Pods in a real kube-apiserver 1.33 (etcd, RBAC, aggregation layer),
// our server registered behind the aggregator as its ServiceAccount, real kubectl.
// No kubelet and no nodes: Pods stay Pending unless a test patches their status subresource the
// way a kubelet would. One cluster for the whole file; the tests share it and run in order.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { LineReader } from '../../src/apimachinery/ndjson.js';
import { farmPodUid } from '../../src/registry/farm/farmpod.js';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { startFarmServer } from '../helpers/kubectl.js';
import { samples } from '../helpers/metrics.js';
import { pino } from 'pino';
import { Upstream } from '../../src/upstream/client.js';
import { Reflector } from '../../src/upstream/reflector.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-fp-e2e-'));
const clusterDir = join(tmp, 'cluster');
let cluster: FarmCluster;
const NS = 'pasture';
const NS2 = 'barn';
const GV = '/apis/farm.example.com/v1alpha';
/** How long to wait for a change to show up. Latencies are recorded and printed, not asserted:
 * speed is measured in bench/farmpods.ts (FarmPod watch delivery p99 ~4 ms), not in tests. */
const WAIT_MS = 30_000;
const latencies: { what: string; ms: number }[] = [];
const children = new Set<ChildProcess>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------- helpers: kubectl ----------

async function kubectl(args: string[], opts: { user?: 'admin' | 'alice'; input?: string } = {}) {
  return cluster.kubectl(args, { kubeconfig: cluster.cp.kubeconfigFor(opts.user ?? 'admin'), input: opts.input });
}

async function must(args: string[], input?: string): Promise<string> {
  const r = await kubectl(args, { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Rows of a kubectl table, cut at the header's column offsets (tabwriter aligns every row). */
function table(stdout: string): Record<string, string>[] {
  const lines = stdout.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const starts = [...lines[0].matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index! }));
  return lines.slice(1).map((line) => Object.fromEntries(starts.map((s, i) => [s.name, line.slice(s.at, starts[i + 1]?.at ?? line.length).trim()])));
}

const names = (stdout: string) => stdout.split('\n').filter(Boolean).sort();

/** Streams a long-running kubectl (e.g. get -w), each stdout line stamped with its arrival time. */
function spawnKubectl(args: string[]) {
  const child = spawn('kubectl', ['--kubeconfig', cluster.cp.adminKubeconfig, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(clusterDir, 'home') }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const lines = new TimedLines<string>();
  const reader = new LineReader();
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => { for (const line of reader.push(c)) lines.push(line); });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  child.on('exit', () => { children.delete(child); lines.end(); });
  return { lines, get stderr() { return stderr; }, stop: () => child.kill('SIGTERM') };
}

class TimedLines<T> {
  readonly items: { t: number; v: T }[] = [];
  private ended = false;
  private readonly waiters = new Set<() => void>();
  push(v: T) { this.items.push({ t: Date.now(), v }); this.notify(); }
  end() { this.ended = true; this.notify(); }
  private notify() { for (const w of [...this.waiters]) w(); }
  /** The first item at index ≥ from matching pred. */
  waitFor(pred: (v: T) => boolean, opts: { from?: number; timeoutMs?: number; what: string }): Promise<{ t: number; v: T; index: number }> {
    const { from = 0, timeoutMs = 10_000 } = opts;
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let i = from; i < this.items.length; i++) {
          if (pred(this.items[i].v)) { done(); resolve({ ...this.items[i], index: i }); return; }
        }
        if (this.ended) { done(); reject(new Error(`stream ended before ${opts.what}; got:\n${this.dump()}`)); }
      };
      const timer = setTimeout(() => { done(); reject(new Error(`no ${opts.what} within ${timeoutMs} ms; got:\n${this.dump()}`)); }, timeoutMs);
      const done = () => { clearTimeout(timer); this.waiters.delete(check); };
      this.waiters.add(check);
      check();
    });
  }
  /** Resolves true once the stream has ended, false if it has not within timeoutMs. */
  whenEnded(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => { if (this.ended) { done(); resolve(true); } };
      const timer = setTimeout(() => { done(); resolve(false); }, timeoutMs);
      const done = () => { clearTimeout(timer); this.waiters.delete(check); };
      this.waiters.add(check);
      check();
    });
  }
  dump() { return this.items.map((i) => (typeof i.v === 'string' ? i.v : JSON.stringify(i.v).slice(0, 300))).join('\n'); }
}

// ---------- helpers: HTTPS to kube-apiserver (through the aggregator) or to our server directly ----------

interface Target { base: string; ca: Buffer; cert?: Buffer; key?: Buffer; headers?: Record<string, string | string[]> }

/** Through kube-apiserver: the aggregator authenticates the client cert and proxies to us. */
function viaAggregator(user: 'admin' | 'alice'): Target {
  const cc = cluster.cp.clientCert(user);
  return { base: cluster.cp.apiserverUrl, ca: readFileSync(cluster.cp.clusterCa), cert: readFileSync(cc.cert), key: readFileSync(cc.key) };
}

/** Straight to our server as the front proxy would call it, asserting this identity (works while kube-apiserver is down). */
function direct(user = 'admin', groups = ['system:masters']): Target {
  const fp = cluster.cp.frontProxy;
  return {
    base: `https://127.0.0.1:${cluster.farmPort}`, ca: readFileSync(join(cluster.farmCertDir, 'ca.crt')),
    cert: readFileSync(fp.clientCert), key: readFileSync(fp.clientKey),
    headers: { 'X-Remote-User': user, ...(groups.length ? { 'X-Remote-Group': groups } : {}) },
  };
}

/** Our server with no client certificate (health endpoints need none). */
const anonymousDirect = (): Target => ({ base: `https://127.0.0.1:${cluster.farmPort}`, ca: readFileSync(join(cluster.farmCertDir, 'ca.crt')) });

interface Res { status: number; headers: Record<string, string | string[] | undefined>; body: string; json(): any }

function call(t: Target, method: string, path: string, opts: { body?: unknown; contentType?: string; timeoutMs?: number } = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = httpsRequest(`${t.base}${path}`, {
      method, ca: t.ca, cert: t.cert, key: t.key, agent: false, timeout: opts.timeoutMs ?? 10_000,
      headers: { accept: 'application/json', ...t.headers, ...(payload ? { 'content-type': opts.contentType ?? 'application/json' } : {}) },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

interface WatchEvent { type: string; object: any }

/** A raw watch: NDJSON events, each stamped with its arrival time. */
function rawWatch(t: Target, path: string): Promise<{ status: number; events: TimedLines<WatchEvent>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${t.base}${path}`, { method: 'GET', ca: t.ca, cert: t.cert, key: t.key, agent: false, headers: { accept: 'application/json', ...t.headers } }, (res) => {
      const events = new TimedLines<WatchEvent>();
      const reader = new LineReader();
      res.on('data', (c: Buffer) => {
        for (const raw of reader.push(c)) {
          const line = raw.trim();
          if (line) events.push(JSON.parse(line) as WatchEvent);
        }
      });
      res.on('end', () => events.end());
      res.on('close', () => events.end());
      res.on('error', () => events.end());
      resolve({ status: res.statusCode ?? 0, events, close: () => req.destroy() });
    });
    req.on('error', (e) => { if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e); });
    req.end();
  });
}

async function eventually<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined | false>, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(intervalMs);
  }
}

async function scrape(): Promise<string> {
  const r = await call(direct(), 'GET', '/metrics');
  assert.equal(r.status, 200, r.body);
  return r.body;
}

/** Re-throws with the tail of our server's log, which is what explains most failures here. */
async function withLog(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    const log = (() => { try { return readFileSync(cluster.farmLog, 'utf8').split('\n').slice(-25).join('\n'); } catch { return '(no log)'; } })();
    if (e instanceof Error) e.message += `\n--- farm-apiserver log (tail) ---\n${log}`;
    throw e;
  }
}

// ---------- the Pods ----------

const FIVE_DAYS_AGO = new Date(Date.now() - 5 * 24 * 3600e3 - 60e3).toISOString().replace(/\.\d{3}Z$/, 'Z');

function podManifest(name: string, ns: string, o: { labels?: Record<string, string>; nodeName?: string; image?: string; resources?: unknown; owner?: { kind: string; name: string } } = {}) {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: ns, labels: o.labels,
      ...(o.owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: o.owner.kind, name: o.owner.name, uid: '6f1d7a52-3b0e-4c1a-9a57-0c2f3e4d5a61', controller: true }] } : {}),
    },
    spec: { nodeName: o.nodeName, containers: [{ name: 'c', image: o.image ?? 'nginx:1.27', resources: o.resources }] },
  });
}

/** What a kubelet would write for a running, ready container that has restarted. */
function runningStatus(o: { restarts: number; podIP: string; image: string }) {
  return JSON.stringify({ status: {
    phase: 'Running', podIP: o.podIP,
    conditions: [
      { type: 'Initialized', status: 'True' }, { type: 'Ready', status: 'True' },
      { type: 'ContainersReady', status: 'True' }, { type: 'PodScheduled', status: 'True' },
    ],
    containerStatuses: [{
      name: 'c', ready: true, restartCount: o.restarts, image: o.image, imageID: '', started: true,
      state: { running: { startedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') } },
      lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: FIVE_DAYS_AGO } },
    }],
  } });
}

const patchStatus = (name: string, ns: string, status: string) =>
  kubectl(['patch', 'pod', name, '-n', ns, '--subresource=status', '--type=merge', '-p', status]);

async function farmPod(name: string, ns = NS): Promise<any> {
  const r = await call(direct(), 'GET', `${GV}/namespaces/${ns}/farmpods/${name}`);
  return r.status === 200 ? r.json() : undefined;
}

// ---------- the cluster ----------

before(async () => {
  const t0 = Date.now();
  cluster = await startFarmCluster({ dir: clusterDir, log: (l) => console.log(`[cluster +${Date.now() - t0} ms] ${l}`) });
  await must(['create', 'namespace', NS]);
  await must(['create', 'namespace', NS2]);
  // Llamas need our server to have seen the namespace (its lifecycle admission), so retry briefly.
  const dolly = JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'dolly', namespace: NS }, spec: { weight: 120, height: 1.7, color: 'brown' } });
  await eventually('llama dolly created', 10_000, async () => (await kubectl(['create', '-f', '-'], { input: dolly })).code === 0);
  console.log(`[cluster ready +${Date.now() - t0} ms]`);
}, { timeout: 15 * 60_000 });

after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await cluster?.stop();
  if (latencies.length) {
    console.log('watch latencies (ms, from the start of the kubectl command that changed the Pod or Llama):');
    for (const l of latencies) console.log(`  ${l.what}: ${l.ms}`);
  }
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`cluster dir kept: ${tmp}`);
});

// ---------- tests ----------

test('Pods appear as FarmPods: get -A, -o wide, -o yaml, short name fp, category farm; cells agree with kubectl get pods', () => withLog(async () => {
  await must(['create', '-f', '-'], [
    podManifest('web-1', NS, { labels: { app: 'web', 'farm.example.com/llama': 'dolly' }, owner: { kind: 'ReplicaSet', name: 'web-rs' } }),
    podManifest('db-1', NS, { labels: { app: 'db' }, nodeName: 'node-a', image: 'redis:7', resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } }),
    podManifest('hay-1', NS2, { labels: { app: 'web' }, image: 'busybox:1.36', resources: { requests: { cpu: '50m' } } }),
  ].join('\n'));
  const patched = await patchStatus('web-1', NS, runningStatus({ restarts: 3, podIP: '10.1.2.3', image: 'nginx:1.27' }));
  assert.equal(patched.code, 0, patched.stderr);
  await eventually('web-1 Running as a FarmPod', WAIT_MS, async () => (await farmPod('web-1'))?.status?.status === 'Running');

  // kubectl get farmpods -A: the same Pods as kubectl get pods -A, with the same READY / STATUS / RESTARTS.
  const fps = table(await must(['get', 'farmpods', '-A']));
  const pods = table(await must(['get', 'pods', '-A']));
  assert.deepEqual(Object.keys(fps[0]), ['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'LLAMA', 'AGE']);
  assert.deepEqual(fps.map((r) => `${r.NAMESPACE}/${r.NAME}`), pods.map((r) => `${r.NAMESPACE}/${r.NAME}`));
  assert.deepEqual(fps.map((r) => `${r.NAMESPACE}/${r.NAME}`), [`${NS2}/hay-1`, `${NS}/db-1`, `${NS}/web-1`]);
  for (const [i, p] of pods.entries()) {
    assert.deepEqual([fps[i].READY, fps[i].STATUS, fps[i].RESTARTS], [p.READY, p.STATUS, p.RESTARTS], `${p.NAME}: FarmPod cells vs kubectl get pods`);
  }
  const byName = Object.fromEntries(fps.map((r) => [r.NAME, r]));
  assert.deepEqual([byName['web-1'].READY, byName['web-1'].STATUS, byName['web-1'].RESTARTS, byName['web-1'].LLAMA], ['1/1', 'Running', '3 (5d ago)', 'dolly (brown, 120kg)']);
  assert.deepEqual([byName['db-1'].READY, byName['db-1'].STATUS, byName['db-1'].RESTARTS, byName['db-1'].LLAMA], ['0/1', 'Pending', '0', '<none>']);

  // -o wide: IP, NODE, QOS, OWNER, IMAGES.
  const wide = table(await must(['get', 'farmpods', '-A', '-o', 'wide']));
  assert.deepEqual(Object.keys(wide[0]), ['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'LLAMA', 'AGE', 'IP', 'NODE', 'QOS', 'OWNER', 'IMAGES']);
  const w: Record<string, string[]> = Object.fromEntries(wide.map((r) => [r.NAME, [r.IP, r.NODE, r.QOS, r.OWNER, r.IMAGES]]));
  assert.deepEqual(w, {
    'web-1': ['10.1.2.3', '<none>', 'BestEffort', 'ReplicaSet/web-rs', 'nginx:1.27'],
    'db-1': ['<none>', 'node-a', 'Guaranteed', '<none>', 'redis:7'],
    'hay-1': ['<none>', '<none>', 'Burstable', '<none>', 'busybox:1.36'],
  });
  const podsWide = Object.fromEntries(table(await must(['get', 'pods', '-A', '-o', 'wide'])).map((r) => [r.NAME, [r.IP, r.NODE]]));
  for (const [n, cells] of Object.entries(w)) assert.deepEqual(cells.slice(0, 2), podsWide[n], `${n}: IP and NODE as kubectl get pods -o wide`);

  // -o yaml: the fields, against the Pod itself.
  const fp = parseYaml(await must(['get', 'farmpod', 'web-1', '-n', NS, '-o', 'yaml']));
  const pod = JSON.parse(await must(['get', 'pod', 'web-1', '-n', NS, '-o', 'json']));
  assert.equal(fp.apiVersion, 'farm.example.com/v1alpha');
  assert.equal(fp.kind, 'FarmPod');
  // A FarmPod resourceVersion is "<pod>.<llama>" (docs/farmpods.md): at least as new as the Pod it shows.
  assert.match(fp.metadata.resourceVersion, /^\d+\.\d+$/);
  assert.ok(Number(fp.metadata.resourceVersion.split('.')[0]) >= Number(pod.metadata.resourceVersion), `${fp.metadata.resourceVersion} vs the Pod's ${pod.metadata.resourceVersion}`);
  assert.notEqual(fp.metadata.uid, pod.metadata.uid, 'a uid of its own');
  assert.equal(fp.metadata.uid, farmPodUid(pod.metadata.uid), 'derived from the Pod\'s uid (stable)');
  assert.equal(fp.metadata.creationTimestamp, pod.metadata.creationTimestamp);
  assert.deepEqual(fp.metadata.labels, { app: 'web', 'farm.example.com/llama': 'dolly' });
  assert.deepEqual(fp.spec, { containers: [{ name: 'c', image: 'nginx:1.27' }], controlledBy: { kind: 'ReplicaSet', name: 'web-rs' } });
  assert.deepEqual(fp.status, {
    phase: 'Running', status: 'Running', ready: '1/1', readyContainers: 1, totalContainers: 1, restarts: 3,
    lastRestartTime: FIVE_DAYS_AGO, podIP: '10.1.2.3', qosClass: 'BestEffort',
    llama: { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'brown' },
  });
  const db = JSON.parse(await must(['get', 'farmpod', 'db-1', '-n', NS, '-o', 'json']));
  assert.equal(db.spec.nodeName, 'node-a');
  assert.equal(db.status.phase, 'Pending');
  assert.equal(db.spec.controlledBy, undefined);

  // Short name and category.
  assert.deepEqual(names(await must(['get', 'fp', '-n', NS, '-o', 'name'])), ['farmpod.farm.example.com/db-1', 'farmpod.farm.example.com/web-1']);
  assert.deepEqual(names(await must(['get', 'farm', '-n', NS, '-o', 'name'])),
    ['farmpod.farm.example.com/db-1', 'farmpod.farm.example.com/web-1', 'llama.farm.example.com/dolly']);
}));

test('kubectl get farmpods -w shows ADDED/MODIFIED/DELETED within seconds of each Pod change; a raw watch through the aggregator gets the typed events', () => withLog(async () => {
  const kw = spawnKubectl(['get', 'farmpods', '-n', NS, '-w', '--output-watch-events']);
  try {
    await kw.lines.waitFor((l) => /^ADDED\s+web-1\s/.test(l), { what: 'the initial ADDED web-1', timeoutMs: 20_000 });
    await kw.lines.waitFor((l) => /^ADDED\s+db-1\s/.test(l), { what: 'the initial ADDED db-1' });
    assert.match(kw.lines.items[0].v, /^EVENT\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+LLAMA\s+AGE$/);
    const list = await call(viaAggregator('admin'), 'GET', `${GV}/namespaces/${NS}/farmpods`);
    assert.equal(list.status, 200, list.body);
    const raw = await rawWatch(viaAggregator('admin'), `${GV}/namespaces/${NS}/farmpods?watch=true&resourceVersion=${list.json().metadata.resourceVersion}`);
    assert.equal(raw.status, 200);
    try {
      const step = async (what: string, change: () => Promise<{ code: number; stderr: string }>, kubectlLine: RegExp, rawEvent: (e: WatchEvent) => boolean) => {
        const from = kw.lines.items.length;
        const rawFrom = raw.events.items.length;
        const t0 = Date.now();
        const r = await change();
        assert.equal(r.code, 0, r.stderr);
        const seen = await kw.lines.waitFor((l) => kubectlLine.test(l), { from, what: `${what} in kubectl -w`, timeoutMs: WAIT_MS });
        const seenRaw = await raw.events.waitFor(rawEvent, { from: rawFrom, what: `${what} in the raw watch`, timeoutMs: WAIT_MS });
        latencies.push({ what: `kubectl -w ${what}`, ms: seen.t - t0 }, { what: `raw watch ${what}`, ms: seenRaw.t - t0 });
        return seenRaw.v;
      };
      const isWeb2 = (type: string, more: (o: any) => boolean = () => true) => (e: WatchEvent) => e.type === type && e.object?.metadata?.name === 'web-2' && more(e.object);

      const added = await step('ADDED (create)', () => kubectl(['create', '-f', '-'], { input: podManifest('web-2', NS, { labels: { app: 'web' }, nodeName: 'node-b' }) }),
        /^ADDED\s+web-2\s+0\/1\s+Pending\s+0\s/, isWeb2('ADDED'));
      const running = await step('MODIFIED (status patched Running, ready, restarted)', () => patchStatus('web-2', NS, runningStatus({ restarts: 1, podIP: '10.1.2.4', image: 'nginx:1.27' })),
        /^MODIFIED\s+web-2\s+1\/1\s+Running\s+1 \(5d ago\)\s/, isWeb2('MODIFIED', (o) => o.status.status === 'Running'));
      // Bound to a node, so deletion is graceful: the kubelet would confirm it; until then, Terminating.
      const terminating = await step('MODIFIED (graceful delete → Terminating)', () => kubectl(['delete', 'pod', 'web-2', '-n', NS, '--wait=false']),
        /^MODIFIED\s+web-2\s+1\/1\s+Terminating\s/, isWeb2('MODIFIED', (o) => o.status.status === 'Terminating'));
      const deleted = await step('DELETED (force delete)', () => kubectl(['delete', 'pod', 'web-2', '-n', NS, '--grace-period=0', '--force']),
        /^DELETED\s+web-2\s/, isWeb2('DELETED'));

      for (const e of [added, running, terminating, deleted]) {
        assert.equal(e.object.kind, 'FarmPod');
        assert.equal(e.object.apiVersion, 'farm.example.com/v1alpha');
        assert.equal(e.object.metadata.namespace, NS);
      }
      assert.equal(added.object.spec.nodeName, 'node-b');
      assert.equal(running.object.status.podIP, '10.1.2.4');
      assert.equal(running.object.status.restarts, 1);
      assert.ok(terminating.object.metadata.deletionTimestamp, 'the Terminating FarmPod carries the deletionTimestamp');
      const rvs = [added, running, terminating, deleted].map((e) => e.object.metadata.resourceVersion.split('.').map(Number));
      for (let i = 1; i < rvs.length; i++) {
        assert.ok(rvs[i][0] > rvs[i - 1][0] && rvs[i][1] >= rvs[i - 1][1], `Pod-driven resourceVersions move the Pod coordinate: ${rvs.join(' ')}`);
      }
      // Only web-2 changed: the raw watch (from the list's RV) saw nothing else. A force delete of a
      // Pod already gracefully deleting is an update (deletionGracePeriodSeconds → 0), then the delete.
      assert.deepEqual(raw.events.items.map((i) => `${i.v.type} ${i.v.object.metadata.name}`),
        ['ADDED web-2', 'MODIFIED web-2', 'MODIFIED web-2', 'MODIFIED web-2', 'DELETED web-2']);
      assert.equal(await farmPod('web-2'), undefined, 'gone from the cache too');
    } finally {
      raw.close();
    }
  } finally {
    kw.stop();
  }
}));

test('field selectors spec.nodeName, status.phase, metadata.name and label selectors filter; an unsupported field selector is 400', () => withLog(async () => {
  const get = async (...args: string[]) => names(await must(['get', 'farmpods', '-A', '-o', 'name', ...args]));
  assert.deepEqual(await get('--field-selector', 'spec.nodeName=node-a'), ['farmpod.farm.example.com/db-1']);
  assert.deepEqual(await get('--field-selector', 'spec.nodeName='), ['farmpod.farm.example.com/hay-1', 'farmpod.farm.example.com/web-1'], 'not scheduled');
  assert.deepEqual(await get('--field-selector', 'status.phase=Running'), ['farmpod.farm.example.com/web-1']);
  assert.deepEqual(await get('--field-selector', 'status.phase!=Running'), ['farmpod.farm.example.com/db-1', 'farmpod.farm.example.com/hay-1']);
  assert.deepEqual(await get('--field-selector', 'metadata.name=hay-1'), ['farmpod.farm.example.com/hay-1']);
  assert.deepEqual(await get('--field-selector', `metadata.namespace=${NS},status.phase=Pending`), ['farmpod.farm.example.com/db-1']);
  assert.deepEqual(await get('-l', 'app=web'), ['farmpod.farm.example.com/hay-1', 'farmpod.farm.example.com/web-1']);
  assert.deepEqual(await get('-l', 'app in (db)'), ['farmpod.farm.example.com/db-1']);
  assert.deepEqual(await get('-l', 'farm.example.com/llama=dolly'), ['farmpod.farm.example.com/web-1']);
  assert.deepEqual(await get('-l', '!farm.example.com/llama'), ['farmpod.farm.example.com/db-1', 'farmpod.farm.example.com/hay-1']);
  assert.deepEqual(await get('-l', 'app=web', '--field-selector', 'status.phase=Pending'), ['farmpod.farm.example.com/hay-1']);

  // A watch honours the selector too (initial state only here: db-1 is the one Pod on node-a).
  const w = await rawWatch(viaAggregator('admin'), `${GV}/farmpods?watch=true&fieldSelector=${encodeURIComponent('spec.nodeName=node-a')}`);
  try {
    const first = await w.events.waitFor(() => true, { what: 'the first event of a selected watch' });
    assert.deepEqual([first.v.type, first.v.object.metadata.name], ['ADDED', 'db-1']);
    await sleep(300);
    assert.equal(w.events.items.length, 1);
  } finally { w.close(); }

  const bad = await kubectl(['get', 'farmpods', '-A', '--field-selector', 'spec.foo=bar']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /field label not supported: spec\.foo/);
  const raw = await call(viaAggregator('admin'), 'GET', `${GV}/farmpods?fieldSelector=${encodeURIComponent('spec.foo=bar')}`);
  assert.equal(raw.status, 400);
  assert.deepEqual([raw.json().kind, raw.json().reason, raw.json().message], ['Status', 'BadRequest', 'field label not supported: spec.foo']);
  const rawWatchBad = await call(viaAggregator('admin'), 'GET', `${GV}/farmpods?watch=true&fieldSelector=${encodeURIComponent('status.podIP=10.1.2.3')}`);
  assert.equal(rawWatchBad.status, 400, 'a watch with an unsupported field selector is refused up front');
}));

test('the llama summary follows relabelling and Llama edits (a watch sees MODIFIED); a missing llama is found=false', () => withLog(async () => {
  await must(['create', '-f', '-'], podManifest('shear-1', NS, { labels: { 'farm.example.com/llama': 'dolly' } }));
  await eventually('shear-1 with dolly', WAIT_MS, async () => (await farmPod('shear-1'))?.status?.llama?.found === true);
  const start = await farmPod('shear-1');
  assert.deepEqual(start.status.llama, { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'brown' });
  const w = await rawWatch(viaAggregator('admin'), `${GV}/namespaces/${NS}/farmpods?watch=true&resourceVersion=${start.metadata.resourceVersion}&fieldSelector=metadata.name%3Dshear-1`);
  try {
    const step = async (what: string, change: string[], input: string | undefined, pred: (llama: any) => boolean) => {
      const from = w.events.items.length;
      const t0 = Date.now();
      const r = await kubectl(change, { input });
      assert.equal(r.code, 0, r.stderr);
      const e = await w.events.waitFor((ev) => ev.type === 'MODIFIED' && pred(ev.object.status.llama), { from, what, timeoutMs: WAIT_MS });
      latencies.push({ what: `raw watch MODIFIED after ${what}`, ms: e.t - t0 });
      return e.v.object;
    };
    // Relabel the Pod to a llama that does not exist (yet).
    const relabelled = await step('relabel to molly (missing)', ['label', 'pod', 'shear-1', '-n', NS, 'farm.example.com/llama=molly', '--overwrite'], undefined,
      (l) => l?.name === 'molly');
    assert.deepEqual(relabelled.status.llama, { name: 'molly', found: false });
    assert.equal(table(await must(['get', 'fp', 'shear-1', '-n', NS]))[0].LLAMA, 'molly (missing)');

    const molly = JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'molly', namespace: NS }, spec: { weight: 95, height: 1.6, color: 'grey' } });
    const created = await step('llama molly created', ['create', '-f', '-'], molly, (l) => l?.found === true);
    assert.deepEqual(created.status.llama, { name: 'molly', found: true, weight: 95, height: 1.6, color: 'grey' });
    const mollyRV = JSON.parse(await must(['get', 'llama', 'molly', '-n', NS, '-o', 'json'])).metadata.resourceVersion;
    assert.equal(created.metadata.resourceVersion.split('.')[1], mollyRV, 'a Llama-driven change is at the Llama\'s resourceVersion');
    assert.notEqual(created.metadata.resourceVersion, relabelled.metadata.resourceVersion);

    const recolored = await step('llama molly patched to black', ['patch', 'llama', 'molly', '-n', NS, '--type=merge', '-p', '{"spec":{"color":"black"}}'], undefined,
      (l) => l?.color === 'black');
    assert.deepEqual(recolored.status.llama, { name: 'molly', found: true, weight: 95, height: 1.6, color: 'black' });
    assert.equal(await must(['get', 'fp', 'shear-1', '-n', NS, '-o', 'jsonpath={.status.llama.color}']), 'black');

    // The old llama no longer matters to shear-1, but still to web-1.
    const before = w.events.items.length;
    await must(['patch', 'llama', 'dolly', '-n', NS, '--type=merge', '-p', '{"spec":{"color":"spotted"}}']);
    await eventually('web-1 sees dolly spotted', WAIT_MS, async () => (await farmPod('web-1'))?.status?.llama?.color === 'spotted');
    await sleep(300);
    assert.equal(w.events.items.length, before, `no event for shear-1 from its former llama: ${w.events.dump()}`);

    const gone = await step('llama molly deleted', ['delete', 'llama', 'molly', '-n', NS], undefined, (l) => l?.found === false);
    assert.deepEqual(gone.status.llama, { name: 'molly', found: false });
    assert.equal((await farmPod('shear-1')).status.llama.found, false);

    // Relabelled to another, existing llama: its summary at once.
    const back = await step('relabel back to dolly', ['label', 'pod', 'shear-1', '-n', NS, 'farm.example.com/llama=dolly', '--overwrite'], undefined,
      (l) => l?.name === 'dolly');
    assert.deepEqual(back.status.llama, { name: 'dolly', found: true, weight: 120, height: 1.7, color: 'spotted' });
  } finally { w.close(); }
}));

test('a user allowed farmpods but not pods gets 403 naming the pods permission (no pod names); granting pods list lets the same request through', () => withLog(async () => {
  await must(['create', 'role', 'farmpods-reader', '-n', NS, '--verb=get,list,watch', '--resource=farmpods.farm.example.com']);
  await must(['create', 'rolebinding', 'alice-farmpods', '-n', NS, '--role=farmpods-reader', '--user=alice']);
  const podNames = ['web-1', 'db-1', 'shear-1', 'hay-1'];

  const denied = await kubectl(['get', 'farmpods', '-n', NS], { user: 'alice' });
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr, /pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "pasture"/);
  assert.match(denied.stderr, /list on farmpods also needs list on pods/);
  for (const n of podNames) assert.equal(denied.stderr.includes(n) || denied.stdout.includes(n), false, `${n} leaked: ${denied.stderr}`);

  const raw = await call(viaAggregator('alice'), 'GET', `${GV}/namespaces/${NS}/farmpods`);
  assert.equal(raw.status, 403);
  const st = raw.json();
  assert.deepEqual([st.kind, st.reason, st.code, st.details?.kind, st.details?.group], ['Status', 'Forbidden', 403, 'pods', '']);
  for (const n of podNames) assert.equal(raw.body.includes(n), false, `${n} leaked: ${raw.body}`);

  const rawWatchDenied = await call(viaAggregator('alice'), 'GET', `${GV}/namespaces/${NS}/farmpods?watch=true`);
  assert.equal(rawWatchDenied.status, 403);
  assert.match(rawWatchDenied.json().message, /cannot watch resource "pods".*watch on farmpods also needs watch on pods/);

  const getDenied = await kubectl(['get', 'farmpod', 'web-1', '-n', NS], { user: 'alice' });
  assert.match(getDenied.stderr, /pods "web-1" is forbidden: User "alice" cannot get resource "pods"/);
  assert.equal(getDenied.stderr.includes('db-1'), false);

  const otherNs = await kubectl(['get', 'farmpods', '-n', NS2], { user: 'alice' });
  assert.match(otherNs.stderr, /farmpods\.farm\.example\.com is forbidden: User "alice" cannot list resource "farmpods" in API group "farm\.example\.com" in the namespace "barn"/,
    'without farmpods itself, the farmpods permission is what is missing');

  await must(['create', 'role', 'pods-lister', '-n', NS, '--verb=list', '--resource=pods']);
  await must(['create', 'rolebinding', 'alice-pods', '-n', NS, '--role=pods-lister', '--user=alice']);
  const t0 = Date.now();
  const ok = await eventually('alice lists farmpods once pods list is granted (SubjectAccessReview decisions are cached 10 s)', 15_000, async () => {
    const r = await kubectl(['get', 'farmpods', '-n', NS], { user: 'alice' });
    return r.code === 0 ? r.stdout : undefined;
  }, 500);
  console.log(`alice allowed ${Date.now() - t0} ms after the grant`);
  assert.deepEqual(table(ok).map((r) => r.NAME), ['db-1', 'shear-1', 'web-1']);
  const stillNoGet = await kubectl(['get', 'farmpod', 'web-1', '-n', NS], { user: 'alice' });
  assert.match(stillNoGet.stderr, /cannot get resource "pods"/, 'list on pods does not grant get');
}));

test('list, edit a Llama, edit a Pod, then watch from the list\'s resourceVersion: both changes exactly once, in order; a malformed RV is 400', () => withLog(async () => {
  await must(['create', '-f', '-'], podManifest('rv-1', NS, { labels: { 'farm.example.com/llama': 'dolly' } }));
  await eventually('rv-1 with dolly', WAIT_MS, async () => (await farmPod('rv-1'))?.status?.llama?.found === true);
  const list = await call(viaAggregator('admin'), 'GET', `${GV}/namespaces/${NS}/farmpods?fieldSelector=metadata.name%3Drv-1`);
  assert.equal(list.status, 200, list.body);
  const listRV: string = list.json().metadata.resourceVersion;
  assert.match(listRV, /^\d+\.\d+$/);
  await must(['patch', 'llama', 'dolly', '-n', NS, '--type=merge', '-p', '{"spec":{"weight":121}}']);
  await eventually('rv-1 sees weight 121', WAIT_MS, async () => (await farmPod('rv-1'))?.status?.llama?.weight === 121);
  await must(['label', 'pod', 'rv-1', '-n', NS, 'tick=1']);
  await eventually('rv-1 relabelled', WAIT_MS, async () => (await farmPod('rv-1'))?.metadata?.labels?.tick === '1');
  const w = await rawWatch(viaAggregator('admin'), `${GV}/namespaces/${NS}/farmpods?watch=true&resourceVersion=${listRV}&fieldSelector=metadata.name%3Drv-1`);
  try {
    assert.equal(w.status, 200);
    await w.events.waitFor((e) => e.type === 'MODIFIED' && e.object.metadata.labels?.tick === '1', { what: 'the Pod-driven change', timeoutMs: WAIT_MS });
    await sleep(300);
    const seen = w.events.items.map((i) => `${i.v.type} ${i.v.object.status.llama.weight} ${i.v.object.metadata.labels?.tick ?? '-'}`);
    assert.deepEqual(seen, ['MODIFIED 121 -', 'MODIFIED 121 1'], w.events.dump());
    // Resuming from the first event's RV (an informer that saw it) gives exactly the second.
    const first: string = w.events.items[0].v.object.metadata.resourceVersion;
    const resumed = await rawWatch(viaAggregator('admin'), `${GV}/namespaces/${NS}/farmpods?watch=true&resourceVersion=${first}&fieldSelector=metadata.name%3Drv-1`);
    try {
      await resumed.events.waitFor(() => true, { what: 'the resumed event', timeoutMs: WAIT_MS });
      await sleep(300);
      assert.deepEqual(resumed.events.items.map((i) => i.v.object.metadata.resourceVersion), [w.events.items[1].v.object.metadata.resourceVersion]);
    } finally { resumed.close(); }
  } finally { w.close(); }
  const bad = await call(viaAggregator('admin'), 'GET', `${GV}/namespaces/${NS}/farmpods?resourceVersion=1.x`);
  assert.equal(bad.status, 400, bad.body);
  assert.equal(bad.json().message, 'invalid resource version: "1.x"');
  await must(['delete', 'pod', 'rv-1', '-n', NS, '--grace-period=0', '--force']);
}));

test('a watch from a resourceVersion older than the cache\'s history gets an ERROR event: 410 Expired', () => withLog(async () => {
  const w = await rawWatch(viaAggregator('admin'), `${GV}/namespaces/${NS}/farmpods?watch=true&resourceVersion=1`);
  assert.equal(w.status, 200);
  const e = await w.events.waitFor(() => true, { what: 'the ERROR event' });
  assert.equal(e.v.type, 'ERROR');
  assert.deepEqual([e.v.object.kind, e.v.object.code, e.v.object.reason], ['Status', 410, 'Expired']);
  assert.match(e.v.object.message, /^too old resource version: 1 \(\d+\.\d+\)$/);
  assert.equal(await w.events.whenEnded(5000), true, 'the stream ends after the ERROR event');
  assert.equal(w.events.items.length, 1, w.events.dump());
}));

test('/metrics: no upstream call for 50 FarmPod list/get/watch requests; served requests counted; /metrics itself authorized by SubjectAccessReview', () => withLog(async () => {
  const m0 = await scrape();
  const up0 = samples(m0, 'farm_upstream_requests_total');
  assert.ok((up0.get('{purpose="pods"}') ?? 0) >= 2, `the pods list+watch are counted: ${[...up0]}`);
  const http = (text: string, verb: string) => samples(text, 'farm_http_requests_total').get(`{verb="${verb}",resource="farmpods",code="200"}`) ?? 0;

  const rv = (await call(direct(), 'GET', `${GV}/farmpods`)).json().metadata.resourceVersion;
  const lists = [`${GV}/farmpods`, `${GV}/namespaces/${NS}/farmpods`, `${GV}/farmpods?labelSelector=app%3Dweb`, `${GV}/farmpods?fieldSelector=status.phase%3DRunning`, `${GV}/namespaces/${NS}/farmpods?limit=1`];
  const gets = [`${GV}/namespaces/${NS}/farmpods/web-1`, `${GV}/namespaces/${NS}/farmpods/db-1`, `${GV}/namespaces/${NS2}/farmpods/hay-1`, `${GV}/namespaces/${NS}/farmpods/shear-1`];
  const requests: string[] = [];
  for (let i = 0; i < 20; i++) requests.push(lists[i % lists.length]);
  for (let i = 0; i < 20; i++) requests.push(gets[i % gets.length]);
  for (let i = 0; i < 10; i++) requests.push(`${GV}/namespaces/${NS}/farmpods?watch=true&resourceVersion=${rv}&timeoutSeconds=1`);
  const results = await Promise.all(requests.map((p) => call(direct(), 'GET', p)));
  for (const [i, r] of results.entries()) assert.equal(r.status, 200, `${requests[i]}: ${r.body}`);
  // Tables too (what kubectl asks for), through the aggregator as admin.
  for (let i = 0; i < 5; i++) await must(['get', 'fp', '-A']);

  const m1 = await scrape();
  assert.deepEqual([...samples(m1, 'farm_upstream_requests_total')], [...up0], 'FarmPod requests make no calls to kube-apiserver');
  assert.ok(http(m1, 'list') - http(m0, 'list') >= 25, 'lists counted');
  assert.equal(http(m1, 'get') - http(m0, 'get'), 20, 'gets counted');
  assert.equal(http(m1, 'watch') - http(m0, 'watch'), 10, 'watches counted');
  assert.match(m1, /^process_start_time_seconds \d+/m, 'default Node/process metrics');

  // /metrics is a non-resource path: anyone but system:masters needs a SubjectAccessReview that allows get on it.
  const bob = await call(direct('bob', ['system:authenticated']), 'GET', '/metrics');
  assert.equal(bob.status, 403);
  assert.equal(bob.json().message, 'forbidden: User "bob" cannot get path "/metrics"');
  await must(['create', 'clusterrole', 'farm-metrics-reader', '--verb=get', '--non-resource-url=/metrics']);
  await must(['create', 'clusterrolebinding', 'carol-metrics', '--clusterrole=farm-metrics-reader', '--user=carol']);
  const carol = await eventually('carol allowed /metrics', 10_000, async () => {
    const r = await call(direct('carol', ['system:authenticated']), 'GET', '/metrics');
    return r.status === 200 ? r : undefined;
  });
  assert.equal(carol.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  const up2 = samples(carol.body, 'farm_upstream_requests_total');
  assert.ok((up2.get('{purpose="subjectaccessreview"}') ?? 0) >= (up0.get('{purpose="subjectaccessreview"}') ?? 0) + 2, 'bob\'s and carol\'s reviews were asked of kube-apiserver');
  const via = await kubectl(['get', '--raw', '/metrics']);
  assert.equal(via.code, 0);
  assert.equal(via.stdout.includes('farm_upstream_requests_total'), false, 'kubectl get --raw /metrics is kube-apiserver\'s own, not ours');
}));

test('kube-apiserver stops and starts again: /readyz and FarmPod requests say why (503) meanwhile; the cache recovers without restarting our server', () => withLog(async () => {
  const startTime = samples(await scrape(), 'process_start_time_seconds').get('');
  assert.ok(startTime);
  let readyzFailure: string | undefined;
  let unavailable: any;
  let restarted = false;
  const t0 = Date.now();
  const restart = cluster.cp.restartApiserver().then(() => { restarted = true; console.log(`kube-apiserver restarted after ${Date.now() - t0} ms`); });
  try {
    while (!(readyzFailure && unavailable)) {
      const [rz, list] = await Promise.all([
        call(anonymousDirect(), 'GET', '/readyz?verbose', { timeoutMs: 3000 }).catch(() => undefined),
        call(direct(), 'GET', `${GV}/namespaces/${NS}/farmpods`, { timeoutMs: 3000 }).catch(() => undefined),
      ]);
      if (rz?.status === 500 && /\[-\]farmpod-cache failed/.test(rz.body) && !readyzFailure) {
        readyzFailure = rz.body;
        console.log(`/readyz failing ${Date.now() - t0} ms after the stop began:\n${rz.body}`);
      }
      if (list?.status === 503 && !unavailable) unavailable = list.json();
      if (restarted && Date.now() - t0 > 60_000) break;
      await sleep(100);
    }
  } finally {
    await restart;
  }
  assert.ok(readyzFailure, 'our /readyz reported the farmpod cache failing while kube-apiserver was away');
  assert.match(readyzFailure, /^\[-\]farmpod-cache failed: not synced with kube-apiserver: .+$/m);
  assert.match(readyzFailure, /readyz check failed/);
  assert.ok(unavailable, 'a FarmPod request got 503 while kube-apiserver was away');
  assert.deepEqual([unavailable.kind, unavailable.code, unavailable.reason], ['Status', 503, 'ServiceUnavailable']);
  assert.match(unavailable.message, /^the FarmPod cache is not synced with kube-apiserver: .+/);

  const t1 = Date.now();
  await eventually('our /readyz passing again', 60_000, async () => (await call(anonymousDirect(), 'GET', '/readyz', { timeoutMs: 3000 })).status === 200);
  const back = await eventually('FarmPods served again', 10_000, async () => {
    const r = await call(direct(), 'GET', `${GV}/namespaces/${NS}/farmpods`);
    return r.status === 200 ? r.json() : undefined;
  });
  console.log(`recovered ${Date.now() - t1} ms after kube-apiserver was ready again`);
  assert.deepEqual(back.items.map((i: any) => i.metadata.name), ['db-1', 'shear-1', 'web-1']);

  // Live again: a Pod change made now shows up.
  await must(['label', 'pod', 'web-1', '-n', NS, 'survived=restart']);
  await eventually('the label on web-1', WAIT_MS, async () => (await farmPod('web-1'))?.metadata?.labels?.survived === 'restart');
  const viaKubectl = await eventually('kubectl through the aggregator again', 60_000, async () => {
    const r = await kubectl(['get', 'fp', '-n', NS, '-l', 'survived=restart', '-o', 'name']);
    return r.code === 0 && r.stdout.trim() !== '' ? r.stdout : undefined;
  }, 500);
  assert.equal(viaKubectl.trim(), 'farmpod.farm.example.com/web-1');
  assert.equal(samples(await scrape(), 'process_start_time_seconds').get(''), startTime, 'the same farm-apiserver process throughout');
}));

test('standalone with --kubeconfig serves FarmPods too: same Pods, token auth, no delegation', async () => {
  const srv = await startFarmServer({ extraArgs: ['--standalone', '--kubeconfig', join(clusterDir, 'farm-apiserver-sa.kubeconfig')] });
  try {
    const resources = await srv.kubectl(['api-resources', '--api-group=farm.example.com', '--no-headers']);
    assert.equal(resources.code, 0, resources.stderr);
    assert.match(resources.stdout, /^farmpods\s+fp\s+farm\.example\.com\/v1alpha\s+true\s+FarmPod$/m);
    const strip = (out: string) => names(out).map((n) => n.slice(n.indexOf('/') + 1));
    const pods = strip(await must(['get', 'pods', '-A', '-o', 'name']));
    const fps = await srv.kubectl(['get', 'farmpods', '-A', '-o', 'name']);
    assert.equal(fps.code, 0, fps.stderr);
    assert.ok(pods.length > 0, 'the earlier tests left Pods to compare');
    assert.deepEqual(strip(fps.stdout), pods);
  } finally {
    await srv.cleanup();
  }
});

test('the Pod reflector pages through a real kube-apiserver list (continue tokens) and then follows its watch', async () => {
  const upstream = await Upstream.load({ kubeconfig: cluster.cp.adminKubeconfig, inCluster: false });
  const seen = new Map<string, string>();
  const events: string[] = [];
  const quiet = pino({ level: 'silent' });
  const r = new Reflector(upstream, { purpose: 'paging-test', path: '/api/v1/pods', log: quiet, pageSize: 2 }, {
    replace: (items) => { seen.clear(); for (const p of items) seen.set(`${p.metadata?.namespace}/${p.metadata?.name}`, p.metadata?.resourceVersion ?? ''); },
    event: (type, p) => events.push(`${type} ${p.metadata?.namespace}/${p.metadata?.name}`),
  });
  r.start();
  try {
    await r.waitForSync();
    const expected = names(await must(['get', 'pods', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}']));
    assert.ok(expected.length >= 3, 'needs more Pods than one page holds');
    assert.deepEqual([...seen.keys()].sort(), expected);
    assert.ok((upstream.calls.get('paging-test') ?? 0) >= Math.ceil(expected.length / 2), 'the list was not paged');
    await must(['-n', NS, 'run', 'paged-watch', '--image=nginx', '--restart=Never']);
    const deadline = Date.now() + WAIT_MS;
    while (!events.includes(`ADDED ${NS}/paged-watch`) && Date.now() < deadline) await sleep(100);
    assert.ok(events.includes(`ADDED ${NS}/paged-watch`), `the watch after the paged list missed the new Pod: ${events.join(', ')}`);
  } finally {
    r.stop();
    await kubectl(['-n', NS, 'delete', 'pod', 'paged-watch', '--grace-period=0', '--force']);
  }
});
