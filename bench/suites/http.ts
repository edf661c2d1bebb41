// Benchmarks 1 and 2: requests/s of GET one llama and LIST 1000 llamas (JSON and Table) through the
// real HTTPS server, each against a static route on the same fastify instance returning the same bytes.
// With --baseline, the same requests to the server at that commit join each round.
import { cpus } from 'node:os';
import { join } from 'node:path';
import { Child, median } from '../lib/common.js';
import { pin } from '../peers/procStat.js';
import type { RunResult } from '../procs/loadgen.js';
import type { Ctx, Row, SuiteResult } from './types.js';

const API = '/apis/farm.example.com/v1alpha';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

interface Target { path: string; accept: string }

/**
 * Servers on CPU 1, the load generator on CPU 0 (as the peers suite): unpinned, two servers of one
 * comparison were seen at 93–97 % and 101–106 % CPU on the same path, and the GET row swung 0.57–0.80.
 */
const PIN = cpus().length >= 2;
const SERVER_CPU = '1';
const CLIENT_CPU = '0';

async function started(script: string, args: string[], opts: Parameters<typeof Child.start>[2], cpu: string): Promise<Child> {
  const child = await Child.start(script, args, opts);
  if (PIN && child.proc.pid !== undefined && !pin(child.proc.pid, cpu)) throw new Error(`cannot pin ${script} to CPU ${cpu}`);
  return child;
}
const server = (args: string[], opts: Parameters<typeof Child.start>[2] = {}) => started('procs/farmServer.ts', args, opts, SERVER_CPU);
const loadGenerator = () => started('procs/loadgen.ts', [], {}, CLIENT_CPU);
interface Pair { bench: string; ours: Target; peer: Target; connections: number }

interface Measured extends RunResult { serverCpuPct: number; serverCpuUsPerRequest: number }
const rps = (m: Measured) => m.rps;
const cpu = (m: Measured) => m.serverCpuUsPerRequest;

async function measure(srv: Child, lg: Child, ctx: Ctx, t: Target, connections: number, warmupMs: number, durationMs: number): Promise<Measured> {
  const c0 = await srv.call<number>('cpu');
  const t0 = performance.now();
  const r = await lg.call<RunResult>('run', {
    port: srv.info.port, path: t.path, caFile: join(ctx.certDir, 'ca.crt'), connections, warmupMs, durationMs,
    headers: { authorization: `Bearer ${ctx.token}`, accept: t.accept, 'user-agent': 'farm-bench' },
  });
  const wall = performance.now() - t0;
  const c1 = await srv.call<number>('cpu');
  if (r.errors) throw new Error(`${t.path}: ${r.errors} errors, first: ${r.firstError}`);
  return { ...r, serverCpuPct: (100 * (c1 - c0)) / wall, serverCpuUsPerRequest: (1000 * (c1 - c0)) / r.totalRequests };
}

interface Entry { who: string; srv: Child; t: Target }

/**
 * Measures every entry once per round for `rounds` rounds, in forward order on even rounds and
 * reversed on odd ones (ABBA…, or ABC CBA… with a baseline), each after an untimed warm-up.
 */
async function interleave(entries: Entry[], lg: Child, ctx: Ctx, connections: number, rounds: number, warmupMs: number, durationMs: number, label: string): Promise<Record<string, Measured[]>> {
  const got: Record<string, Measured[]> = Object.fromEntries(entries.map((e) => [e.who, []]));
  // Untimed first: the first seconds of a route run colder code (JIT) and would bias round 1.
  for (const e of entries) await measure(e.srv, lg, ctx, e.t, connections, 0, warmupMs * 3);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? entries : [...entries].reverse();
    for (const e of order) got[e.who].push(await measure(e.srv, lg, ctx, e.t, connections, warmupMs, durationMs));
    const at = (who: string) => got[who][r];
    ctx.log(`  ${label} round ${r + 1}: ${entries.map((e) => `${e.who} ${at(e.who).rps.toFixed(0)}`).join(' / ')} req/s (server CPU ${entries.map((e) => `${at(e.who).serverCpuPct.toFixed(0)}%`).join(' / ')}, client CPU ${entries.map((e) => `${at(e.who).clientCpuPct.toFixed(0)}%`).join(' / ')})`);
  }
  return got;
}

/** The median over rounds of a/b, where a and b come from the same round. */
const roundRatio = (a: Measured[], b: Measured[], f: (m: Measured) => number) => median(a.map((m, i) => f(m) / f(b[i])));
const perRound = (a: Measured[], b: Measured[], f: (m: Measured) => number) => a.map((m, i) => f(m) / f(b[i]));

