// Peer benchmark: farm-apiserver against kubernetes/sample-apiserver (the Go aggregated-server
// template), both registered behind the same real kube-apiserver aggregator. `--only peers`; not in
// the default set (it needs the control plane and takes ~10 min). See docs/benchmarks.md.
//
// Three servers per row: ours with the memory backend (the cluster's instance; the rows named as before
// etcd3 existed), ours with the etcd3 backend (a second instance, on sample-apiserver's etcd under the
// prefix /farm), and sample-apiserver. One load generator (bench/procs/loadgen.ts), interleaved rounds
// (ours, peer, etcd3, etcd3, peer, ours, …), ratios ÷ sample-apiserver, server CPU per request read
// from /proc for each and the etcd's separately. Servers are pinned to one core (taskset; GOMAXPROCS=1
// for Go), with the etcd; the load generator, watch clients, kube-apiserver and the cluster's etcd on
// the other. Our two instances take turns behind the APIService for the rows through the aggregator.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleInto, ENTRY_NAME } from '../../scripts/bundle.js';
import { seedCodeCache } from '../../scripts/seedCodeCache.js';
import { startFarmCluster, type FarmCluster } from '../../test/cluster/farmCluster.js';
import { Child, freePort, median, nowMs, REPO_DIR, sleep } from '../lib/common.js';
import { LoadSampler } from '../lib/loadSampler.js';
import { routeAggregatorTo, startFarmDirect } from '../peers/farmDirect.js';
import { call, fixed, LABEL, type Server, type Who } from '../peers/peerServer.js';
import { findPid, pin, procCpuMs, procRssBytes } from '../peers/procStat.js';
import { ensurePeerBinaries, registrationYaml, startEtcd, startSample, statusWithCert, WARDLE, writeServingCert, type Spawned } from '../peers/sampleApiserver.js';
import { threeWayMarkdown, watchRows, type ThreeWay } from '../peers/threeWay.js';
import { watchFanout } from '../peers/watchFanout.js';
import type { RangeArgs, RangeResult } from '../procs/etcdRange.js';
import type { RunArgs, RunResult } from '../procs/loadgen.js';
import type { Ctx, Row, SuiteResult } from './types.js';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const PIN = cpus().length >= 2;
const SERVER_CPU = '1';
const CLIENT_CPU = '0';
/** ours-etcd3's keys in the etcd it shares with sample-apiserver (whose keys are under /registry). */
const ETCD_PREFIX = '/farm';

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

/**
 * The round trip ours-etcd3 adds to every consistent read (a keys-only Range of one key for etcd's
 * revision), through the server's own etcd client, from a process on the server core (where our
 * server sits, next to etcd) and on the client core; with etcd's CPU per call.
 */
async function etcdRoundTrip(url: string, key: string, etcdPid: number, knownPids: number[], log: (m: string) => void, children: Child[]): Promise<Record<string, RangeResult & { etcdCpuUsPerCall: number }>> {
  const out: Record<string, RangeResult & { etcdCpuUsPerCall: number }> = {};
  const args: RangeArgs = { url, key, sequential: 2000, concurrency: 16, durationMs: 1000 };
  for (const [where, cpu] of [['server core', SERVER_CPU], ['client core', CLIENT_CPU]] as const) {
    const probe = await Child.start('procs/etcdRange.ts');
    children.push(probe);
    knownPids.push(probe.proc.pid!);
    if (PIN) pin(probe.proc.pid!, cpu);
    const e0 = procCpuMs(etcdPid);
    const r = await probe.call<RangeResult>('measure', { ...args });
    const calls = 200 + r.sequential.calls + r.concurrent.calls;
    const etcdCpuUsPerCall = (1000 * (procCpuMs(etcdPid) - e0)) / calls;
    await probe.stop();
    out[where] = { ...r, etcdCpuUsPerCall };
    log(`etcd round trip (keys-only Range, the consistent read's) from the ${where}: one at a time p50 ${r.sequential.p50Us.toFixed(0)} µs, p99 ${r.sequential.p99Us.toFixed(0)} µs, client CPU ${r.sequential.clientCpuUsPerCall.toFixed(0)} µs/call; 16 in flight ${r.concurrent.perSecond.toFixed(0)}/s, p50 ${r.concurrent.p50Us.toFixed(0)} µs, client CPU ${r.concurrent.clientCpuUsPerCall.toFixed(0)} µs/call; etcd CPU ${etcdCpuUsPerCall.toFixed(0)} µs/call`);
  }
  return out;
}

/** Until etcd used under 10 ms of CPU in 200 ms (at most 5 s). */
async function etcdIdle(pid: number): Promise<void> {
  for (const end = Date.now() + 5_000; Date.now() < end;) {
    const c0 = procCpuMs(pid);
    await sleep(200);
    if (procCpuMs(pid) - c0 < 10) return;
  }
}

