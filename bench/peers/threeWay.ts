// The peer benchmark's three servers side by side: one summary line per benchmark (ours-memory,
// ours-etcd3, sample-apiserver, their ratios, CPU per request with the etcd's share), printed as a
// Markdown table for docs/benchmarks.md and kept in results.json; and the watch fan-out's rows.
import type { Row } from '../suites/types.js';
import type { Who } from './peerServer.js';
import type { WatchResult } from './watchFanout.js';

export interface ThreeWay {
  bench: string; unit: string;
  /** Which way is better for `values` (req/s higher; ms, MiB lower). */
  better: 'higher' | 'lower';
  /** Medians; etcd3 undefined when ours-etcd3 could not be measured in this row (`missing` says why). */
  values: { ours: number; etcd3?: number; peer: number };
  /** Medians of per-round ratios where there are rounds: ours-memory ÷ sample, ours-etcd3 ÷ sample, ours-etcd3 ÷ ours-memory. */
  ratios: { oursPeer: number; etcd3Peer?: number; etcd3Ours?: number };
  /** Server process CPU per request (µs), and the etcd's per request for the two on etcd. */
  cpuUs?: { ours: number; etcd3?: number; peer: number };
  etcdCpuUs?: { etcd3?: number; peer: number };
  /** kube-apiserver's CPU per request, rows through the aggregator. */
  proxyCpuUs?: { ours: number; etcd3?: number; peer: number };
  load1: number;
  /** Cores' worth of CPU that processes outside the benchmark used meanwhile. */
  otherCores: number;
  note?: string;
  missing?: string;
}

/** The watch fan-out's rows (the two-server rows as they were named before etcd3, then ours-etcd3's). */
export function watchRows(bench: string, w: Partial<Record<Who, WatchResult>>, rows: Row[], three: ThreeWay[], load1: number, otherCores: number): void {
  const { ours: o, peer: p, etcd3: e } = w;
  if (!o || !p) return;
  const note = `${o.updates} updates per server at 10/s; events ${o.events}/${o.expected} vs ${p.events}/${p.expected}; write sent → event p50 ${o.sentP50.toFixed(1)} vs ${p.sentP50.toFixed(1)} ms, p99 ${o.sentP99.toFixed(1)} vs ${p.sentP99.toFixed(1)} ms`;
  rows.push({ bench, metric: 'p50 latency, write ack → event', unit: 'ms', ours: o.p50, peer: p.p50, ratio: o.p50 / p.p50, reading: 'ours/sample-apiserver; > 1 = ours slower', note });
  rows.push({ bench, metric: 'p99 latency, write ack → event', unit: 'ms', ours: o.p99, peer: p.p99, ratio: o.p99 / p.p99, reading: 'ours/sample-apiserver; > 1 = ours slower' });
  rows.push({ bench, metric: 'server CPU per update (all watchers)', unit: 'ms', ours: o.cpuMsPerUpdate, peer: p.cpuMsPerUpdate, ratio: o.cpuMsPerUpdate / p.cpuMsPerUpdate, reading: 'ours/sample-apiserver (Go process only); includes the PATCH' });
  if (e) {
    const eNote = `events ${e.events}/${e.expected}; write sent → event p50 ${e.sentP50.toFixed(1)} vs ${p.sentP50.toFixed(1)} ms, p99 ${e.sentP99.toFixed(1)} vs ${p.sentP99.toFixed(1)} ms; ours-etcd3 ÷ ours-memory p50 ${(e.p50 / o.p50).toFixed(2)}`;
    rows.push({ bench, metric: 'p50 latency, write ack → event, ours-etcd3', unit: 'ms', ours: e.p50, peer: p.p50, ratio: e.p50 / p.p50, reading: 'ours-etcd3/sample-apiserver; > 1 = ours slower', note: eNote });
    rows.push({ bench, metric: 'p99 latency, write ack → event, ours-etcd3', unit: 'ms', ours: e.p99, peer: p.p99, ratio: e.p99 / p.p99, reading: 'ours-etcd3/sample-apiserver; > 1 = ours slower' });
    rows.push({
      bench, metric: 'server CPU per update (all watchers), ours-etcd3', unit: 'ms', ours: e.cpuMsPerUpdate, peer: p.cpuMsPerUpdate, ratio: e.cpuMsPerUpdate / p.cpuMsPerUpdate,
      reading: 'ours-etcd3/sample-apiserver (server process only); includes the PATCH',
      note: `the shared etcd adds ${e.helperCpuMsPerUpdate.toFixed(2)} ms/update to ours-etcd3, ${p.helperCpuMsPerUpdate.toFixed(2)} to sample-apiserver`,
    });
  }
  const line = (name: string, f: (r: WatchResult) => number, withCpu: boolean): ThreeWay => ({
    bench: `${bench}, ${name}`, unit: 'ms', better: 'lower',
    values: { ours: f(o), etcd3: e && f(e), peer: f(p) },
    ratios: { oursPeer: f(o) / f(p), etcd3Peer: e && f(e) / f(p), etcd3Ours: e && f(e) / f(o) },
    ...(withCpu && {
      cpuUs: { ours: 1000 * o.cpuMsPerUpdate, etcd3: e && 1000 * e.cpuMsPerUpdate, peer: 1000 * p.cpuMsPerUpdate },
      etcdCpuUs: { etcd3: e && 1000 * e.helperCpuMsPerUpdate, peer: 1000 * p.helperCpuMsPerUpdate },
    }),
    load1, otherCores,
    ...(!e && { missing: 'ours-etcd3 failed in the watch fan-out (see failures)' }),
  });
  three.push(line('p50 write ack → event', (r) => r.p50, true), line('p99 write ack → event', (r) => r.p99, false));
}

const num = (x: number | undefined): string => {
  if (x === undefined || !Number.isFinite(x)) return '—';
  const a = Math.abs(x);
  return a >= 1000 ? Math.round(x).toLocaleString('en-US') : a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
};

/** The summary as Markdown lines: values, ratios, CPU µs per request (server + etcd), load. */
export function threeWayMarkdown(three: ThreeWay[]): string[] {
  const out = [
    '| Benchmark | ours-memory | ours-etcd3 | sample-apiserver | memory ÷ sample | etcd3 ÷ sample | etcd3 ÷ memory | server CPU µs/req: memory / etcd3 (+ etcd) / sample (+ etcd) | load avg, other cores |',
    '|---|--:|--:|--:|--:|--:|--:|---|--:|',
  ];
  for (const t of three) {
    const cpu = t.cpuUs
      ? `${num(t.cpuUs.ours)} / ${num(t.cpuUs.etcd3)} (+ ${num(t.etcdCpuUs?.etcd3)}) / ${num(t.cpuUs.peer)} (+ ${num(t.etcdCpuUs?.peer)})`
      : '';
    const extra = [t.note, t.missing].filter(Boolean).join('; ');
    out.push(`| ${t.bench}${extra ? ` (${extra})` : ''} | ${num(t.values.ours)} ${t.unit} | ${num(t.values.etcd3)} ${t.unit} | ${num(t.values.peer)} ${t.unit} | ${num(t.ratios.oursPeer)} | ${num(t.ratios.etcd3Peer)} | ${num(t.ratios.etcd3Ours)} | ${cpu} | ${t.load1.toFixed(1)}, ${t.otherCores.toFixed(2)} |`);
  }
  out.push('(req/s: > 1 = faster; ms and MiB: < 1 = less. Ratios are medians of per-round ratios where there are rounds.)');
  return out;
}
