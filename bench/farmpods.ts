// FarmPod benchmark against a real control plane: `npx tsx bench/farmpods.ts [--pods 5000] [--lists 100] [--patches 200]`.
//
// Starts etcd + kube-apiserver (no controller manager) with farm-apiserver behind the aggregator
// (test/cluster/farmCluster.ts), creates --pods Pods (they stay Pending: there are no nodes) and a
// few Llamas, then measures, each against a peer in the same run:
//   - LIST of all FarmPods (JSON and Table) straight from our server vs kube-apiserver's own LIST of
//     the same Pods, plus the FarmPod LIST through the aggregator (kube-apiserver → us). The three
//     clients are interleaved request by request, so background load hits them alike.
//   - watch delivery: --patches label patches to Pods, one every --pace-ms; time from the PATCH
//     response to the Pod event on kube-apiserver's watch, to the FarmPod event on our watch, and to
//     the FarmPod event through the aggregator; lost events.
//   - our server's RSS/heap from its /metrics (and kube-apiserver's from its /metrics).
// Prints a table and appends a "FarmPods" section to docs/benchmarks.md (--no-doc to skip).
// The machine is small and shared: read the ratios, not the absolute values.
import { readFileSync, existsSync, mkdirSync, appendFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request, type RequestOptions } from 'node:https';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LineReader } from '../src/apimachinery/ndjson.js';
import { startFarmCluster, type FarmCluster } from '../test/cluster/farmCluster.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '5000' },
    namespaces: { type: 'string', default: '10' },
    lists: { type: 'string', default: '100' },
    patches: { type: 'string', default: '200' },
    'pace-ms': { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '32' },
    'no-doc': { type: 'boolean', default: false },
  },
});
const N_PODS = Number(args.pods);
const N_NS = Number(args.namespaces);
const N_LISTS = Number(args.lists);
const N_PATCHES = Number(args.patches);
const PACE_MS = Number(args['pace-ms']);
const CONCURRENCY = Number(args.concurrency);
const COMMAND = `npx tsx bench/farmpods.ts${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}`;

const started = performance.now();
const log = (msg: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);

// ---------------------------------------------------------------- HTTP client (one code path for every target)

interface Target {
  name: string;
  base: string;
  agent: Agent;
  headers: Record<string, string>;
}

function target(name: string, base: string, tls: { ca: string; cert: string; key: string }, headers: Record<string, string> = {}): Target {
  const agent = new Agent({ keepAlive: true, maxSockets: 64, ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) });
  return { name, base, agent, headers };
}

interface Res { status: number; body: Buffer; ms: number; endAt: number; startAt: number }

