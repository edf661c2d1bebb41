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

/**
 * The watch fan-out's rows. Latency is end to end, write sent → event received: write ack → event goes
 * negative for a server that writes the events before the PATCH's response, which says nothing about
 * speed. The writer's own latency is a row of its own, since a fan-out can also delay that response.
 */
export function watchRows(bench: string, w: Partial<Record<Who, WatchResult>>, rows: Row[], three: ThreeWay[], load1: number, otherCores: number): void {
  const { ours: o, peer: p, etcd3: e } = w;
  if (!o || !p) return;
  const ms = (x: number) => x.toFixed(1);
  const detail = (r: WatchResult) => `events ${r.events}/${r.expected}; write ack → event p50 ${ms(r.ackP50)} vs ${ms(p.ackP50)} ms, p99 ${ms(r.ackP99)} vs ${ms(p.ackP99)} ms`;
  const variants: [string, string, WatchResult][] = [['', 'ours', o], ...(e ? [[', ours-etcd3', 'ours-etcd3', e] as [string, string, WatchResult]] : [])];
  for (const [suffix, who, r] of variants) {
    const reading = `${who}/sample-apiserver; > 1 = ours slower`;
    rows.push({ bench, metric: `p50 latency, write sent → event${suffix}`, unit: 'ms', ours: r.sentP50, peer: p.sentP50, ratio: r.sentP50 / p.sentP50, reading, note: `${r.updates} updates per server at 10/s; ${detail(r)}` });
    rows.push({ bench, metric: `p99 latency, write sent → event${suffix}`, unit: 'ms', ours: r.sentP99, peer: p.sentP99, ratio: r.sentP99 / p.sentP99, reading });
    rows.push({ bench, metric: `p50 write latency during the fan-out${suffix}`, unit: 'ms', ours: r.writeP50, peer: p.writeP50, ratio: r.writeP50 / p.writeP50, reading });
    rows.push({ bench, metric: `p99 write latency during the fan-out${suffix}`, unit: 'ms', ours: r.writeP99, peer: p.writeP99, ratio: r.writeP99 / p.writeP99, reading });
    rows.push({
      bench, metric: `server CPU per update (all watchers)${suffix}`, unit: 'ms', ours: r.cpuMsPerUpdate, peer: p.cpuMsPerUpdate, ratio: r.cpuMsPerUpdate / p.cpuMsPerUpdate,
      reading: `${who}/sample-apiserver (server process only); includes the PATCH`,
      ...(r === e && { note: `the shared etcd adds ${e.helperCpuMsPerUpdate.toFixed(2)} ms/update to ours-etcd3, ${p.helperCpuMsPerUpdate.toFixed(2)} to sample-apiserver` }),
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
  three.push(
    line('p50 write sent → event', (r) => r.sentP50, true), line('p99 write sent → event', (r) => r.sentP99, false),
    line('p50 write latency', (r) => r.writeP50, false), line('p99 write latency', (r) => r.writeP99, false),
  );
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
