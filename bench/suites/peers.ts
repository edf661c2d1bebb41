// Peer benchmark: farm-apiserver against kubernetes/sample-apiserver (the Go aggregated-server
// template), both registered behind the same real kube-apiserver aggregator. `--only peers`; not in
// the default set (it needs the control plane and takes ~6 min). See docs/benchmarks.md.
//
// One load generator (bench/procs/loadgen.ts), interleaved rounds (ours, peer, peer, ours, …),
// ratios ours ÷ sample-apiserver, server CPU per request read from /proc for both. Servers are pinned
// to one core (taskset; GOMAXPROCS=1 for Go), sample-apiserver's etcd on that same core; the load
// generator, watch clients, kube-apiserver and the cluster's etcd on the other.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFarmCluster, type FarmCluster } from '../../test/cluster/farmCluster.js';
import { Child, freePort, median, nowMs, percentile, REPO_DIR, sleep } from '../lib/common.js';
import { findPid, pin, procCpuMs, procRssBytes } from '../peers/procStat.js';
import { ensurePeerBinaries, registrationYaml, startEtcd, startSample, statusWithCert, WARDLE, writeServingCert, type Spawned } from '../peers/sampleApiserver.js';
import type { RunArgs, RunResult } from '../procs/loadgen.js';
import type { Ctx, Row, SuiteResult } from './types.js';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const PIN = cpus().length >= 2;
const SERVER_CPU = '1';
const CLIENT_CPU = '0';

type Who = 'ours' | 'peer';

/** One server under test: where it listens, how to reach it, which processes' CPU it costs. */
interface Server {
  who: Who; label: string; port: number; caFile: string; pid: number;
  /** Other processes the request costs (sample-apiserver's etcd), reported separately. */
  helperPids: number[];
  /** Path of the collection in namespace `ns`. */
  coll(ns: string): string;
  /** An object's JSON (loadgen templates allowed) with this metadata, in namespace `ns`. */
  body(ns: string, meta: Record<string, unknown>): string;
  created: number;
}

interface Auth { name: string; via: 'direct' | 'aggregator'; headers: Record<string, string>; certFile?: string; keyFile?: string }

interface Measured extends RunResult { serverCpuUsPerRequest: number; helperCpuUsPerRequest: number; proxyCpuUsPerRequest: number }

const labels = { 'app.kubernetes.io/name': 'bench', herd: 'herd-7' };

function llamaJson(ns: string, meta: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
    metadata: { ...meta, namespace: ns, labels: { ...labels, ...(meta.labels as object) }, annotations: { 'farm.example.com/notes': 'object number {{seq}}' } },
    spec: { weight: 120, height: 1.7, color: 'brown', favoriteFood: 'hay' },
  });
}

function flunderJson(ns: string, meta: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: `${WARDLE.group}/${WARDLE.version}`, kind: 'Flunder',
    metadata: { ...meta, namespace: ns, labels: { ...labels, ...(meta.labels as object) }, annotations: { 'farm.example.com/notes': 'object number {{seq}}' } },
    spec: { reference: 'flunder-ref', referenceType: 'Flunder' },
  });
}

/**
 * A POST body with a new name per request ({{seq}} is unique in the load generator's process). Not
 * generateName: its 5 random characters collide within a few thousand objects, and our server
 * answers 409 where k8s.io/apiserver retries up to 8 names (store.go createWithGenerateNameRetry).
 */
const createBody = (s: Server, ns: string) => s.body(ns, { name: 'c-{{seq}}' });
/** A body outside the load generator: no templates left. */
const fixed = (body: string) => body.replaceAll('{{seq}}', '0');

/** A one-off HTTPS request (setup, the watch writer). */
function call(port: number, caFile: string, method: string, path: string, o: { headers?: Record<string, string>; body?: string; cert?: string; key?: string; agent?: Agent } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, method, path, servername: 'localhost', agent: o.agent ?? false, timeout: 30_000,
      ca: readFileSync(caFile), cert: o.cert ? readFileSync(o.cert) : undefined, key: o.key ? readFileSync(o.key) : undefined,
      headers: { accept: 'application/json', ...(o.body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(o.body) } : {}), ...o.headers },
    }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.on('error', reject);
    req.end(o.body);
  });
}