function call(t: Target, method: string, path: string, opts: { body?: string; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Res> {
  return new Promise((res, rej) => {
    const startAt = performance.now();
    const o: RequestOptions = {
      method, agent: t.agent, timeout: opts.timeoutMs ?? 60_000,
      headers: { accept: 'application/json', ...t.headers, ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}), ...opts.headers },
    };
    const req = request(`${t.base}${path}`, o, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('error', rej);
      r.on('end', () => {
        const endAt = performance.now();
        res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks), ms: endAt - startAt, endAt, startAt });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${t.name} ${method} ${path}`)));
    req.on('error', rej);
    req.end(opts.body);
  });
}

async function callOk(t: Target, method: string, path: string, opts: Parameters<typeof call>[3] = {}, ok = [200, 201]): Promise<Res> {
  const r = await call(t, method, path, opts);
  if (!ok.includes(r.status)) throw new Error(`${t.name} ${method} ${path}: HTTP ${r.status}: ${r.body.toString('utf8').slice(0, 400)}`);
  return r;
}

const json = (r: Res) => JSON.parse(r.body.toString('utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A newline-delimited watch stream; calls onEvent with the arrival time of the chunk holding each event. */
function openWatch(t: Target, path: string, onEvent: (type: string, obj: Record<string, any>, at: number) => void): Promise<{ close(): void; ended: Promise<string> }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolveOpen, rejectOpen) => {
    let endedResolve!: (why: string) => void;
    const ended = new Promise<string>((r) => { endedResolve = r; });
    const req = request(`${t.base}${path}`, { method: 'GET', agent: false, ca: t.agent.options.ca, cert: t.agent.options.cert, key: t.agent.options.key, headers: { accept: 'application/json', ...t.headers } }, (r) => {
      if (r.statusCode !== 200) {
        let text = '';
        r.on('data', (c: Buffer) => { text += c.toString(); });
        r.on('end', () => rejectOpen(new Error(`watch ${t.name} ${path}: HTTP ${r.statusCode}: ${text.slice(0, 300)}`)));
        return;
      }
      const reader = new LineReader();
      r.on('data', (chunk: Buffer) => {
        const at = performance.now();
        for (const raw of reader.push(chunk)) {
          const line = raw.trim();
          if (!line) continue;
          const ev = JSON.parse(line) as { type: string; object: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
          onEvent(ev.type, ev.object, at);
        }
      });
      r.on('end', () => endedResolve('ended by server'));
      r.on('error', (e) => endedResolve(`error: ${e.message}`));
      resolveOpen({ close: () => req.destroy(), ended });
    });
    req.on('error', (e) => { endedResolve(`error: ${e.message}`); rejectOpen(e); });
    req.end();
  });
}

// ---------------------------------------------------------------- stats

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const mb = (b: number | undefined) => (b === undefined ? 'n/a' : `${(b / 2 ** 20).toFixed(0)} MiB`);

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

function parseMetrics(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9.eE+-]+|NaN)/.exec(line);
    if (m && !m[2]) out[m[1]] = Number(m[3]);
  }
  return out;
}

// ---------------------------------------------------------------- the run

interface MemSample { phase: string; ours: Record<string, number | undefined>; kube: Record<string, number | undefined> }

const loadStart = loadavg();
const dir = await mkdtemp(join(tmpdir(), 'farm-bench-farmpods-'));
let cluster: FarmCluster | undefined;
const failures: string[] = [];
try {
  log(`starting the farm cluster in ${dir} (pods=${N_PODS}, namespaces=${N_NS}, lists=${N_LISTS}, patches=${N_PATCHES} every ${PACE_MS} ms)`);
  cluster = await startFarmCluster({ dir, withControllerManager: false, log });
  const { cp } = cluster;
  const admin = cp.clientCert('admin');
  const kube = target('kube-apiserver', cp.apiserverUrl, { ca: cp.clusterCa, ...admin });
  const ours = target('farm-apiserver', `https://127.0.0.1:${cluster.farmPort}`,
    { ca: join(cluster.farmCertDir, 'ca.crt'), cert: cp.frontProxy.clientCert, key: cp.frontProxy.clientKey },
    { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' });
  const agg = { ...kube, name: 'aggregator' }; // kube-apiserver → us; same agent as kube

  // ------------------------------------------------ 1. namespaces, llamas, pods
  const namespaces = Array.from({ length: N_NS }, (_, i) => `bench-${String(i).padStart(2, '0')}`);
  for (const ns of namespaces) {
    await callOk(kube, 'POST', '/api/v1/namespaces', { body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }), headers: { 'content-type': 'application/json' } });
  }
  const llamaNames = ['dolly', 'kuzco', 'tina'];
  const colors = ['white', 'brown', 'spotted'];
  for (const ns of namespaces) {
    for (const [i, name] of llamaNames.entries()) {
      await callOk(agg, 'POST', `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`, {
        body: JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 120 + 10 * i, height: 1.7, color: colors[i] } }),
        headers: { 'content-type': 'application/json' },
      });
    }
  }
  log(`created ${namespaces.length} namespaces and ${namespaces.length * llamaNames.length} llamas (through the aggregator)`);

  const memSamples: MemSample[] = [];
  const sampleMem = async (phase: string) => {
    const pick = (m: Record<string, number>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, m[k]]));
    let o: Record<string, number> = {};
    let k: Record<string, number> = {};
    try { const r = await call(ours, 'GET', '/metrics', { headers: { accept: 'text/plain' } }); if (r.status === 200) o = parseMetrics(r.body.toString()); else log(`our /metrics: HTTP ${r.status}`); } catch (e) { log(`our /metrics: ${(e as Error).message}`); }
    try { const r = await call(kube, 'GET', '/metrics', { headers: { accept: 'text/plain' } }); if (r.status === 200) k = parseMetrics(r.body.toString()); } catch { /* skip */ }
    memSamples.push({
      phase,
      ours: pick(o, ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes']),
      kube: pick(k, ['process_resident_memory_bytes', 'go_memstats_heap_inuse_bytes']),
    });
  };
  await sampleMem('before any pod (llamas only)');

  const pods = Array.from({ length: N_PODS }, (_, i) => ({ ns: namespaces[i % N_NS], name: `pod-${String(i).padStart(5, '0')}`, i }));
  const podBody = (p: { name: string; i: number }) => {
    const labels: Record<string, string> = { app: `app-${p.i % 20}`, tier: ['web', 'api', 'db'][p.i % 3], 'bench.farm.example.com/shard': String(p.i % 7) };
    // 30% tend a llama that exists, 5% a llama that does not
    if (p.i % 20 < 6) labels['farm.example.com/llama'] = llamaNames[p.i % llamaNames.length];
    else if (p.i % 20 === 6) labels['farm.example.com/llama'] = 'ghost';
    return JSON.stringify({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: p.name, labels },
      spec: { containers: [{ name: 'app', image: 'registry.example.com/app:1.0', resources: { requests: { cpu: '10m', memory: '16Mi' } } }, { name: 'sidecar', image: 'registry.example.com/sidecar:2.3' }] },
    });
  };
  const createStart = performance.now();
  let createErrors = 0;
  await pool(pods, CONCURRENCY, async (p) => {
    const r = await call(kube, 'POST', `/api/v1/namespaces/${p.ns}/pods`, { body: podBody(p), headers: { 'content-type': 'application/json' } });
    if (r.status !== 201) { createErrors++; if (createErrors <= 3) log(`create ${p.ns}/${p.name}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`); }
  });
  const createS = (performance.now() - createStart) / 1000;
  if (createErrors) throw new Error(`${createErrors} pod creations failed`);
  log(`created ${N_PODS} pods in ${f(createS)} s (${f(N_PODS / createS, 0)}/s, ${CONCURRENCY} concurrent POSTs)`);

  // ------------------------------------------------ 2. wait for our cache
  const countOurs = async () => {
    const r = await callOk(ours, 'GET', '/apis/farm.example.com/v1alpha/farmpods?limit=1');
    const b = json(r);
    return (b.items?.length ?? 0) + (b.metadata?.remainingItemCount ?? 0);
  };
  let seen = 0;
  const deadline = Date.now() + 60_000;
  while ((seen = await countOurs()) < N_PODS) {
    if (Date.now() > deadline) throw new Error(`our server has only ${seen}/${N_PODS} FarmPods after 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const visibleS = (performance.now() - createStart) / 1000;
  const lagS = visibleS - createS;
  const fullOurs = json(await callOk(ours, 'GET', '/apis/farm.example.com/v1alpha/farmpods'));
  const fullKube = json(await callOk(kube, 'GET', '/api/v1/pods'));
  const kubeBench = (fullKube.items as { metadata: { namespace: string } }[]).filter((p) => p.metadata.namespace.startsWith('bench-')).length;
  if (fullOurs.items.length !== N_PODS || kubeBench !== N_PODS || fullKube.items.length !== N_PODS) {
    throw new Error(`item counts differ: ours ${fullOurs.items.length}, kube ${fullKube.items.length} (${kubeBench} in bench namespaces), want ${N_PODS}`);
  }
  const withLlama = (fullOurs.items as { status?: { llama?: { found: boolean } } }[]).filter((o) => o.status?.llama?.found).length;
  log(`our server lists ${N_PODS} FarmPods ${f(lagS, 2)} s after the last create returned (${withLlama} with a found llama)`);

  await new Promise((r) => setTimeout(r, 2000));
  await sampleMem(`idle, ${N_PODS} pods cached`);

  // ------------------------------------------------ 3. LIST latency
  const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
  const FARMPODS = '/apis/farm.example.com/v1alpha/farmpods';
  const listCases = [
    { key: 'ours-json', t: ours, path: FARMPODS, accept: 'application/json' },
    { key: 'kube-json', t: kube, path: '/api/v1/pods', accept: 'application/json' },
    { key: 'agg-json', t: agg, path: FARMPODS, accept: 'application/json' },
    { key: 'ours-table', t: ours, path: FARMPODS, accept: TABLE },
    { key: 'kube-table', t: kube, path: '/api/v1/pods', accept: TABLE },
    { key: 'agg-table', t: agg, path: FARMPODS, accept: TABLE },
  ];
  const lat: Record<string, number[]> = Object.fromEntries(listCases.map((c) => [c.key, []]));
  const bytes: Record<string, number> = {};
  const rows: Record<string, number> = {};
  for (const c of listCases) { // warm-up (JIT, TLS sessions, caches); also checks the answers
    for (let i = 0; i < 5; i++) {
      const r = await callOk(c.t, 'GET', c.path, { headers: { accept: c.accept } });
      bytes[c.key] = r.body.length;
      if (i === 0) {
        const b = json(r);
        rows[c.key] = b.kind === 'Table' ? b.rows.length : b.items.length;
        if (rows[c.key] !== N_PODS) throw new Error(`${c.key}: ${rows[c.key]} rows/items, want ${N_PODS}`);
      }
    }
  }
  log(`LIST: ${N_LISTS} sequential requests per case, the ${listCases.length} cases interleaved request by request`);
  const listStart = performance.now();
  for (let i = 0; i < N_LISTS; i++) {
    const order = i % 2 === 0 ? listCases : [...listCases].reverse(); // no case always follows the same one
    for (const c of order) {
      const r = await callOk(c.t, 'GET', c.path, { headers: { accept: c.accept } });
      lat[c.key].push(r.ms);
    }
    if ((i + 1) % 25 === 0) log(`  ${i + 1}/${N_LISTS}: p50 so far ours-json ${f(pct(lat['ours-json'], 50))} ms, kube-json ${f(pct(lat['kube-json'], 50))} ms, agg-json ${f(pct(lat['agg-json'], 50))} ms`);
  }
  log(`LIST phase took ${f((performance.now() - listStart) / 1000)} s`);
  await sampleMem(`after ${N_LISTS * listCases.length} LISTs`);

  // ------------------------------------------------ 4. watch delivery latency
  const rvOf = async (t: Target, path: string) => String(json(await callOk(t, 'GET', `${path}?limit=1`)).metadata.resourceVersion);
  type Seen = Map<string, number>;
  const seenKube: Seen = new Map(), seenOurs: Seen = new Map(), seenAgg: Seen = new Map();
  const dup = { kube: 0, ours: 0, agg: 0 };
  const other: string[] = [];
  const onEv = (which: 'kube' | 'ours' | 'agg', m: Seen) => (type: string, obj: Record<string, any>, at: number) => { // eslint-disable-line @typescript-eslint/no-explicit-any
    if (type !== 'MODIFIED') { other.push(`${which}: ${type} ${obj?.metadata?.name ?? JSON.stringify(obj).slice(0, 200)}`); return; }
    const seq = obj.metadata?.labels?.['bench.farm.example.com/seq'];
    if (seq === undefined) return;
    const key = `${obj.metadata.namespace}/${obj.metadata.name}#${seq}`;
    if (m.has(key)) dup[which]++; else m.set(key, at);
  };
  const kubeRv = await rvOf(kube, '/api/v1/pods');
  const oursRv = await rvOf(ours, FARMPODS);
  const wKube = await openWatch(kube, `/api/v1/pods?watch=1&resourceVersion=${kubeRv}&timeoutSeconds=600`, onEv('kube', seenKube));
  const wOurs = await openWatch(ours, `${FARMPODS}?watch=1&resourceVersion=${oursRv}&timeoutSeconds=600`, onEv('ours', seenOurs));
  const wAgg = await openWatch(agg, `${FARMPODS}?watch=1&resourceVersion=${oursRv}&timeoutSeconds=600`, onEv('agg', seenAgg));
  await new Promise((r) => setTimeout(r, 500));
  const patched: { key: string; sentAt: number; respAt: number }[] = [];
  const step = Math.max(1, Math.floor(N_PODS / N_PATCHES));
  const targets = Array.from({ length: N_PATCHES }, (_, i) => pods[(i * step + 3) % N_PODS]);
  log(`watch: patching ${N_PATCHES} pods one by one, one every ${PACE_MS} ms`);
  const t0 = performance.now();
  let patchErrors = 0;
  for (const [i, p] of targets.entries()) {
    const due = t0 + i * PACE_MS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const r = await call(kube, 'PATCH', `/api/v1/namespaces/${p.ns}/pods/${p.name}`, {
      body: JSON.stringify({ metadata: { labels: { 'bench.farm.example.com/seq': String(i) } } }),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    if (r.status !== 200) { patchErrors++; continue; }
    patched.push({ key: `${p.ns}/${p.name}#${i}`, sentAt: r.startAt, respAt: r.endAt });
  }
  const patchSpanS = (performance.now() - t0) / 1000;
  const allSeen = () => patched.every((p) => seenKube.has(p.key) && seenOurs.has(p.key) && seenAgg.has(p.key));
  const graceEnd = performance.now() + 10_000;
  while (!allSeen() && performance.now() < graceEnd) await new Promise((r) => setTimeout(r, 50));
  wKube.close(); wOurs.close(); wAgg.close();
  if (patchErrors) failures.push(`${patchErrors} PATCHes failed`);
  const delays = (m: Seen, from: 'respAt' | 'sentAt') => patched.filter((p) => m.has(p.key)).map((p) => m.get(p.key)! - p[from]);
  const lost = { kube: patched.filter((p) => !seenKube.has(p.key)).length, ours: patched.filter((p) => !seenOurs.has(p.key)).length, agg: patched.filter((p) => !seenAgg.has(p.key)).length };
  const oursMinusKube = patched.filter((p) => seenKube.has(p.key) && seenOurs.has(p.key)).map((p) => seenOurs.get(p.key)! - seenKube.get(p.key)!);
  const w = {
    kube: delays(seenKube, 'respAt'), ours: delays(seenOurs, 'respAt'), agg: delays(seenAgg, 'respAt'),
    kubeSent: delays(seenKube, 'sentAt'), oursSent: delays(seenOurs, 'sentAt'), aggSent: delays(seenAgg, 'sentAt'),
  };
  const patchRtt = patched.map((p) => p.respAt - p.sentAt);
  for (const [k, v] of Object.entries(lost)) if (v) failures.push(`${v} ${k} watch events lost`);
  for (const [k, v] of Object.entries(dup)) if (v) failures.push(`${v} duplicate ${k} watch events`);
  if (other.length) failures.push(`unexpected watch events: ${other.slice(0, 5).join('; ')}`);
  log(`watch: ${patched.length} patches in ${f(patchSpanS)} s; lost kube=${lost.kube} ours=${lost.ours} agg=${lost.agg}`);
  await sampleMem('after the watch phase');

  // ------------------------------------------------ 5. report
  const ratio = (a: string, b: string, p: number) => pct(lat[a], p) / pct(lat[b], p);
  type Line = [string, string, string, string, string];
  const listLine = (label: string, key: string, peer?: string): Line => [
    label, f(pct(lat[key], 50)), f(pct(lat[key], 99)), `${(bytes[key] / 1e6).toFixed(2)} MB`,
    peer ? `p50 ×${f(ratio(key, peer, 50), 2)}, p99 ×${f(ratio(key, peer, 99), 2)} vs kube` : '',
  ];
  const listTable: Line[] = [
    listLine(`FarmPods JSON, direct (ours)`, 'ours-json', 'kube-json'),
    listLine(`Pods JSON, kube-apiserver (peer)`, 'kube-json'),
    listLine(`FarmPods JSON, via aggregator`, 'agg-json', 'kube-json'),
    listLine(`FarmPods Table, direct (ours)`, 'ours-table', 'kube-table'),
    listLine(`Pods Table, kube-apiserver (peer)`, 'kube-table'),
    listLine(`FarmPods Table, via aggregator`, 'agg-table', 'kube-table'),
  ];
  const watchLine = (label: string, xs: number[], sent: number[], l: number): Line => [label, f(pct(xs, 50)), f(pct(xs, 99)), f(pct(sent, 50)) + ' / ' + f(pct(sent, 99)), String(l)];
  const watchTable: Line[] = [
    watchLine('Pod watch, kube-apiserver (peer)', w.kube, w.kubeSent, lost.kube),
    watchLine('FarmPod watch, direct (ours)', w.ours, w.oursSent, lost.ours),
    watchLine('FarmPod watch, via aggregator', w.agg, w.aggSent, lost.agg),
  ];
  const mdTable = (header: string[], body: string[][]) => [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  const listHeader = [`LIST all ${N_PODS} (${N_LISTS} sequential each)`, 'p50 ms', 'p99 ms', 'response', 'ratio'];
  const watchHeader = [`watch delivery (${patched.length} label PATCHes, 1 per ${PACE_MS} ms)`, 'p50 ms after PATCH response', 'p99 ms', 'p50 / p99 ms after PATCH sent', 'lost'];
  const memHeader = ['memory (/metrics)', 'ours RSS', 'ours heap used / total', 'ours external', 'kube-apiserver RSS', 'kube-apiserver Go heap in use'];
  const memTable = memSamples.map((m) => [m.phase, mb(m.ours.process_resident_memory_bytes), `${mb(m.ours.nodejs_heap_size_used_bytes)} / ${mb(m.ours.nodejs_heap_size_total_bytes)}`,
    mb(m.ours.nodejs_external_memory_bytes), mb(m.kube.process_resident_memory_bytes), mb(m.kube.go_memstats_heap_inuse_bytes)]);
  const haveOurMem = memSamples.some((m) => m.ours.process_resident_memory_bytes !== undefined);

  const plain = (header: string[], body: string[][]) => {
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
    return [header, ...body].map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ')).join('\n');
  };
  const loadEnd = loadavg();
  const extra = [
    `setup: ${N_PODS} pods in ${N_NS} namespaces created in ${f(createS)} s (${f(N_PODS / createS, 0)}/s); all ${N_PODS} listed by our server (polled every 100 ms) ${f(lagS, 2)} s after the last create returned; ${withLlama} FarmPods embed a found llama`,
    ...(memSamples[0]?.ours.nodejs_heap_size_used_bytes !== undefined && memSamples[1]?.ours.nodejs_heap_size_used_bytes !== undefined
      ? [`our heap used grew ${mb(memSamples[1].ours.nodejs_heap_size_used_bytes - memSamples[0].ours.nodejs_heap_size_used_bytes)} from no pods to ${N_PODS} cached (≈${f((memSamples[1].ours.nodejs_heap_size_used_bytes - memSamples[0].ours.nodejs_heap_size_used_bytes) / N_PODS / 1024)} KiB per pod, garbage included; a Pod is ${f(bytes['kube-json'] / N_PODS / 1024, 2)} KiB of JSON, a FarmPod ${f(bytes['ours-json'] / N_PODS / 1024, 2)} KiB)`]
      : []),
    `PATCH round trip: p50 ${f(pct(patchRtt, 50))} ms, p99 ${f(pct(patchRtt, 99))} ms; our FarmPod event minus kube's Pod event for the same change: p50 ${f(pct(oursMinusKube, 50))} ms, p99 ${f(pct(oursMinusKube, 99))} ms, max ${f(Math.max(...oursMinusKube))} ms`,
    `LIST means: ours-json ${f(mean(lat['ours-json']))} ms, kube-json ${f(mean(lat['kube-json']))} ms, agg-json ${f(mean(lat['agg-json']))} ms, ours-table ${f(mean(lat['ours-table']))} ms, kube-table ${f(mean(lat['kube-table']))} ms, agg-table ${f(mean(lat['agg-table']))} ms`,
    `load average: ${loadStart.map((x) => x.toFixed(2)).join(' ')} at start, ${loadEnd.map((x) => x.toFixed(2)).join(' ')} at end; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`,
    `total run time: ${f((performance.now() - started) / 1000)} s`,
  ];

  console.log('\n' + plain(listHeader, listTable) + '\n\n' + plain(watchHeader, watchTable) + '\n');
  if (haveOurMem) console.log(plain(memHeader, memTable) + '\n');
  else console.log('memory: our /metrics has no process_resident_memory_bytes; skipped\n');
  for (const e of extra) console.log(e);
  if (failures.length) console.log(`\nFAILURES:\n  ${failures.join('\n  ')}`);

  if (!args['no-doc']) {
    const docPath = join(REPO, 'docs/benchmarks.md');
    mkdirSync(dirname(docPath), { recursive: true });
    if (!existsSync(docPath)) writeFileSync(docPath, '# Benchmarks\n');
    const prev = readFileSync(docPath, 'utf8');
    const section = [
      '', `## FarmPods (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC)`, '',
      `Command: \`${COMMAND}\` — a real etcd 3.5 + kube-apiserver v1.33 (no controller manager, no nodes: every Pod stays Pending) ` +
      `with farm-apiserver registered behind the aggregator, on a ${cpus().length}-core machine shared with other work (read the ratios, not the absolute values). ` +
      `"Direct" calls go to our server with the front-proxy client cert (X-Remote-User admin, system:masters); kube-apiserver is called with the admin client cert; ` +
      `"via aggregator" is kube-apiserver proxying to us. Same Node HTTPS client (keep-alive) for all; time = request start to last byte. ` +
      `The LIST cases are interleaved request by request after 5 warm-up requests each. Table = \`Accept: application/json;as=Table;v=v1;g=meta.k8s.io\` (includeObject=Metadata, as kubectl asks).`,
      '', mdTable(listHeader, listTable), '',
      `Watch: a Pod watch on kube-apiserver, a FarmPod watch on our server and one through the aggregator, all from the list's resourceVersion; ` +
      `merge-PATCHes of one label on ${patched.length} different pods, sequential, one started every ${PACE_MS} ms; latency = time the event's chunk arrived − time the PATCH response ended ` +
      '(can be negative: an event may overtake the PATCH response).', '',
      mdTable(watchHeader, watchTable), '',
      ...(haveOurMem ? [mdTable(memHeader, memTable), ''] : ['Memory: our /metrics had no process metrics; skipped.', '']),
      ...extra.map((e) => `- ${e}`),
      ...(failures.length ? ['', `**Failures:** ${failures.join('; ')}`] : []),
      '',
    ].join('\n');
    appendFileSync(docPath, (prev.endsWith('\n') ? '' : '\n') + section);
    log(`appended the FarmPods section to ${docPath}`);
  }
} finally {
  if (cluster) {
    log('stopping the cluster');
    await cluster.stop().catch((e) => log(`stop failed: ${(e as Error).message}`));
  }
  if (process.env.FARM_KEEP_CLUSTER_DIR) log(`kept ${dir}`);
  else await rm(dir, { recursive: true, force: true });
}
if (failures.length) process.exitCode = 1;
