// Benchmarks 1 and 2: requests/s of GET one llama and LIST 1000 llamas (JSON and Table) through the
// real HTTPS server, each against a static route on the same fastify instance returning the same bytes.
import { join } from 'node:path';
import { Child, median } from '../lib/common.js';
import type { RunResult } from '../procs/loadgen.js';
import type { Ctx, Row, SuiteResult } from './types.js';

const API = '/apis/farm.example.com/v1alpha';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

interface Target { path: string; accept: string }
interface Pair { bench: string; ours: Target; peer: Target; connections: number }

interface Measured extends RunResult { serverCpuPct: number; serverCpuUsPerRequest: number }

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

/** Runs ours and the peer alternately (ABBA…) for `rounds` rounds; the ratio is the median of per-round ratios. */
async function comparePair(srv: Child, lg: Child, ctx: Ctx, p: Pair, rounds: number, warmupMs: number, durationMs: number) {
  const ours: Measured[] = [];
  const peer: Measured[] = [];
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  // Untimed first: the first seconds of a route run colder code (JIT) and would bias round 1.
  for (const t of [p.ours, p.peer]) await measure(srv, lg, ctx, t, p.connections, 0, warmupMs * 3);
  for (let r = 0; r < rounds; r++) {
    const order: ['ours' | 'peer', Target][] = r % 2 === 0 ? [['ours', p.ours], ['peer', p.peer]] : [['peer', p.peer], ['ours', p.ours]];
    const got: Record<string, Measured> = {};
    for (const [who, t] of order) got[who] = await measure(srv, lg, ctx, t, p.connections, warmupMs, durationMs);
    ours.push(got.ours);
    peer.push(got.peer);
    ratios.push(got.ours.rps / got.peer.rps);
    cpuRatios.push(got.ours.serverCpuUsPerRequest / got.peer.serverCpuUsPerRequest);
    ctx.log(`  ${p.bench} round ${r + 1}: ${got.ours.rps.toFixed(0)} vs ${got.peer.rps.toFixed(0)} req/s (server CPU ${got.ours.serverCpuPct.toFixed(0)}% / ${got.peer.serverCpuPct.toFixed(0)}%, client CPU ${got.ours.clientCpuPct.toFixed(0)}% / ${got.peer.clientCpuPct.toFixed(0)}%)`);
  }
  return { ours, peer, ratio: median(ratios), ratios, cpuRatio: median(cpuRatios), cpuRatios };
}

export async function httpSuite(ctx: Ctx): Promise<SuiteResult> {
  const rounds = ctx.quick ? 2 : 5;
  const warmupMs = ctx.quick ? 300 : 500;
  const durationMs = ctx.quick ? 1000 : 2000;
  const rows: Row[] = [];
  const detail: Record<string, unknown> = { rounds, warmupMs, durationMs };

  const srv = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir]);
  const lg = await Child.start('procs/loadgen.ts');
  try {
    await srv.call('seed', { namespace: 'bench', count: 1 });
    await srv.call('seed', { namespace: 'bench-list', count: 1000, createdYearsAgo: 9 });
    const one = `${API}/namespaces/bench/llamas/llama-000000`;
    const list = `${API}/namespaces/bench-list/llamas`;
    const sizes = {
      one: await srv.call('capture', { name: 'one', path: one, accept: 'application/json' }),
      list: await srv.call('capture', { name: 'list', path: list, accept: 'application/json' }),
      table: await srv.call('capture', { name: 'table', path: list, accept: TABLE }),
    };
    detail.responses = sizes;
    const pairs: Pair[] = [
      { bench: 'GET one llama', ours: { path: one, accept: 'application/json' }, peer: { path: '/bench/static/one', accept: 'application/json' }, connections: 16 },
      { bench: 'LIST 1000 llamas (JSON)', ours: { path: list, accept: 'application/json' }, peer: { path: '/bench/static/list', accept: 'application/json' }, connections: 8 },
      { bench: 'LIST 1000 llamas (Table)', ours: { path: list, accept: TABLE }, peer: { path: '/bench/static/table', accept: TABLE }, connections: 8 },
    ];
    for (const p of pairs) {
      ctx.log(`${p.bench}: ${p.ours.path} vs ${p.peer.path}`);
      const c = await comparePair(srv, lg, ctx, p, rounds, warmupMs, durationMs);
      const oursRps = median(c.ours.map((m) => m.rps));
      const peerRps = median(c.peer.map((m) => m.rps));
      const bytes = c.ours[0].responseBytes;
      rows.push({
        bench: p.bench, metric: 'requests/s', unit: 'req/s', ours: oursRps, peer: peerRps, ratio: c.ratio,
        reading: 'ours/static; 1.0 = no cost beyond fastify+TLS+auth hook, lower is slower',
        note: `${bytes} B/response, ${p.connections} keep-alive conns; p50 latency ${median(c.ours.map((m) => m.latencyMs.p50)).toFixed(2)} vs ${median(c.peer.map((m) => m.latencyMs.p50)).toFixed(2)} ms`,
      });
      rows.push({
        bench: p.bench, metric: 'server CPU per request', unit: 'µs',
        ours: median(c.ours.map((m) => m.serverCpuUsPerRequest)), peer: median(c.peer.map((m) => m.serverCpuUsPerRequest)), ratio: c.cpuRatio,
        reading: 'ours/static; higher is costlier (steadier than req/s on a busy machine)',
      });
      detail[p.bench] = c;
    }
  } finally {
    await lg.stop();
    await srv.stop();
  }

  if (!ctx.quick) {
    // The server's default --log-level is info, which logs every request (fastify request logging).
    ctx.log('GET one llama: --log-level info (stdout → /dev/null) vs silent');
    const srvInfo = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir, '--log-level', 'info'], { silent: true });
    const srvSilent = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir]);
    const lg2 = await Child.start('procs/loadgen.ts');
    try {
      for (const s of [srvInfo, srvSilent]) await s.call('seed', { namespace: 'bench', count: 1 });
      const t: Target = { path: `${API}/namespaces/bench/llamas/llama-000000`, accept: 'application/json' };
      const info: Measured[] = [];
      const silent: Measured[] = [];
      const ratios: number[] = [];
      for (const s of [srvInfo, srvSilent]) await measure(s, lg2, ctx, t, 16, 0, warmupMs * 3);
      for (let r = 0; r < rounds; r++) {
        const a = r % 2 === 0;
        const first = await measure(a ? srvInfo : srvSilent, lg2, ctx, t, 16, warmupMs, durationMs);
        const second = await measure(a ? srvSilent : srvInfo, lg2, ctx, t, 16, warmupMs, durationMs);
        const [i, s] = a ? [first, second] : [second, first];
        info.push(i); silent.push(s); ratios.push(i.rps / s.rps);
        ctx.log(`  round ${r + 1}: info ${i.rps.toFixed(0)} vs silent ${s.rps.toFixed(0)} req/s`);
      }
      rows.push({
        bench: 'GET one llama, --log-level info', metric: 'requests/s', unit: 'req/s',
        ours: median(info.map((m) => m.rps)), peer: median(silent.map((m) => m.rps)), ratio: median(ratios),
        reading: 'info/silent; lower is slower', note: 'peer = same server at log level silent; logs go to /dev/null (a pipe costs more)',
      });
      detail['GET one llama, log level info vs silent'] = { info, silent, ratios };
    } finally {
      await lg2.stop();
      await srvInfo.stop();
      await srvSilent.stop();
    }
  }
  return { rows, detail };
}