export async function peersSuite(ctx: Ctx): Promise<SuiteResult> {
  const q = ctx.quick;
  const cfg = {
    rounds: q ? 2 : 4, warmupMs: q ? 200 : 250, durationMs: q ? 600 : 800,
    listAuths: q ? ['ServiceAccount token', 'through the aggregator'] : undefined,
    watchers: q ? 50 : 200, watchSegments: q ? 2 : 4, writesPerSegment: q ? 10 : 25, watchRate: 10,
    fillTo: q ? 10_000 : 100_000, starts: q ? 1 : 3,
  };
  const rows: Row[] = [];
  const failures: string[] = [];
  const detail: Record<string, unknown> = { config: cfg, pinned: PIN ? `servers (and sample-apiserver's etcd) on CPU ${SERVER_CPU}, clients/kube-apiserver/cluster etcd on CPU ${CLIENT_CPU}; GOMAXPROCS=1` : 'not pinned (fewer than 2 CPUs)', failures };
  const dir = mkdtempSync(join(tmpdir(), 'farm-peers-'));
  const log = (m: string) => ctx.log(`  ${m}`);

  const sampleBinDir = await ensurePeerBinaries(log);
  const oursMain = compiledMain(log); // before anything runs: tsc takes a core for ~20 s
  let fc: FarmCluster | undefined;
  const spawned: Spawned[] = [];
  const children: Child[] = [];
  try {
    fc = await startFarmCluster({ dir: join(dir, 'cluster'), log });
    const cp = fc.cp;
    const kubectl = async (args: string[], input?: string) => {
      const r = await fc!.kubectl(args, { input });
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const oursPid = findPid([join(REPO_DIR, 'src/main.ts'), String(fc.farmPort)]);
    const cpPids = readFileSync(join(cp.dir, 'pids'), 'utf8').split('\n').filter(Boolean).map(Number);
    const apiPort = Number(new URL(cp.apiserverUrl).port);
    const kubeApiserverPid = findPid([join(cp.binDir, 'kube-apiserver'), `--secure-port=${apiPort}`]);

    // Namespaces exist in kube-apiserver (sample-apiserver's NamespaceLifecycle admission checks them);
    // a ServiceAccount bound to cluster-admin gives the token (not system:masters: both servers run TokenReview + SAR, cached 10 s).
    const namespaces = ['bench-one', 'bench-list', 'bench-write', 'bench-watch', 'bench-fill'];
    await kubectl(['apply', '-f', '-'], [
      ...namespaces.map((n) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${n}\n`),
      'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: bench\n  namespace: default\n',
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: bench-cluster-admin\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: bench\n  namespace: default\n',
    ].join('---\n'));
    const token = (await kubectl(['-n', 'default', 'create', 'token', 'bench', '--duration=2h'])).trim();

    // sample-apiserver: its own etcd, same core, GOMAXPROCS=1.
    const serving = await writeServingCert(join(dir, 'sample-certs'));
    const { etcd: sampleEtcd, url: sampleEtcdUrl } = await startEtcd(join(cp.binDir, 'etcd'), join(dir, 'sample-etcd'), PIN ? SERVER_CPU : undefined);
    spawned.push(sampleEtcd);
    const admin = cp.clientCert('admin');
    const sampleOpts = { bin: join(sampleBinDir, 'sample-apiserver'), dir: join(dir, 'sample'), etcdUrl: sampleEtcdUrl, kubeconfig: cp.adminKubeconfig, serving, cpus: PIN ? SERVER_CPU : undefined, gomaxprocs: 1 };
    const sample = await startSample(sampleOpts, admin);
    spawned.push(sample.server);
    log(`sample-apiserver ready on https://127.0.0.1:${sample.port} in ${sample.readyMs.toFixed(0)} ms (etcd ${sampleEtcdUrl})`);
    await kubectl(['apply', '-f', '-'], registrationYaml(sample.port, serving.ca));
    await kubectl(['wait', '--for=condition=Available', `apiservice/${WARDLE.version}.${WARDLE.group}`, '--timeout=120s']);
    log(`APIService ${WARDLE.version}.${WARDLE.group} is Available`);

    const pinned: string[] = [];
    if (PIN) {
      if (pin(oursPid, SERVER_CPU)) pinned.push(`ours ${oursPid}`);
      for (const p of cpPids) if (pin(p, CLIENT_CPU)) pinned.push(`control plane ${p}`);
    }
    const lg = await Child.start('procs/loadgen.ts');
    children.push(lg);
    if (PIN) pin(lg.proc.pid!, CLIENT_CPU);
    detail.pids = { ours: oursPid, sample: sample.server.pid, sampleEtcd: sampleEtcd.pid, kubeApiserver: kubeApiserverPid, pinned };

    const ours: Server = {
      who: 'ours', label: 'farm-apiserver', port: fc.farmPort, caFile: join(fc.farmCertDir, 'ca.crt'), pid: oursPid, helperPids: [],
      coll: (ns) => `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`,
      body: llamaJson,
      created: 0,
    };
    const peer: Server = {
      who: 'peer', label: 'sample-apiserver', port: sample.port, caFile: serving.ca, pid: sample.server.pid, helperPids: [sampleEtcd.pid],
      coll: (ns) => `/apis/${WARDLE.group}/${WARDLE.version}/namespaces/${ns}/flunders`,
      body: flunderJson,
      created: 0,
    };
    const servers = [ours, peer];
    const bearer = { authorization: `Bearer ${token}` };
    const auths: Auth[] = [
      { name: 'ServiceAccount token', via: 'direct', headers: bearer },
      { name: 'admin client certificate', via: 'direct', headers: {}, certFile: admin.cert, keyFile: admin.key },
      { name: 'front-proxy certificate + X-Remote-*', via: 'direct', headers: { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' }, certFile: cp.frontProxy.clientCert, keyFile: cp.frontProxy.clientKey },
      { name: 'through the aggregator', via: 'aggregator', headers: {}, certFile: admin.cert, keyFile: admin.key },
    ];
    const runArgs = (s: Server, a: Auth, path: string, extra: Partial<RunArgs>): RunArgs => ({
      port: a.via === 'aggregator' ? apiPort : s.port, caFile: a.via === 'aggregator' ? cp.clusterCa : s.caFile,
      path, headers: { 'user-agent': 'farm-bench', accept: 'application/json', ...a.headers }, certFile: a.certFile, keyFile: a.keyFile,
      connections: 16, warmupMs: cfg.warmupMs, durationMs: cfg.durationMs, ...extra,
    });

    const measure = async (s: Server, args: RunArgs, proxied: boolean): Promise<Measured> => {
      const c0 = procCpuMs(s.pid);
      const h0 = s.helperPids.reduce((a, p) => a + procCpuMs(p), 0);
      const k0 = procCpuMs(kubeApiserverPid);
      const r = await lg.call<RunResult>('run', { ...args });
      const c1 = procCpuMs(s.pid);
      const h1 = s.helperPids.reduce((a, p) => a + procCpuMs(p), 0);
      const k1 = procCpuMs(kubeApiserverPid);
      if (r.errors) throw new Error(`${s.label} ${args.method ?? 'GET'} ${args.path}: ${r.errors} errors, first: ${r.firstError}`);
      const per = (ms: number) => (1000 * ms) / r.totalRequests;
      return { ...r, serverCpuUsPerRequest: per(c1 - c0), helperCpuUsPerRequest: per(h1 - h0), proxyCpuUsPerRequest: proxied ? per(k1 - k0) : 0 };
    };

    /** Untimed warm-up of each, then `rounds` rounds in ABBA order; per-round ratios, medians. */
    const compare = async (bench: string, mk: (s: Server) => RunArgs, proxied: boolean, created = false) => {
      for (const s of servers) await measure(s, { ...mk(s), warmupMs: 0, durationMs: cfg.warmupMs * 2 }, proxied).then((m) => { if (created) s.created += m.totalRequests; });
      const got: Record<Who, Measured[]> = { ours: [], peer: [] };
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      for (let r = 0; r < cfg.rounds; r++) {
        for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
          const m = await measure(s, mk(s), proxied);
          if (created) s.created += m.totalRequests;
          got[s.who].push(m);
        }
        const [o, p] = [got.ours[r], got.peer[r]];
        ratios.push(o.rps / p.rps);
        cpuRatios.push(o.serverCpuUsPerRequest / p.serverCpuUsPerRequest);
        log(`${bench} round ${r + 1}: ${o.rps.toFixed(0)} vs ${p.rps.toFixed(0)} req/s, server CPU ${o.serverCpuUsPerRequest.toFixed(0)} vs ${p.serverCpuUsPerRequest.toFixed(0)} µs/req (+ etcd ${p.helperCpuUsPerRequest.toFixed(0)})`);
      }
      const med = (who: Who, f: (m: Measured) => number) => median(got[who].map(f));
      const proxyNote = proxied ? `; kube-apiserver CPU ${med('ours', (m) => m.proxyCpuUsPerRequest).toFixed(0)} vs ${med('peer', (m) => m.proxyCpuUsPerRequest).toFixed(0)} µs/req` : '';
      rows.push({
        bench, metric: 'requests/s', unit: 'req/s', ours: med('ours', (m) => m.rps), peer: med('peer', (m) => m.rps), ratio: median(ratios),
        reading: 'ours/sample-apiserver; > 1 = ours faster',
        note: `${got.ours[0].responseBytes} vs ${got.peer[0].responseBytes} B/response, ${mk(ours).connections} conns; p50 ${med('ours', (m) => m.latencyMs.p50).toFixed(2)} vs ${med('peer', (m) => m.latencyMs.p50).toFixed(2)} ms`,
      });
      rows.push({
        bench, metric: 'server CPU per request', unit: 'µs', ours: med('ours', (m) => m.serverCpuUsPerRequest), peer: med('peer', (m) => m.serverCpuUsPerRequest), ratio: median(cpuRatios),
        reading: 'ours/sample-apiserver (Go process only); < 1 = ours cheaper',
        note: `sample-apiserver's etcd adds ${med('peer', (m) => m.helperCpuUsPerRequest).toFixed(0)} µs/req${proxyNote}`,
      });
      detail[bench] = { ours: got.ours, peer: got.peer, ratios, cpuRatios };
    };

    // ---- seed: 1 object in bench-one, 1,000 in bench-list, put-0…15 in bench-write (for the PUTs)
    for (const s of servers) {
      const tokenAuth = auths[0];
      const one = await call(s.port, s.caFile, 'POST', s.coll('bench-one'), { headers: bearer, body: fixed(s.body('bench-one', { name: 'one' })) });
      if (one.status !== 201) throw new Error(`${s.label}: create one: ${one.status} ${one.body.slice(0, 300)}`);
      for (let i = 0; i < 16; i++) {
        const r = await call(s.port, s.caFile, 'POST', s.coll('bench-write'), { headers: bearer, body: fixed(s.body('bench-write', { name: `put-${i}` })) });
        if (r.status !== 201) throw new Error(`${s.label}: create put-${i}: ${r.status} ${r.body.slice(0, 300)}`);
      }
      const t0 = nowMs();
      const m = await measure(s, runArgs(s, tokenAuth, s.coll('bench-list'), { method: 'POST', body: createBody(s, 'bench-list'), headers: { ...bearer, 'content-type': 'application/json', accept: 'application/json' }, expectStatus: [201], sameSize: false, maxRequests: 1000, warmupMs: 0, durationMs: 120_000 }), false);
      s.created += 17 + m.totalRequests;
      log(`${s.label}: seeded 1,000 in bench-list in ${((nowMs() - t0) / 1000).toFixed(1)} s`);
    }
    const oneName = (s: Server) => `${s.coll('bench-one')}/one`;

    // ---- reads
    for (const a of auths) await compare(`GET one, ${a.name}`, (s) => runArgs(s, a, oneName(s), {}), a.via === 'aggregator');
    for (const a of auths.filter((x) => !cfg.listAuths || cfg.listAuths.includes(x.name))) {
      await compare(`LIST 1,000 JSON, ${a.name}`, (s) => runArgs(s, a, s.coll('bench-list'), { connections: 8 }), a.via === 'aggregator');
      await compare(`LIST 1,000 Table, ${a.name}`, (s) => runArgs(s, a, s.coll('bench-list'), { connections: 8, headers: { 'user-agent': 'farm-bench', ...a.headers, accept: TABLE }, sameSize: false /* our Age column grows ("59s" → "1m") */ }), a.via === 'aggregator');
    }

    // ---- writes (token)
    const writeHeaders = { 'user-agent': 'farm-bench', ...bearer, 'content-type': 'application/json', accept: 'application/json' };
    await compare('POST (create), ServiceAccount token', (s) => runArgs(s, auths[0], s.coll('bench-write'), { method: 'POST', body: createBody(s, 'bench-write'), headers: writeHeaders, expectStatus: [201], sameSize: false }), false, true);
    await compare('PUT (update), ServiceAccount token', (s) => runArgs(s, auths[0], `${s.coll('bench-write')}/put-{{conn}}`, { method: 'PUT', body: s.body('bench-write', { name: 'put-{{conn}}', resourceVersion: '{{rv}}', labels: { seq: '{{seq}}' } }), headers: writeHeaders, sameSize: false }), false);

    // ---- watch fan-out
    await watchFanout(ctx, cfg, servers, token, rows, detail, failures, children);

    // ---- RSS at cfg.fillTo objects (both filled at once, unpinned, to be quick; re-pinned after)
    const rssBefore = { ours: procRssBytes(ours.pid), peer: procRssBytes(peer.pid), peerEtcd: procRssBytes(sampleEtcd.pid), oursObjects: ours.created, peerObjects: peer.created };
    const unpinned = [ours.pid, peer.pid, sampleEtcd.pid, lg.proc.pid!];
    if (PIN) for (const p of unpinned) pin(p, '0-1');
    const fill: Record<string, unknown> = {};
    await Promise.all(servers.map(async (s) => {
      const n = cfg.fillTo - s.created;
      const t0 = nowMs();
      if (n > 0) {
        const m = await measure(s, runArgs(s, auths[0], s.coll('bench-fill'), { method: 'POST', body: createBody(s, 'bench-fill'), headers: writeHeaders, expectStatus: [201], sameSize: false, maxRequests: n, warmupMs: 0, durationMs: 600_000 }), false);
        s.created += m.totalRequests;
      }
      fill[s.who] = { created: n, seconds: (nowMs() - t0) / 1000 };
      log(`${s.label}: filled to ${s.created} objects (${n} creates in ${((nowMs() - t0) / 1000).toFixed(1)} s, unpinned, both servers at once)`);
    }));
    if (PIN) for (const p of [ours.pid, peer.pid, sampleEtcd.pid]) pin(p, SERVER_CPU);
    if (PIN) pin(lg.proc.pid!, CLIENT_CPU);
    await sleep(3000);
    const rssAfter = { ours: procRssBytes(ours.pid), peer: procRssBytes(peer.pid), peerEtcd: procRssBytes(sampleEtcd.pid) };
    const mib = (b: number) => (b / 2 ** 20).toFixed(0);
    rows.push({
      bench: `RSS at ${cfg.fillTo.toLocaleString('en-US')} objects`, metric: 'resident set size', unit: 'MiB',
      ours: rssAfter.ours / 2 ** 20, peer: (rssAfter.peer + rssAfter.peerEtcd) / 2 ** 20, ratio: rssAfter.ours / (rssAfter.peer + rssAfter.peerEtcd),
      reading: 'ours/(sample-apiserver + its etcd); < 1 = ours smaller',
      note: `sample-apiserver ${mib(rssAfter.peer)} + etcd ${mib(rssAfter.peerEtcd)} MiB; before the fill: ours ${mib(rssBefore.ours)} MiB at ${rssBefore.oursObjects} objects, sample-apiserver ${mib(rssBefore.peer)} + etcd ${mib(rssBefore.peerEtcd)} MiB at ${rssBefore.peerObjects}; 3 s idle after the last create`,
    });
    detail.rss = { before: rssBefore, after: rssAfter, fill, objects: { ours: ours.created, peer: peer.created } };

    // ---- start to ready: fresh processes on the server core, polled with the admin certificate
    const oursStarts: number[] = [];
    const peerStarts: number[] = [];
    const farmKubeconfig = join(dir, 'cluster', 'farm-apiserver-sa.kubeconfig');
    for (let i = 0; i < cfg.starts + 1; i++) {
      const o = await startOurs(oursMain, farmKubeconfig, fc.farmCertDir, admin, join(dir, `ours-start-${i}.log`));
      const p = await startSample({ ...sampleOpts, dir: join(dir, `sample-start-${i}`) }, admin);
      await p.server.stop();
      if (i === 0) continue; // untimed: warms the file cache
      oursStarts.push(o);
      peerStarts.push(p.readyMs);
      log(`start to ready ${i}: ours ${o.toFixed(0)} ms, sample-apiserver ${p.readyMs.toFixed(0)} ms`);
    }
    rows.push({
      bench: 'Start to ready (/readyz 200)', metric: `median of ${cfg.starts}`, unit: 'ms', ours: median(oursStarts), peer: median(peerStarts), ratio: median(oursStarts) / median(peerStarts),
      reading: 'ours/sample-apiserver; > 1 = ours slower',
      note: `ours: ${oursMain ? `node ${oursMain.slice(REPO_DIR.length + 1)}` : 'node --import tsx src/main.ts (no compiled build)'} in cluster mode; sample-apiserver with its etcd already running; both on one core, polled every 5 ms`,
    });
    detail.startToReady = { ours: oursStarts, peer: peerStarts, oursCommand: oursMain ?? 'tsx src/main.ts' };
  } finally {
    for (const c of children) await c.stop();
    for (const s of spawned.reverse()) await s.stop();
    await fc?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, detail };
}

function newestMtime(d: string): number {
  let newest = 0;
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Compiled JavaScript, as production runs it: dist/main.js when newer than every file in src/, else
 * a private build into .cache/peer-dist/dist (tsc emits even with type errors elsewhere; dist/ is
 * left alone). The copied package.json gives it "type": "module" and src/version.ts's ../package.json.
 */
function compiledMain(log: (m: string) => void): string | undefined {
  const srcMtime = newestMtime(join(REPO_DIR, 'src'));
  const dist = join(REPO_DIR, 'dist', 'main.js');
  if (existsSync(dist) && statSync(dist).mtimeMs > srcMtime) return dist;
  const root = join(REPO_DIR, '.cache', 'peer-dist');
  const main = join(root, 'dist', 'main.js');
  if (existsSync(main) && statSync(main).mtimeMs > srcMtime) return main;
  mkdirSync(root, { recursive: true });
  copyFileSync(join(REPO_DIR, 'package.json'), join(root, 'package.json'));
  log('start-to-ready: npx tsc -p tsconfig.json --outDir .cache/peer-dist/dist');
  const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.json', '--outDir', join(root, 'dist')], { cwd: REPO_DIR, encoding: 'utf8' });
  if (r.status !== 0) log(`  tsc exited ${r.status} (type errors in files being edited?): ${r.stdout.split('\n')[0]}`);
  return existsSync(main) && statSync(main).mtimeMs > srcMtime ? main : undefined;
}

/** Spawns our server in cluster mode on the server core and returns ms from spawn to /readyz 200. */
async function startOurs(dist: string | undefined, kubeconfig: string, certDir: string, probe: { cert: string; key: string }, logFile: string): Promise<number> {
  const port = await freePort();
  const main = dist ? [dist] : ['--import', 'tsx', join(REPO_DIR, 'src/main.ts')];
  const args = [...main, '--kubeconfig', kubeconfig, '--port', String(port), '--bind-address', '127.0.0.1', '--cert-dir', certDir];
  const [cmd, argv] = PIN ? ['taskset', ['-c', SERVER_CPU, process.execPath, ...args]] : [process.execPath, args];
  const t0 = nowMs();
  const child = spawn(cmd, argv, { cwd: REPO_DIR, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, KUBERNETES_SERVICE_HOST: '' } });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`our server exited ${child.exitCode}: ${stderr.slice(0, 500)} (log ${logFile})`);
      if ((await statusWithCert(port, '/readyz', join(certDir, 'ca.crt'), probe.cert, probe.key)) === 200) return nowMs() - t0;
      if (nowMs() - t0 > 60_000) throw new Error(`our server not ready within 60 s: ${stderr.slice(0, 500)}`);
      await sleep(5);
    }
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(8000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

interface Written { rv: number; sentMs: number; ackMs: number }
interface Collected { streams: number; events: number; lost: number; duplicated: number; outOfOrder: number; unexpected: number; errors: number; endedEarly: number; firstError?: string; fromAck: number[]; fromSent: number[] }

/**
 * `watchers` watch streams on each server (token, direct), in 2 client processes on the client core;
 * a writer merge-PATCHes one object at a fixed pace, alternating servers by segment (ours, peer, peer,
 * ours); latency = event line received − PATCH response received.
 */
async function watchFanout(ctx: Ctx, cfg: { watchers: number; watchSegments: number; writesPerSegment: number; watchRate: number }, servers: Server[], token: string, rows: Row[], detail: Record<string, unknown>, failures: string[], children: Child[]): Promise<void> {
  const clients = await Promise.all([0, 1].map(() => Child.start('procs/watchClients.ts')));
  children.push(...clients);
  if (PIN) for (const c of clients) pin(c.proc.pid!, CLIENT_CPU);
  const headers = { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'farm-bench' };
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const written: Record<Who, Written[]> = { ours: [], peer: [] };
  const cpuMs: Record<Who, number> = { ours: 0, peer: 0 };
  try {
    const writer: Record<Who, (sentMs: number) => Promise<number>> = { ours: async () => 0, peer: async () => 0 };
    for (const s of servers) {
      const created = await call(s.port, s.caFile, 'POST', s.coll('bench-watch'), { headers, body: fixed(s.body('bench-watch', { name: 'watched' })) });
      if (created.status !== 201) throw new Error(`${s.label}: create watched: ${created.status} ${created.body.slice(0, 300)}`);
      const rv0 = (JSON.parse(created.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
      writer[s.who] = async (sentMs) => {
        const r = await call(s.port, s.caFile, 'PATCH', `${s.coll('bench-watch')}/watched`, { agent, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ metadata: { annotations: { 'bench/sent': sentMs.toFixed(3) } } }) });
        if (r.status !== 200) throw new Error(`${s.label}: PATCH: ${r.status} ${r.body.slice(0, 300)}`);
        return Number((JSON.parse(r.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
      };
      const per = Math.ceil(cfg.watchers / clients.length);
      await Promise.all(clients.map((c, i) => c.call('open', {
        group: s.who, port: s.port, caFile: s.caFile, headers, count: Math.min(per, cfg.watchers - i * per),
        path: `${s.coll('bench-watch')}?watch=1&resourceVersion=${rv0}`,
      })));
      // Warm-up writes; every stream must see them (registration check), then they are forgotten.
      const warm: Written[] = [];
      for (let i = 0; i < 5; i++) { const sentMs = nowMs(); const rv = await writer[s.who](sentMs); warm.push({ rv, sentMs, ackMs: nowMs() }); await sleep(50); }
      const seen = await Promise.all(clients.map((c) => c.call<Collected>('collect', { group: s.who, written: warm, timeoutMs: 10_000 })));
      const lost = seen.reduce((a, g) => a + g.lost, 0);
      if (lost) throw new Error(`${s.label}: ${lost} warm-up events not delivered to ${cfg.watchers} watchers (${seen.find((g) => g.firstError)?.firstError ?? ''})`);
      await Promise.all(clients.map((c) => c.call('reset', { group: s.who })));
    }
    ctx.log(`  watch fan-out: ${cfg.watchers} watchers each, ${cfg.watchSegments * cfg.writesPerSegment} updates per server at ${cfg.watchRate}/s`);
    for (let seg = 0; seg < cfg.watchSegments; seg++) {
      for (const s of seg % 2 === 0 ? servers : [...servers].reverse()) {
        const c0 = procCpuMs(s.pid);
        const start = nowMs() + 20;
        for (let i = 0; i < cfg.writesPerSegment; i++) {
          const wait = start + (i * 1000) / cfg.watchRate - nowMs();
          if (wait > 1) await sleep(wait);
          const sentMs = nowMs();
          const rv = await writer[s.who](sentMs);
          written[s.who].push({ rv, sentMs, ackMs: nowMs() });
        }
        cpuMs[s.who] += procCpuMs(s.pid) - c0;
        await sleep(300);
      }
    }
    const result: Record<Who, { p50: number; p99: number; sentP50: number; sentP99: number; cpuMsPerUpdate: number; events: number; expected: number; lost: number; duplicated: number; outOfOrder: number; errors: number }> = {} as never;
    for (const s of servers) {
      const got = await Promise.all(clients.map((c) => c.call<Collected>('collect', { group: s.who, written: written[s.who], timeoutMs: 15_000 })));
      const fromAck = Float64Array.from(got.flatMap((g) => g.fromAck)).sort();
      const fromSent = Float64Array.from(got.flatMap((g) => g.fromSent)).sort();
      const sum = (k: 'lost' | 'duplicated' | 'outOfOrder' | 'errors' | 'events' | 'unexpected' | 'endedEarly') => got.reduce((a, g) => a + g[k], 0);
      result[s.who] = {
        p50: percentile(fromAck, 50), p99: percentile(fromAck, 99), sentP50: percentile(fromSent, 50), sentP99: percentile(fromSent, 99),
        cpuMsPerUpdate: cpuMs[s.who] / written[s.who].length, events: sum('events'), expected: written[s.who].length * cfg.watchers,
        lost: sum('lost'), duplicated: sum('duplicated'), outOfOrder: sum('outOfOrder'), errors: sum('errors') + sum('unexpected') + sum('endedEarly'),
      };
      const r = result[s.who];
      if (r.lost || r.duplicated || r.outOfOrder || r.errors || r.events !== r.expected) failures.push(`watch ${s.label}: ${r.events}/${r.expected} events, lost ${r.lost}, dup ${r.duplicated}, out of order ${r.outOfOrder}, errors ${r.errors}`);
    }
    const [o, p] = [result.ours, result.peer];
    const bench = `Watch fan-out, ${cfg.watchers} watchers`;
    const note = `${written.ours.length} updates per server at ${cfg.watchRate}/s; events ${o.events}/${o.expected} vs ${p.events}/${p.expected}; write sent → event p50 ${o.sentP50.toFixed(1)} vs ${p.sentP50.toFixed(1)} ms, p99 ${o.sentP99.toFixed(1)} vs ${p.sentP99.toFixed(1)} ms`;
    rows.push({ bench, metric: 'p50 latency, write ack → event', unit: 'ms', ours: o.p50, peer: p.p50, ratio: o.p50 / p.p50, reading: 'ours/sample-apiserver; > 1 = ours slower', note });
    rows.push({ bench, metric: 'p99 latency, write ack → event', unit: 'ms', ours: o.p99, peer: p.p99, ratio: o.p99 / p.p99, reading: 'ours/sample-apiserver; > 1 = ours slower' });
    rows.push({ bench, metric: 'server CPU per update (all watchers)', unit: 'ms', ours: o.cpuMsPerUpdate, peer: p.cpuMsPerUpdate, ratio: o.cpuMsPerUpdate / p.cpuMsPerUpdate, reading: 'ours/sample-apiserver (Go process only); includes the PATCH' });
    detail.watch = result;
  } finally {
    agent.destroy();
    await Promise.all(clients.map((c) => c.call('close').catch(() => undefined)));
  }
}