export async function peersSuite(ctx: Ctx): Promise<SuiteResult> {
  const q = ctx.quick;
  const cfg = {
    // The untimed warm-up is 2 × warmupMs per server and row: a Node server's create path needs ~3,000
    // requests (~2 s) before V8 has optimized it (CPU per create 2-3× higher before; Go has no warm-up).
    rounds: ctx.rounds ?? (q ? 2 : 4), warmupMs: q ? 200 : 1000, durationMs: q ? 600 : 800,
    listAuths: q ? ['ServiceAccount token', 'through the aggregator'] : undefined,
    watchers: q ? 50 : 1000, watchSegments: q ? 2 : 4, writesPerSegment: q ? 10 : 25, watchRate: 10,
    fillTo: q ? 10_000 : 100_000, starts: q ? 1 : 7,
    /** BENCH_NODE=<node binary>: what our servers run on (default this process's Node), e.g. the image's Node 24. */
    node: process.env.BENCH_NODE ?? process.execPath,
    /** BENCH_PEERS_ROWS=<regex>: only the rows whose benchmark name matches (re-running noisy rows). */
    rowFilter: process.env.BENCH_PEERS_ROWS,
  };
  const want = (bench: string) => !cfg.rowFilter || new RegExp(cfg.rowFilter, 'i').test(bench);
  const rows: Row[] = [];
  const failures: string[] = [];
  const three: ThreeWay[] = [];
  const detail: Record<string, unknown> = { config: cfg, pinned: PIN ? `servers (ours-memory, ours-etcd3, sample-apiserver and the etcd they share) on CPU ${SERVER_CPU}, clients/kube-apiserver/cluster etcd on CPU ${CLIENT_CPU}; GOMAXPROCS=1` : 'not pinned (fewer than 2 CPUs)', failures, threeWay: three };
  const dir = mkdtempSync(join(tmpdir(), 'farm-peers-'));
  const log = (m: string) => ctx.log(`  ${m}`);

  const sampleBinDir = await ensurePeerBinaries(log);
  const oursMain = await compiledMain(log);
  let fc: FarmCluster | undefined;
  const spawned: Spawned[] = [];
  const children: Child[] = [];
  try {
    detail.node = execFileSync(cfg.node, ['--version'], { encoding: 'utf8' }).trim();
    log(`our servers run on ${cfg.node} ${String(detail.node)}`);
    fc = await startFarmCluster({ dir: join(dir, 'cluster'), log, node: cfg.node });
    const cp = fc.cp;
    const farmCertDir = fc.farmCertDir;
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

    // ours-etcd3: a second instance of our server as the cluster runs it (tsx, cluster mode, its
    // ServiceAccount, the same serving certificate), on sample-apiserver's etcd under its own prefix.
    const farmKubeconfig = join(dir, 'cluster', 'farm-apiserver-sa.kubeconfig');
    const etcdArgs = ['--storage-backend=etcd3', `--etcd-servers=${sampleEtcdUrl}`, `--etcd-prefix=${ETCD_PREFIX}`];
    const etcd3Proc = await startFarmDirect({ kubeconfig: farmKubeconfig, certDir: farmCertDir, extraArgs: etcdArgs, logFile: join(dir, 'farm-etcd3.log'), cpus: PIN ? SERVER_CPU : undefined, probe: admin, node: cfg.node });
    spawned.push(etcd3Proc.server);
    log(`ours-etcd3 ready on https://127.0.0.1:${etcd3Proc.port} in ${etcd3Proc.readyMs.toFixed(0)} ms (etcd ${sampleEtcdUrl}, prefix ${ETCD_PREFIX})`);

    const pinned: string[] = [];
    if (PIN) {
      if (pin(oursPid, SERVER_CPU)) pinned.push(`ours ${oursPid}`);
      for (const p of cpPids) if (pin(p, CLIENT_CPU)) pinned.push(`control plane ${p}`);
    }
    const lg = await Child.start('procs/loadgen.ts');
    children.push(lg);
    if (PIN) pin(lg.proc.pid!, CLIENT_CPU);
    detail.pids = { ours: oursPid, etcd3: etcd3Proc.server.pid, sample: sample.server.pid, sampleEtcd: sampleEtcd.pid, kubeApiserver: kubeApiserverPid, pinned };
    const knownPids = [oursPid, etcd3Proc.server.pid, sample.server.pid, sampleEtcd.pid, ...cpPids, lg.proc.pid!];
    const load = new LoadSampler(() => knownPids);
    detail.load = load.samples;

    const llamaColl = (ns: string) => `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`;
    const ours: Server = {
      who: 'ours', label: LABEL.ours, port: fc.farmPort, caFile: join(farmCertDir, 'ca.crt'), pid: oursPid, helperPids: [],
      coll: llamaColl, body: llamaJson, created: 0, aggregated: { oneUid: '' },
    };
    const peer: Server = {
      who: 'peer', label: LABEL.peer, port: sample.port, caFile: serving.ca, pid: sample.server.pid, helperPids: [sampleEtcd.pid],
      coll: (ns) => `/apis/${WARDLE.group}/${WARDLE.version}/namespaces/${ns}/flunders`,
      body: flunderJson,
      created: 0,
    };
    const etcd3: Server = {
      who: 'etcd3', label: LABEL.etcd3, port: etcd3Proc.port, caFile: join(farmCertDir, 'ca.crt'), pid: etcd3Proc.server.pid, helperPids: [sampleEtcd.pid],
      coll: llamaColl, body: llamaJson, created: 0, aggregated: { oneUid: '' },
    };
    // sample-apiserver in the middle: each of ours sits next to it in every round (… ours, peer, etcd3 | etcd3, peer, ours …).
    const servers = [ours, peer, etcd3];
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

    // APIService v1alpha.farm.example.com points at one of our instances at a time: switched before
    // an aggregated run of the other, and checked by the uid of the object answered through it.
    let routed: Server = ours;
    const switches: number[] = [];
    const routeTo = async (s: Server) => {
      if (!s.aggregated || routed === s) return;
      const uid = s.aggregated.oneUid;
      const ms = await routeAggregatorTo({
        certDir: farmCertDir, port: s.port,
        apply: async (yaml) => { await kubectl(['apply', '-f', '-'], yaml); },
        answeredBy: async () => {
          const r = await call(apiPort, cp.clusterCa, 'GET', `${s.coll('bench-one')}/one`, { cert: admin.cert, key: admin.key });
          return r.status === 200 && (JSON.parse(r.body) as { metadata: { uid: string } }).metadata.uid === uid;
        },
      });
      routed = s;
      switches.push(ms);
    };
    detail.aggregatorSwitchesMs = switches;

    const measure = async (s: Server, args: RunArgs, proxied: boolean): Promise<Measured> => {
      if (proxied) await routeTo(s);
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

    /**
     * Untimed warm-up of each, then `rounds` rounds (ours, peer, etcd3, then reversed, …); per-round
     * ratios, medians. A failure of ours-etcd3 leaves it out of the row (with a failure line), not the others.
     */
    const compare = async (bench: string, mk: (s: Server) => RunArgs, proxied: boolean, created = false) => {
      if (!want(bench)) return;
      load.mark(bench);
      const active = new Set(servers);
      const run = async (s: Server, args: RunArgs): Promise<Measured | undefined> => {
        try {
          const m = await measure(s, args, proxied);
          if (created) s.created += m.totalRequests;
          return m;
        } catch (e) {
          if (s.who !== 'etcd3') throw e;
          active.delete(s);
          const why = `${bench}: ours-etcd3 left out: ${e instanceof Error ? e.message : String(e)}`;
          failures.push(why);
          log(`!! ${why}`);
          return undefined;
        }
      };
      for (const s of [...servers].reverse()) if (active.has(s)) await run(s, { ...mk(s), warmupMs: 0, durationMs: cfg.warmupMs * 2 });
      const got: Record<Who, Measured[]> = { ours: [], etcd3: [], peer: [] };
      const ratios = { ours: [] as number[], etcd3: [] as number[], etcd3Mem: [] as number[] };
      const cpuRatios = { ours: [] as number[], etcd3: [] as number[], etcd3Mem: [] as number[] };
      for (let r = 0; r < cfg.rounds; r++) {
        for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
          if (!active.has(s)) continue;
          const m = await run(s, mk(s));
          if (m) got[s.who].push(m);
        }
        const [o, p] = [got.ours[r], got.peer[r]];
        ratios.ours.push(o.rps / p.rps);
        cpuRatios.ours.push(o.serverCpuUsPerRequest / p.serverCpuUsPerRequest);
        const e = active.has(etcd3) ? got.etcd3[r] : undefined;
        if (e) {
          ratios.etcd3.push(e.rps / p.rps);
          ratios.etcd3Mem.push(e.rps / o.rps);
          cpuRatios.etcd3.push(e.serverCpuUsPerRequest / p.serverCpuUsPerRequest);
          cpuRatios.etcd3Mem.push(e.serverCpuUsPerRequest / o.serverCpuUsPerRequest);
        }
        const etcd3Text = e ? `, etcd3 ${e.rps.toFixed(0)}` : '';
        const etcd3Cpu = e ? `, etcd3 ${e.serverCpuUsPerRequest.toFixed(0)} (+ etcd ${e.helperCpuUsPerRequest.toFixed(0)})` : '';
        log(`${bench} round ${r + 1}: memory ${o.rps.toFixed(0)}${etcd3Text}, sample ${p.rps.toFixed(0)} req/s; server CPU µs/req memory ${o.serverCpuUsPerRequest.toFixed(0)}${etcd3Cpu}, sample ${p.serverCpuUsPerRequest.toFixed(0)} (+ etcd ${p.helperCpuUsPerRequest.toFixed(0)})`);
      }
      const section = load.mark('between rows');
      const loadNote = `load average ${section.load1.toFixed(1)}, other processes ${section.otherCores.toFixed(2)} cores`;
      const med = (who: Who, f: (m: Measured) => number) => median(got[who].map(f));
      const rps = (m: Measured) => m.rps;
      const cpu = (m: Measured) => m.serverCpuUsPerRequest;
      const etcdCpu = (m: Measured) => m.helperCpuUsPerRequest;
      const proxy = (m: Measured) => m.proxyCpuUsPerRequest;
      const proxyNote = proxied ? `; kube-apiserver CPU ${med('ours', proxy).toFixed(0)} vs ${med('peer', proxy).toFixed(0)} µs/req` : '';
      rows.push({
        bench, metric: 'requests/s', unit: 'req/s', ours: med('ours', rps), peer: med('peer', rps), ratio: median(ratios.ours),
        reading: 'ours/sample-apiserver; > 1 = ours faster',
        note: `${got.ours[0].responseBytes} vs ${got.peer[0].responseBytes} B/response, ${mk(ours).connections} conns; p50 ${med('ours', (m) => m.latencyMs.p50).toFixed(2)} vs ${med('peer', (m) => m.latencyMs.p50).toFixed(2)} ms`,
      });
      rows.push({
        bench, metric: 'server CPU per request', unit: 'µs', ours: med('ours', cpu), peer: med('peer', cpu), ratio: median(cpuRatios.ours),
        reading: 'ours/sample-apiserver (Go process only); < 1 = ours cheaper',
        note: `sample-apiserver's etcd adds ${med('peer', etcdCpu).toFixed(0)} µs/req${proxyNote}`,
      });
      const hasEtcd3 = got.etcd3.length === cfg.rounds;
      if (hasEtcd3) {
        const eProxy = proxied ? `; kube-apiserver CPU ${med('etcd3', proxy).toFixed(0)} µs/req` : '';
        rows.push({
          bench, metric: 'requests/s, ours-etcd3', unit: 'req/s', ours: med('etcd3', rps), peer: med('peer', rps), ratio: median(ratios.etcd3),
          reading: 'ours-etcd3/sample-apiserver; > 1 = ours faster',
          note: `ours-etcd3 ÷ ours-memory ${median(ratios.etcd3Mem).toFixed(2)}; p50 ${med('etcd3', (m) => m.latencyMs.p50).toFixed(2)} vs ${med('peer', (m) => m.latencyMs.p50).toFixed(2)} ms; ${loadNote}`,
        });
        rows.push({
          bench, metric: 'server CPU per request, ours-etcd3', unit: 'µs', ours: med('etcd3', cpu), peer: med('peer', cpu), ratio: median(cpuRatios.etcd3),
          reading: 'ours-etcd3/sample-apiserver (server process only); < 1 = ours cheaper',
          note: `the shared etcd adds ${med('etcd3', etcdCpu).toFixed(0)} µs/req to ours-etcd3, ${med('peer', etcdCpu).toFixed(0)} to sample-apiserver; ours-etcd3 ÷ ours-memory ${median(cpuRatios.etcd3Mem).toFixed(2)}${eProxy}`,
        });
      }
      three.push({
        bench, unit: 'req/s', better: 'higher',
        values: { ours: med('ours', rps), etcd3: hasEtcd3 ? med('etcd3', rps) : undefined, peer: med('peer', rps) },
        ratios: { oursPeer: median(ratios.ours), etcd3Peer: hasEtcd3 ? median(ratios.etcd3) : undefined, etcd3Ours: hasEtcd3 ? median(ratios.etcd3Mem) : undefined },
        cpuUs: { ours: med('ours', cpu), etcd3: hasEtcd3 ? med('etcd3', cpu) : undefined, peer: med('peer', cpu) },
        etcdCpuUs: { etcd3: hasEtcd3 ? med('etcd3', etcdCpu) : undefined, peer: med('peer', etcdCpu) },
        ...(proxied && { proxyCpuUs: { ours: med('ours', proxy), etcd3: hasEtcd3 ? med('etcd3', proxy) : undefined, peer: med('peer', proxy) } }),
        load1: section.load1, otherCores: section.otherCores,
        ...(!hasEtcd3 && { missing: 'ours-etcd3 failed in this row (see failures)' }),
      });
      detail[bench] = { ours: got.ours, etcd3: got.etcd3, peer: got.peer, ratios, cpuRatios, load: section };
    };

    // ---- seed: 1 object in bench-one, 1,000 in bench-list, put-0…15 in bench-write (for the PUTs)
    for (const s of servers) {
      const tokenAuth = auths[0];
      const one = await call(s.port, s.caFile, 'POST', s.coll('bench-one'), { headers: bearer, body: fixed(s.body('bench-one', { name: 'one' })) });
      if (one.status !== 201) throw new Error(`${s.label}: create one: ${one.status} ${one.body.slice(0, 300)}`);
      if (s.aggregated) s.aggregated.oneUid = (JSON.parse(one.body) as { metadata: { uid: string } }).metadata.uid;
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

    // ---- the etcd round trip a consistent read adds (ours-etcd3), from each core
    if (want('etcd round trip')) detail.etcdRoundTrip = await etcdRoundTrip(sampleEtcdUrl, `${ETCD_PREFIX}/farm.example.com/llamas/`, sampleEtcd.pid, knownPids, log, children);

    // ---- reads
    for (const a of auths) await compare(`GET one, ${a.name}`, (s) => runArgs(s, a, oneName(s), {}), a.via === 'aggregator');
    // resourceVersion=0: any cached state will do, so no consistent read (no etcd round trip for ours-etcd3;
    // sample-apiserver answers from its watch cache instead of etcd).
    await compare('GET one ?resourceVersion=0, ServiceAccount token', (s) => runArgs(s, auths[0], `${oneName(s)}?resourceVersion=0`, {}), false);
    for (const a of auths.filter((x) => !cfg.listAuths || cfg.listAuths.includes(x.name))) {
      await compare(`LIST 1,000 JSON, ${a.name}`, (s) => runArgs(s, a, s.coll('bench-list'), { connections: 8 }), a.via === 'aggregator');
      await compare(`LIST 1,000 Table, ${a.name}`, (s) => runArgs(s, a, s.coll('bench-list'), { connections: 8, headers: { 'user-agent': 'farm-bench', ...a.headers, accept: TABLE }, sameSize: false /* our Age column grows ("59s" → "1m") */ }), a.via === 'aggregator');
    }

    // ---- writes (token)
    const writeHeaders = { 'user-agent': 'farm-bench', ...bearer, 'content-type': 'application/json', accept: 'application/json' };
    await compare('POST (create), ServiceAccount token', (s) => runArgs(s, auths[0], s.coll('bench-write'), { method: 'POST', body: createBody(s, 'bench-write'), headers: writeHeaders, expectStatus: [201], sameSize: false }), false, true);
    await compare('PUT (update), ServiceAccount token', (s) => runArgs(s, auths[0], `${s.coll('bench-write')}/put-{{conn}}`, { method: 'PUT', body: s.body('bench-write', { name: 'put-{{conn}}', resourceVersion: '{{rv}}', labels: { seq: '{{seq}}' } }), headers: writeHeaders, sameSize: false }), false);

    // ---- watch fan-out
    const watchBench = `Watch fan-out, ${cfg.watchers} watchers`;
    if (want(watchBench)) {
      load.mark(watchBench);
      const w = await watchFanout({ cfg, servers, token, log, failures, children, knownPids, clientCpu: PIN ? CLIENT_CPU : undefined });
      const section = load.mark('between rows');
      watchRows(watchBench, w, rows, three, section.load1, section.otherCores);
      detail.watch = { ...w, load: section };
    }

    // ---- RSS at cfg.fillTo objects
    const rssBench = `RSS at ${cfg.fillTo.toLocaleString('en-US')} objects`;
    if (want(rssBench)) {
      load.mark(rssBench);
      const rssBefore = { ours: procRssBytes(ours.pid), etcd3: procRssBytes(etcd3.pid), peer: procRssBytes(peer.pid), peerEtcd: procRssBytes(sampleEtcd.pid), oursObjects: ours.created, etcd3Objects: etcd3.created, peerObjects: peer.created };
      const fill: Record<string, unknown> = {};
      const fillOne = async (s: Server, note: string) => {
        const n = cfg.fillTo - s.created;
        const t0 = nowMs();
        if (n > 0) {
          const m = await measure(s, runArgs(s, auths[0], s.coll('bench-fill'), { method: 'POST', body: createBody(s, 'bench-fill'), headers: writeHeaders, expectStatus: [201], sameSize: false, maxRequests: n, warmupMs: 0, durationMs: 600_000 }), false);
          s.created += m.totalRequests;
        }
        const seconds = (nowMs() - t0) / 1000;
        fill[s.who] = { created: n, seconds };
        log(`${s.label}: filled to ${s.created} objects (${n} creates in ${seconds.toFixed(1)} s, ${note})`);
      };
      const repin = async (pids: number[]) => {
        if (PIN) for (const p of pids) pin(p, SERVER_CPU);
        if (PIN) pin(lg.proc.pid!, CLIENT_CPU);
        await sleep(3000);
      };
      // Phase 1, as before etcd3 existed: ours-memory and sample-apiserver at once, unpinned, to be quick.
      if (PIN) for (const p of [ours.pid, peer.pid, sampleEtcd.pid, lg.proc.pid!]) pin(p, '0-1');
      await Promise.all([ours, peer].map((s) => fillOne(s, 'unpinned, ours-memory and sample-apiserver at once')));
      await repin([ours.pid, peer.pid, sampleEtcd.pid]);
      const rssAfter = { ours: procRssBytes(ours.pid), peer: procRssBytes(peer.pid), peerEtcd: procRssBytes(sampleEtcd.pid) };
      // Phase 2: ours-etcd3 alone, so the growth of the etcd they share is its own.
      if (PIN) for (const p of [etcd3.pid, sampleEtcd.pid, lg.proc.pid!]) pin(p, '0-1');
      await fillOne(etcd3, 'unpinned, alone');
      await repin([etcd3.pid, sampleEtcd.pid]);
      const rssEtcd3 = { etcd3: procRssBytes(etcd3.pid), etcd: procRssBytes(sampleEtcd.pid) };
      const section = load.mark('between rows');
      const mib = (b: number) => (b / 2 ** 20).toFixed(0);
      // RSS growth over the fill ÷ objects added: what one more stored object costs (KiB).
      const perObject = {
        ours: (rssAfter.ours - rssBefore.ours) / 1024 / (ours.created - rssBefore.oursObjects),
        etcd3: (rssEtcd3.etcd3 - rssBefore.etcd3) / 1024 / (etcd3.created - rssBefore.etcd3Objects),
        peer: (rssAfter.peer - rssBefore.peer) / 1024 / (peer.created - rssBefore.peerObjects),
        peerEtcd: (rssAfter.peerEtcd - rssBefore.peerEtcd) / 1024 / (peer.created - rssBefore.peerObjects),
        etcd3Etcd: (rssEtcd3.etcd - rssAfter.peerEtcd) / 1024 / (etcd3.created - rssBefore.etcd3Objects),
      };
      const kib = (x: number) => x.toFixed(1);
      rows.push({
        bench: rssBench, metric: 'resident set size', unit: 'MiB',
        ours: rssAfter.ours / 2 ** 20, peer: (rssAfter.peer + rssAfter.peerEtcd) / 2 ** 20, ratio: rssAfter.ours / (rssAfter.peer + rssAfter.peerEtcd),
        reading: 'ours/(sample-apiserver + its etcd); < 1 = ours smaller',
        note: `sample-apiserver ${mib(rssAfter.peer)} + etcd ${mib(rssAfter.peerEtcd)} MiB (the etcd also holds ours-etcd3's ${rssBefore.etcd3Objects} seed objects); before the fill: ours ${mib(rssBefore.ours)} MiB at ${rssBefore.oursObjects} objects, sample-apiserver ${mib(rssBefore.peer)} + etcd ${mib(rssBefore.peerEtcd)} MiB at ${rssBefore.peerObjects}; 3 s idle after the last create`,
      });
      const etcdGrowth = rssEtcd3.etcd - rssAfter.peerEtcd;
      rows.push({
        bench: rssBench, metric: 'resident set size, ours-etcd3 (process only)', unit: 'MiB',
        ours: rssEtcd3.etcd3 / 2 ** 20, peer: rssAfter.peer / 2 ** 20, ratio: rssEtcd3.etcd3 / rssAfter.peer,
        reading: 'ours-etcd3/sample-apiserver, each without etcd (both keep every object in a watch cache); < 1 = ours smaller',
        note: `ours-etcd3 ÷ ours-memory ${(rssEtcd3.etcd3 / rssAfter.ours).toFixed(2)}; the shared etcd grew ${mib(rssAfter.peerEtcd)} → ${mib(rssEtcd3.etcd)} MiB (+${mib(etcdGrowth)}) with ours-etcd3's fill: ours-etcd3 + that growth = ${mib(rssEtcd3.etcd3 + etcdGrowth)} MiB vs sample-apiserver + its etcd ${mib(rssAfter.peer + rssAfter.peerEtcd)} MiB (${((rssEtcd3.etcd3 + etcdGrowth) / (rssAfter.peer + rssAfter.peerEtcd)).toFixed(2)}); before the fill ours-etcd3 ${mib(rssBefore.etcd3)} MiB at ${rssBefore.etcd3Objects}`,
      });
      three.push({
        bench: rssBench, unit: 'MiB', better: 'lower',
        values: { ours: rssAfter.ours / 2 ** 20, etcd3: rssEtcd3.etcd3 / 2 ** 20, peer: rssAfter.peer / 2 ** 20 },
        ratios: { oursPeer: rssAfter.ours / rssAfter.peer, etcd3Peer: rssEtcd3.etcd3 / rssAfter.peer, etcd3Ours: rssEtcd3.etcd3 / rssAfter.ours },
        note: `process only; etcd: ${mib(rssAfter.peerEtcd)} MiB with sample-apiserver's objects, +${mib(etcdGrowth)} MiB with ours-etcd3's; RSS growth per object added: ours-memory ${kib(perObject.ours)} KiB, ours-etcd3 ${kib(perObject.etcd3)} (+ etcd ${kib(perObject.etcd3Etcd)}), sample-apiserver ${kib(perObject.peer)} (+ etcd ${kib(perObject.peerEtcd)})`,
        load1: section.load1, otherCores: section.otherCores,
      });
      detail.rss = { before: rssBefore, after: rssAfter, etcd3After: rssEtcd3, perObjectKiB: perObject, fill, objects: { ours: ours.created, etcd3: etcd3.created, peer: peer.created }, load: section };
    }

    // ---- start to ready: fresh processes on the server core, polled with the admin certificate
    const startBench = 'Start to ready (/readyz 200)';
    if (want(startBench)) {
      load.mark(startBench);
      const starts: Record<Who, number[]> = { ours: [], etcd3: [], peer: [] };
      // Also: spawn to the first LIST of bench-list answered 200 (?limit=500, as a client's first page).
      // sample-apiserver (k8s.io/apiserver 1.33) reports ready before its watch cache is filled
      // (WatchCacheInitializationPostStartHook is off by default until 1.36), and so is ours-etcd3 (KEP-4568).
      const firstLists: Record<Who, number[]> = { ours: [], etcd3: [], peer: [] };
      const listPath = (s: Server) => `${s.coll('bench-list')}?limit=500`;
      // Each start waits for the shared etcd to be idle: the server stopped before it may have left etcd
      // answering a big list (sample-apiserver's and ours-etcd3's caches list 100,000 objects at start),
      // on the same core, which timed the next start against the last one's leftovers.
      const settled = () => etcdIdle(sampleEtcd.pid);
      // Each of ours starts as a rollout's new pod does: an empty cache directory (its emptyDir), so with
      // the code cache the build made beside the bundle (scripts/seedCodeCache.ts), not one of its own.
      const seed = await seedCodeCache(oursMain, cfg.node);
      const newPod = (): NodeJS.ProcessEnv => ({ NODE_COMPILE_CACHE: mkdtempSync(join(dir, 'pod-cache-')) });
      let lastPod: NodeJS.ProcessEnv = {};
      for (let i = 0; i < cfg.starts + 1; i++) {
        await settled();
        const o = await startOurs(oursMain, farmKubeconfig, farmCertDir, admin, join(dir, `ours-start-${i}.log`), [], listPath(ours), cfg.node, newPod());
        await settled();
        const p = await startSample({ ...sampleOpts, dir: join(dir, `sample-start-${i}`) }, admin);
        const pList = p.readyMs + await untilOk(p.port, listPath(peer), serving.ca, admin, 60_000);
        await p.server.stop();
        // Untimed: warms the file cache (ours-etcd3 runs the same files).
        if (i === 0) continue;
        await settled();
        lastPod = newPod();
        const e = await startOurs(oursMain, farmKubeconfig, farmCertDir, admin, join(dir, `etcd3-start-${i}.log`), etcdArgs, listPath(etcd3), cfg.node, lastPod);
        starts.ours.push(o.readyMs);
        starts.peer.push(p.readyMs);
        starts.etcd3.push(e.readyMs);
        firstLists.ours.push(o.firstListMs);
        firstLists.peer.push(pList);
        firstLists.etcd3.push(e.firstListMs);
        log(`start to ready ${i}: ours-memory ${o.readyMs.toFixed(0)} ms, sample-apiserver ${p.readyMs.toFixed(0)} ms, ours-etcd3 ${e.readyMs.toFixed(0)} ms; to the first LIST 200: ${o.firstListMs.toFixed(0)}, ${pList.toFixed(0)}, ${e.firstListMs.toFixed(0)} ms`);
      }
      // Reported, not in the ratio: a restart in the same pod (the cache its last exit grew), and a start
      // without any code cache (NODE_DISABLE_COMPILE_CACHE, or a build that made none).
      await settled();
      const restart = await startOurs(oursMain, farmKubeconfig, farmCertDir, admin, join(dir, 'etcd3-start-restart.log'), etcdArgs, listPath(etcd3), cfg.node, lastPod);
      await settled();
      const cold = await startOurs(oursMain, farmKubeconfig, farmCertDir, admin, join(dir, 'etcd3-start-cold.log'), etcdArgs, listPath(etcd3), cfg.node, { NODE_DISABLE_COMPILE_CACHE: '1' });
      log(`start to ready, ours-etcd3: a restart in the same pod ${restart.readyMs.toFixed(0)} ms, without a code cache ${cold.readyMs.toFixed(0)} ms; to the first LIST 200: ${restart.firstListMs.toFixed(0)}, ${cold.firstListMs.toFixed(0)} ms`);
      const section = load.mark('between rows');
      const cmd = `node ${oursMain.slice(REPO_DIR.length + 1)}`;
      rows.push({
        bench: startBench, metric: `median of ${cfg.starts}`, unit: 'ms', ours: median(starts.ours), peer: median(starts.peer), ratio: median(starts.ours) / median(starts.peer),
        reading: 'ours/sample-apiserver; > 1 = ours slower',
        note: `ours: ${cmd} in cluster mode, each start a new pod's (an empty cache directory, the build's code cache of ${(statSync(seed).size / 2 ** 20).toFixed(1)} MiB); sample-apiserver with its etcd already running; both on one core, polled every 5 ms; each start once the shared etcd is idle`,
      });
      rows.push({
        bench: startBench, metric: `median of ${cfg.starts}, ours-etcd3`, unit: 'ms', ours: median(starts.etcd3), peer: median(starts.peer), ratio: median(starts.etcd3) / median(starts.peer),
        reading: 'ours-etcd3/sample-apiserver; > 1 = ours slower',
        note: `ours-etcd3 ÷ ours-memory ${(median(starts.etcd3) / median(starts.ours)).toFixed(2)}; once each: a restart in the same pod ${restart.readyMs.toFixed(0)} ms, without a code cache ${cold.readyMs.toFixed(0)} ms; ours-etcd3 has ${etcd3.created} llamas in etcd and fills its watch cache after /readyz (sample-apiserver's etcd holds ${peer.created} flunders); ${cmd} --storage-backend=etcd3`,
      });
      three.push({
        bench: `${startBench}, median of ${cfg.starts}`, unit: 'ms', better: 'lower',
        values: { ours: median(starts.ours), etcd3: median(starts.etcd3), peer: median(starts.peer) },
        ratios: { oursPeer: median(starts.ours) / median(starts.peer), etcd3Peer: median(starts.etcd3) / median(starts.peer), etcd3Ours: median(starts.etcd3) / median(starts.ours) },
        note: `ours-etcd3 with ${etcd3.created} llamas in etcd, sample-apiserver with ${peer.created} flunders`,
        load1: section.load1, otherCores: section.otherCores,
      });
      const firstListBench = 'Start to the first LIST 200 (?limit=500)';
      rows.push({
        bench: firstListBench, metric: `median of ${cfg.starts}, ours-etcd3`, unit: 'ms', ours: median(firstLists.etcd3), peer: median(firstLists.peer), ratio: median(firstLists.etcd3) / median(firstLists.peer),
        reading: 'ours-etcd3/sample-apiserver; > 1 = ours slower',
        note: `ours-memory (empty after a restart) ${median(firstLists.ours).toFixed(0)} ms; ours-etcd3 once each: a restart in the same pod ${restart.firstListMs.toFixed(0)} ms, without a code cache ${cold.firstListMs.toFixed(0)} ms; polled every 5 ms after /readyz 200 with the admin certificate`,
      });
      three.push({
        bench: `${firstListBench}, median of ${cfg.starts}`, unit: 'ms', better: 'lower',
        values: { ours: median(firstLists.ours), etcd3: median(firstLists.etcd3), peer: median(firstLists.peer) },
        ratios: { oursPeer: median(firstLists.ours) / median(firstLists.peer), etcd3Peer: median(firstLists.etcd3) / median(firstLists.peer), etcd3Ours: median(firstLists.etcd3) / median(firstLists.ours) },
        note: 'ours-memory starts empty',
        load1: section.load1, otherCores: section.otherCores,
      });
      detail.startToReady = { ...starts, firstList: firstLists, restart, withoutCodeCache: cold, oursCommand: oursMain, load: section };
    }
    load.mark('end');
    for (const l of threeWayMarkdown(three)) log(l);
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
 * The bundled entry point, as production runs it (`npm run build`: tsc, then scripts/bundle.ts):
 * dist/farm-apiserver.js when newer than every file in src/, else a private bundle in .cache/peer-dist
 * (dist/ is left alone).
 */
async function compiledMain(log: (m: string) => void): Promise<string> {
  const dist = join(REPO_DIR, 'dist', `${ENTRY_NAME}.js`);
  if (existsSync(dist) && statSync(dist).mtimeMs > newestMtime(join(REPO_DIR, 'src'))) return dist;
  log('start-to-ready: bundling src/main.ts into .cache/peer-dist');
  return bundleInto(join(REPO_DIR, '.cache', 'peer-dist'));
}

/** ms until GET `path` answers 200 (polled every 5 ms with `probe`'s certificate), at most `timeoutMs`. */
async function untilOk(port: number, path: string, ca: string, probe: { cert: string; key: string }, timeoutMs: number): Promise<number> {
  const t0 = nowMs();
  for (;;) {
    if ((await statusWithCert(port, path, ca, probe.cert, probe.key)) === 200) return nowMs() - t0;
    if (nowMs() - t0 > timeoutMs) throw new Error(`GET ${path} on port ${port}: no 200 within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/**
 * Starts our server (startFarmDirect) on the server core: ms from spawn to /readyz 200, and to the
 * first GET `listPath` answered 200 after that; then stops it.
 */
async function startOurs(main: string, kubeconfig: string, certDir: string, probe: { cert: string; key: string }, logFile: string, extraArgs: string[], listPath: string, node: string, env?: NodeJS.ProcessEnv): Promise<{ readyMs: number; firstListMs: number }> {
  const { server, port, readyMs } = await startFarmDirect({
    kubeconfig, certDir, probe, logFile, extraArgs, node, env, compiledMain: main, cpus: PIN ? SERVER_CPU : undefined,
  });
  try {
    return { readyMs, firstListMs: readyMs + await untilOk(port, listPath, join(certDir, 'ca.crt'), probe, 60_000) };
  } finally {
    await server.stop(8000);
  }
}
