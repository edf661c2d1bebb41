// Issue 11: server-side apply throughput and what metadata.managedFields cost on writes and LIST,
// each row against a peer measured in the same server run (interleaved rounds, medians of per-round
// ratios, the server process's CPU per request).
//
// The A/B for "without managedFields": the same objects, created the same way, whose managedFields
// were then reset by a merge patch of `metadata.managedFields: [{}]`. Upstream (and our
// fieldManager.ts, skipNonApplied) leaves an existing untracked object untracked on every later
// update or non-apply patch, so these objects stay without managedFields for the whole run; the
// suite checks that before and after measuring.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { Child, median } from '../lib/common.js';
import { llamaBody } from '../lib/llama.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import type { RunArgs, RunResult } from '../procs/loadgen.js';
import type { Ctx, Row, SuiteResult } from './types.js';

const API = '/apis/farm.example.com/v1alpha';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';
const coll = (ns: string) => `${API}/namespaces/${ns}/llamas`;
const LIST_COUNT = 1000;
/** Namespaces: LIST with and without managedFields, the update objects, the creates. */
const NS = { tracked: 'mf-tracked', untracked: 'mf-untracked', write: 'mf-write', create: 'mf-create' };

/** Client and server CPU, as bench/suites/http.ts measures them. */
interface Measured extends RunResult { serverCpuPct: number; serverCpuUsPerRequest: number }
const rps = (m: Measured) => m.rps;
const cpu = (m: Measured) => m.serverCpuUsPerRequest;

/** A load (loadgen RunArgs without the per-measurement parts). */
type Load = Omit<RunArgs, 'port' | 'caFile' | 'connections' | 'warmupMs' | 'durationMs'>;
interface Entry { who: string; load: Load }

/** The manifest a client applies or PUTs: llamaBody with spec.weight replaced by `weight` (a number or a template). */
function manifest(ns: string, name: string, weight: string, extraMeta: Record<string, unknown> = {}): string {
  const b = llamaBody(ns, name, 7);
  return JSON.stringify({ ...b, metadata: { ...b.metadata, ...extraMeta }, spec: { ...(b.spec as object), weight: 0 } }).replace('"weight":0', `"weight":${weight}`);
}

/** Setup requests (not measured) over one keep-alive TLS connection. */
class Client {
  private readonly agent: Agent;
  constructor(private readonly ctx: Ctx, private readonly port: number) {
    this.agent = new Agent({ keepAlive: true, maxSockets: 1, ca: readFileSync(join(ctx.certDir, 'ca.crt')) });
  }

  send(method: string, path: string, body?: string, contentType = 'application/json'): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1', port: this.port, servername: 'localhost', method, path, agent: this.agent, timeout: 30_000,
        headers: { authorization: `Bearer ${this.ctx.token}`, accept: 'application/json', 'user-agent': 'farm-bench', ...(body !== undefined && { 'content-type': contentType, 'content-length': Buffer.byteLength(body) }) },
      }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async must(status: number, method: string, path: string, body?: string, contentType?: string): Promise<KubeObject> {
    const r = await this.send(method, path, body, contentType);
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} (want ${status}): ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body) as KubeObject;
  }

  close(): void { this.agent.destroy(); }
}