export async function httpSuite(ctx: Ctx): Promise<SuiteResult> {
  const rounds = ctx.rounds ?? (ctx.quick ? 2 : 5);
  const warmupMs = ctx.quick ? 300 : 500;
  const durationMs = ctx.quick ? 1000 : 2000;
  const rows: Row[] = [];
  const detail: Record<string, unknown> = { rounds, warmupMs, durationMs, pinned: PIN ? `servers on CPU ${SERVER_CPU}, load generator on CPU ${CLIENT_CPU}` : 'not pinned (fewer than 2 CPUs)' };

  const srv = await server(['--cert-dir', ctx.certDir], { tree: ctx.ours });
  // With --baseline: the same server at that commit, running alongside, measured in the same rounds.
  const base = ctx.baseline ? await server(['--cert-dir', ctx.certDir], { tree: ctx.baseline }).catch(async (e) => { await srv.stop(); throw e; }) : undefined;
  const lg = await loadGenerator();
  try {
    for (const s of base ? [srv, base] : [srv]) {
      await s.call('seed', { namespace: 'bench', count: 1 });
      await s.call('seed', { namespace: 'bench-list', count: 1000, createdYearsAgo: 9 });
    }
    const one = `${API}/namespaces/bench/llamas/llama-000000`;
    const list = `${API}/namespaces/bench-list/llamas`;
    const sizes = {
      one: await srv.call('capture', { name: 'one', path: one, accept: 'application/json' }),
      list: await srv.call('capture', { name: 'list', path: list, accept: 'application/json' }),
      table: await srv.call('capture', { name: 'table', path: list, accept: TABLE }),
    };
    detail.responses = sizes;
    if (base) {
      // The same captures on the baseline: both servers have run the same requests before the rounds.
      const baseSizes = {
        one: await base.call('capture', { name: 'one', path: one, accept: 'application/json' }),
        list: await base.call('capture', { name: 'list', path: list, accept: 'application/json' }),
        table: await base.call('capture', { name: 'table', path: list, accept: TABLE }),
      };
      detail.baselineResponses = baseSizes;
      for (const k of ['one', 'list', 'table'] as const) {
        const [a, b] = [sizes[k] as { bytes: number }, baseSizes[k] as { bytes: number }];
        if (a.bytes !== b.bytes) ctx.log(`  note: ${k}: ${a.bytes} B now, ${b.bytes} B at ${ctx.baseline!.label}`);
      }
    }
    const pairs: Pair[] = [
      { bench: 'GET one llama', ours: { path: one, accept: 'application/json' }, peer: { path: '/bench/static/one', accept: 'application/json' }, connections: 16 },
      { bench: 'LIST 1000 llamas (JSON)', ours: { path: list, accept: 'application/json' }, peer: { path: '/bench/static/list', accept: 'application/json' }, connections: 8 },
      { bench: 'LIST 1000 llamas (Table)', ours: { path: list, accept: TABLE }, peer: { path: '/bench/static/table', accept: TABLE }, connections: 8 },
    ];
    for (const p of pairs) {
      ctx.log(`${p.bench}: ${p.ours.path} vs ${p.peer.path}${base ? ` vs the same path at ${ctx.baseline!.label}` : ''}`);
      const entries: Entry[] = [{ who: 'ours', srv, t: p.ours }, { who: 'peer', srv, t: p.peer }];
      if (base) entries.push({ who: 'baseline', srv: base, t: p.ours });
      const got = await interleave(entries, lg, ctx, p.connections, rounds, warmupMs, durationMs, p.bench);
      const c = {
        ours: got.ours, peer: got.peer, baseline: got.baseline,
        ratio: roundRatio(got.ours, got.peer, rps), ratios: perRound(got.ours, got.peer, rps),
        cpuRatio: roundRatio(got.ours, got.peer, cpu), cpuRatios: perRound(got.ours, got.peer, cpu),
      };
      const oursRps = median(c.ours.map((m) => m.rps));
      const peerRps = median(c.peer.map((m) => m.rps));
      const bytes = c.ours[0].responseBytes;
      rows.push({
        bench: p.bench, metric: 'requests/s', unit: 'req/s', ours: oursRps, peer: peerRps, ratio: c.ratio,
        reading: 'ours/static; 1.0 = no cost beyond fastify+TLS+auth hook, lower is slower',
        note: `${bytes} B/response, ${p.connections} keep-alive conns; p50 latency ${median(c.ours.map((m) => m.latencyMs.p50)).toFixed(2)} vs ${median(c.peer.map((m) => m.latencyMs.p50)).toFixed(2)} ms`,
        ...(base && { baseline: { value: median(got.baseline.map(rps)), ratio: roundRatio(got.ours, got.baseline, rps), better: 'higher' as const } }),
      });
      rows.push({
        bench: p.bench, metric: 'server CPU per request', unit: 'µs',
        ours: median(c.ours.map(cpu)), peer: median(c.peer.map(cpu)), ratio: c.cpuRatio,
        reading: 'ours/static; higher is costlier (steadier than req/s on a busy machine)',
        ...(base && { baseline: { value: median(got.baseline.map(cpu)), ratio: roundRatio(got.ours, got.baseline, cpu), better: 'lower' as const } }),
      });
      detail[p.bench] = base ? { ...c, baselineRatios: perRound(got.ours, got.baseline, rps), baselineCpuRatios: perRound(got.ours, got.baseline, cpu) } : c;
    }
  } finally {
    await lg.stop();
    await srv.stop();
    await base?.stop();
  }

  if (!ctx.quick) {
    // The server's default --log-level is info, which logs every request (fastify request logging).
    ctx.log(`GET one llama: --log-level info (stdout → /dev/null) vs silent${ctx.baseline ? ` vs info at ${ctx.baseline.label}` : ''}`);
    const infoArgs = ['--cert-dir', ctx.certDir, '--log-level', 'info'];
    const srvInfo = await server(infoArgs, { silent: true, tree: ctx.ours });
    const srvSilent = await server(['--cert-dir', ctx.certDir], { tree: ctx.ours });
    const baseInfo = ctx.baseline ? await server(infoArgs, { silent: true, tree: ctx.baseline }) : undefined;
    const lg2 = await loadGenerator();
    try {
      const t: Target = { path: `${API}/namespaces/bench/llamas/llama-000000`, accept: 'application/json' };
      const entries: Entry[] = [{ who: 'info', srv: srvInfo, t }, { who: 'silent', srv: srvSilent, t }];
      if (baseInfo) entries.push({ who: 'baseline', srv: baseInfo, t });
      for (const e of entries) await e.srv.call('seed', { namespace: 'bench', count: 1 });
      const got = await interleave(entries, lg2, ctx, 16, rounds, warmupMs, durationMs, 'log level');
      const { info, silent } = got;
      const ratios = perRound(info, silent, rps);
      rows.push({
        bench: 'GET one llama, --log-level info', metric: 'requests/s', unit: 'req/s',
        ours: median(info.map(rps)), peer: median(silent.map(rps)), ratio: median(ratios),
        reading: 'info/silent; lower is slower', note: 'peer = same server at log level silent; logs go to /dev/null (a pipe costs more)',
        ...(baseInfo && { baseline: { value: median(got.baseline.map(rps)), ratio: roundRatio(info, got.baseline, rps), better: 'higher' as const } }),
      });
      detail['GET one llama, log level info vs silent'] = { info, silent, ratios, ...(baseInfo && { baseline: got.baseline, baselineRatios: perRound(info, got.baseline, rps) }) };
    } finally {
      await lg2.stop();
      await srvInfo.stop();
      await srvSilent.stop();
      await baseInfo?.stop();
    }
    rows.push(...await metricsCost(ctx, rounds, warmupMs, durationMs, detail));
  }
  return { rows, detail };
}