export async function managedFieldsSuite(ctx: Ctx): Promise<SuiteResult> {
  const rounds = ctx.rounds ?? (ctx.quick ? 2 : 5);
  const warmupMs = ctx.quick ? 300 : 500;
  const durationMs = ctx.quick ? 1000 : 2000;
  const writeConns = 8;
  const rows: Row[] = [];
  const failures: string[] = [];
  const detail: Record<string, unknown> = { rounds, warmupMs, durationMs, failures };
  if (ctx.baseline) ctx.log('  note: managedfields measures ours only (no --baseline rows)');

  const srv = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir], { tree: ctx.ours });
  const lg = await Child.start('procs/loadgen.ts').catch(async (e) => { await srv.stop(); throw e; });
  const http = new Client(ctx, srv.info.port as number);
  const headers = (accept: string, contentType?: string) => ({ authorization: `Bearer ${ctx.token}`, accept, 'user-agent': 'farm-bench', ...(contentType && { 'content-type': contentType }) });

  async function measure(load: Load, connections: number, warm: number, duration: number): Promise<Measured> {
    const c0 = await srv.call<number>('cpu');
    const t0 = performance.now();
    const r = await lg.call<RunResult>('run', { ...load, port: srv.info.port, caFile: join(ctx.certDir, 'ca.crt'), connections, warmupMs: warm, durationMs: duration } satisfies RunArgs);
    const wall = performance.now() - t0;
    const c1 = await srv.call<number>('cpu');
    if (r.errors) throw new Error(`${load.method ?? 'GET'} ${load.path}: ${r.errors} errors, first: ${r.firstError}`);
    return { ...r, serverCpuPct: (100 * (c1 - c0)) / wall, serverCpuUsPerRequest: (1000 * (c1 - c0)) / r.totalRequests };
  }

  /** Every entry once per round, forward on even rounds and reversed on odd ones, after one untimed pass. */
  async function interleave(label: string, entries: Entry[], connections: number): Promise<Record<string, Measured[]>> {
    const got: Record<string, Measured[]> = Object.fromEntries(entries.map((e) => [e.who, []]));
    for (const e of entries) await measure(e.load, connections, 0, warmupMs * 3);
    for (let r = 0; r < rounds; r++) {
      for (const e of r % 2 === 0 ? entries : [...entries].reverse()) got[e.who].push(await measure(e.load, connections, warmupMs, durationMs));
      ctx.log(`  ${label} round ${r + 1}: ${entries.map((e) => `${e.who} ${got[e.who][r].rps.toFixed(0)} req/s ${got[e.who][r].serverCpuUsPerRequest.toFixed(0)} µs`).join(' / ')}`);
    }
    return got;
  }

  const ratio = (a: Measured[], b: Measured[], f: (m: Measured) => number) => median(a.map((m, i) => f(m) / f(b[i])));
  const perRound = (a: Measured[], b: Measured[], f: (m: Measured) => number) => a.map((m, i) => f(m) / f(b[i]));
  /** A requests/s row and a server-CPU row for ours vs peer. */
  function pairRows(bench: string, ours: Measured[], peer: Measured[], reading: string, opts: { rps?: boolean; note?: string } = {}): void {
    if (opts.rps !== false) {
      rows.push({ bench, metric: 'requests/s', unit: 'req/s', ours: median(ours.map(rps)), peer: median(peer.map(rps)), ratio: ratio(ours, peer, rps), reading: `${reading}; lower is slower`, ...(opts.note && { note: opts.note }) });
    }
    rows.push({ bench, metric: 'server CPU per request', unit: 'µs', ours: median(ours.map(cpu)), peer: median(peer.map(cpu)), ratio: ratio(ours, peer, cpu), reading: `${reading}; higher is costlier`, ...(opts.rps === false && opts.note && { note: opts.note }) });
  }
  /** The object's metadata as stored now (resourceVersion, managedFields). */
  const managedOf = async (path: string) => (await http.must(200, 'GET', path)).metadata;

  try {
    // --- Set-up, through the real API (not measured).
    ctx.log(`  set-up: ${2 * LIST_COUNT} llamas by POST, ${LIST_COUNT} of them reset with managedFields [{}]`);
    for (const ns of [NS.tracked, NS.untracked]) {
      for (let i = 0; i < LIST_COUNT; i++) {
        const name = `llama-${String(i).padStart(6, '0')}`;
        await http.must(201, 'POST', `${coll(ns)}?fieldManager=kubectl-create`, JSON.stringify(llamaBody(ns, name, i)));
        if (ns === NS.untracked) await http.must(200, 'PATCH', `${coll(ns)}/${name}`, '{"metadata":{"managedFields":[{}]}}', MERGE);
      }
    }
    // The update objects, one per connection and kind of write (an apply conflicts with another manager's change).
    const kinds = ['apply', 'noop', 'merge', 'put', 'putu'] as const;
    for (const k of kinds) {
      for (let c = 0; c < writeConns; c++) {
        const name = `${k}-${c}`;
        await http.must(201, 'POST', `${coll(NS.write)}?fieldManager=kubectl-create`, manifest(NS.write, name, '150'));
        // The appliers take spec.weight from kubectl-create once (force), as `kubectl apply --server-side --force-conflicts` would.
        if (k === 'apply' || k === 'noop') await http.must(200, 'PATCH', `${coll(NS.write)}/${name}?fieldManager=bench-apply&force=true`, manifest(NS.write, name, '151'), APPLY);
        if (k === 'putu') await http.must(200, 'PATCH', `${coll(NS.write)}/${name}`, '{"metadata":{"managedFields":[{}]}}', MERGE);
      }
    }
    const untrackedNow = async () => {
      const bad: string[] = [];
      for (const p of [`${coll(NS.untracked)}/llama-000000`, `${coll(NS.untracked)}/llama-000999`, `${coll(NS.write)}/putu-0`]) if ((await managedOf(p)).managedFields) bad.push(p);
      return bad;
    };
    const tracked0 = await managedOf(`${coll(NS.tracked)}/llama-000000`);
    if (!tracked0.managedFields?.length) throw new Error(`${coll(NS.tracked)}/llama-000000 has no managedFields after a POST`);
    const bad0 = await untrackedNow();
    if (bad0.length) throw new Error(`managedFields [{}] did not reset: ${bad0.join(', ')}`);
    detail.sampleManagedFields = { tracked: tracked0.managedFields, apply: (await managedOf(`${coll(NS.write)}/apply-0`)).managedFields };

    // --- LIST of 1000 with vs without managedFields; nothing writes meanwhile, so the JSON size is constant.
    const listLoad = (ns: string, accept: string): Load => ({ path: coll(ns), headers: headers(accept), sameSize: accept !== TABLE });
    for (const [label, accept] of [['JSON', 'application/json'], ['Table', TABLE]] as const) {
      const bench = `LIST ${LIST_COUNT} llamas (${label}), managedFields vs none`;
      ctx.log(`${bench}`);
      const got = await interleave(bench, [{ who: 'tracked', load: listLoad(NS.tracked, accept) }, { who: 'untracked', load: listLoad(NS.untracked, accept) }], 8);
      const [bt, bu] = [got.tracked[0].responseBytes, got.untracked[0].responseBytes];
      rows.push({ bench, metric: 'response bytes', unit: 'B', ours: bt, peer: bu, ratio: bt / bu, reading: 'with/without managedFields', note: `${((bt - bu) / LIST_COUNT).toFixed(0)} B more per llama` });
      pairRows(bench, got.tracked, got.untracked, 'with/without managedFields', { note: '8 keep-alive conns' });
      detail[bench] = { ...got, bytesPerObject: (bt - bu) / LIST_COUNT, ratios: perRound(got.tracked, got.untracked, rps), cpuRatios: perRound(got.tracked, got.untracked, cpu) };
    }

    // --- Updates of existing llamas, each request changing spec.weight ({{seq}}), except the no-op apply.
    const obj = (k: string) => `${coll(NS.write)}/${k}-{{conn}}`;
    const noopBody = manifest(NS.write, 'noop-{{conn}}', '151');
    const writes: Entry[] = [
      { who: 'apply', load: { method: 'PATCH', path: `${obj('apply')}?fieldManager=bench-apply`, body: manifest(NS.write, 'apply-{{conn}}', '{{seq}}'), headers: headers('application/json', APPLY), sameSize: false } },
      { who: 'merge', load: { method: 'PATCH', path: `${obj('merge')}?fieldManager=bench-merge`, body: '{"spec":{"weight":{{seq}}}}', headers: headers('application/json', MERGE), sameSize: false } },
      { who: 'put', load: { method: 'PUT', path: `${obj('put')}?fieldManager=bench-put`, body: manifest(NS.write, 'put-{{conn}}', '{{seq}}', { resourceVersion: '{{rv}}' }), headers: headers('application/json', 'application/json'), sameSize: false } },
      { who: 'putUntracked', load: { method: 'PUT', path: `${obj('putu')}?fieldManager=bench-put`, body: manifest(NS.write, 'putu-{{conn}}', '{{seq}}', { resourceVersion: '{{rv}}' }), headers: headers('application/json', 'application/json'), sameSize: false } },
      { who: 'noopApply', load: { method: 'PATCH', path: `${obj('noop')}?fieldManager=bench-apply`, body: noopBody, headers: headers('application/json', APPLY) } },
    ];
    const noopBefore = await managedOf(`${coll(NS.write)}/noop-0`);
    ctx.log(`updates: apply / merge patch / PUT / PUT untracked / no-op apply, ${writeConns} conns, one object per conn`);
    const w = await interleave('updates', writes, writeConns);
    const noopAfter = await managedOf(`${coll(NS.write)}/noop-0`);
    const noopWrote = noopBefore.resourceVersion !== noopAfter.resourceVersion;
    if (noopWrote) failures.push(`no-op apply wrote: resourceVersion ${noopBefore.resourceVersion} -> ${noopAfter.resourceVersion}`);
    const bad1 = await untrackedNow();
    if (bad1.length) failures.push(`untracked objects gained managedFields during the run: ${bad1.join(', ')}`);
    const applyManaged = await managedOf(`${coll(NS.write)}/apply-0`);
    const putManaged = await managedOf(`${coll(NS.write)}/put-0`);
    const objBytes = async (p: string) => (await http.send('GET', p)).body.length;
    const putBytes = { tracked: await objBytes(`${coll(NS.write)}/put-0`), untracked: await objBytes(`${coll(NS.write)}/putu-0`) };
    pairRows('Update by SSA apply vs JSON merge patch', w.apply, w.merge, 'apply/merge patch', { note: `the same change (spec.weight), ${writeConns} conns, one object each` });
    pairRows('Update by SSA apply vs PUT', w.apply, w.put, 'apply/PUT');
    pairRows('No-op apply (same body again) vs changing apply', w.noopApply, w.apply, 'no-op/changing apply', {
      rps: false, note: noopWrote ? 'WROTE (resourceVersion moved)' : `wrote nothing: resourceVersion of noop-0 stayed ${noopAfter.resourceVersion}`,
    });
    pairRows('PUT with managedFields vs untracked ([{}]-reset)', w.put, w.putUntracked, 'with/without managedFields', { note: `object ${putBytes.tracked} B vs ${putBytes.untracked} B` });
    detail.updates = {
      ...w, noopWrote, noopRv: [noopBefore.resourceVersion, noopAfter.resourceVersion], objectBytes: putBytes,
      managedFieldsAfter: { apply: applyManaged.managedFields, put: putManaged.managedFields },
    };

    // --- Creates: an apply to a missing name vs a POST, a new name per request; last, as they grow the store.
    const cap = ctx.quick ? 5_000 : 20_000;
    const creates: Entry[] = [
      { who: 'applyCreate', load: { method: 'PATCH', path: `${coll(NS.create)}/a-{{req}}?fieldManager=bench-apply`, body: manifest(NS.create, 'a-{{req}}', '150'), headers: headers('application/json', APPLY), expectStatus: [201], sameSize: false, maxRequests: cap } },
      { who: 'post', load: { method: 'POST', path: `${coll(NS.create)}?fieldManager=bench-create`, body: manifest(NS.create, 'c-{{seq}}', '150'), headers: headers('application/json', 'application/json'), expectStatus: [201], sameSize: false, maxRequests: cap } },
    ];
    ctx.log(`creates: apply to a new name vs POST, ${writeConns} conns`);
    const c = await interleave('creates', creates, writeConns);
    pairRows('Create by SSA apply vs POST', c.applyCreate, c.post, 'apply/POST', { note: `${writeConns} conns, a new name per request` });
    detail.creates = c;
  } finally {
    http.close();
    await lg.stop();
    await srv.stop();
  }
  return { rows, detail };
}