/**
 * main.ts always serves /metrics, so every request feeds farm_* and kube's apiserver_* families; the
 * rows above run without them (comparable with older baselines). This pair prices them: the same GET
 * with and without the metrics hooks, in one tree.
 */
async function metricsCost(ctx: Ctx, rounds: number, warmupMs: number, durationMs: number, detail: Record<string, unknown>): Promise<Row[]> {
  ctx.log('GET one llama: with request metrics (as main.ts) vs without');
  const withMetrics = await server(['--cert-dir', ctx.certDir, '--metrics'], { tree: ctx.ours });
  const without = await server(['--cert-dir', ctx.certDir], { tree: ctx.ours });
  const lg = await loadGenerator();
  try {
    const t: Target = { path: `${API}/namespaces/bench/llamas/llama-000000`, accept: 'application/json' };
    const entries: Entry[] = [{ who: 'metrics', srv: withMetrics, t }, { who: 'none', srv: without, t }];
    for (const e of entries) await e.srv.call('seed', { namespace: 'bench', count: 1 });
    const got = await interleave(entries, lg, ctx, 16, rounds, warmupMs, durationMs, 'metrics');
    detail['GET one llama, metrics vs none'] = { ...got, ratios: perRound(got.metrics, got.none, rps), cpuRatios: perRound(got.metrics, got.none, cpu) };
    const reading = 'with/without request metrics';
    return [
      { bench: 'GET one llama, request metrics', metric: 'requests/s', unit: 'req/s', ours: median(got.metrics.map(rps)), peer: median(got.none.map(rps)),
        ratio: roundRatio(got.metrics, got.none, rps), reading: `${reading}; lower is slower`, note: 'peer = same server without the metrics hooks' },
      { bench: 'GET one llama, request metrics', metric: 'server CPU per request', unit: 'µs', ours: median(got.metrics.map(cpu)), peer: median(got.none.map(cpu)),
        ratio: roundRatio(got.metrics, got.none, cpu), reading: `${reading}; higher is costlier` },
    ];
  } finally {
    await lg.stop();
    await withMetrics.stop();
    await without.stop();
  }
}
