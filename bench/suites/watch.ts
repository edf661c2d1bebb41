// Benchmark 3: watch fan-out. N watchers (spread over client processes) on one namespace; a writer
// updates one llama U times at a steady rate, stamping its send time in an annotation; every
// watcher records when each event line arrives. Peer: a plain node:https server broadcasting the
// same lines to the same number of streams. With --baseline, the server at that commit runs as a third
// side with its own watchers, and takes its turn in the write segments.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { Child, nowMs, percentile, sleep } from '../lib/common.js';
import type { Ctx, Row, SuiteResult } from './types.js';

const API = '/apis/farm.example.com/v1alpha';
const LLAMA = `${API}/namespaces/bench-watch/llamas/llama-000000`;

interface Written { rv: number; sentMs: number; ackMs: number }

interface Collected {
  streams: number; events: number; lost: number; duplicated: number; outOfOrder: number; unexpected: number;
  errors: number; endedEarly: number; firstError?: string; fromAck: number[]; fromSent: number[];
}

function call(agent: Agent, ca: Buffer, port: number, method: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent, ca, servername: 'localhost', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` writes at `rate`/s on a fixed schedule (a late write is sent at once, not skipped). */
async function steadyWrites(count: number, rate: number, write: (i: number, sentMs: number) => Promise<number>): Promise<{ written: Written[]; achievedRate: number }> {
  const written: Written[] = [];
  const start = nowMs() + 20;
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - nowMs();
    if (wait > 1) await sleep(wait);
    const sentMs = nowMs();
    const rv = await write(i, sentMs);
    written.push({ rv, sentMs, ackMs: nowMs() });
  }
  const span = written[written.length - 1].ackMs - written[0].sentMs;
  return { written, achievedRate: ((count - 1) * 1000) / span };
}

interface Side {
  name: 'ours' | 'peer' | 'baseline';
  server: Child;
  watchPath: string;
  write: (i: number, sentMs: number) => Promise<number>;
  written: Written[];
  cpuMs: number;
  connectMs: number;
}

interface FanoutResult {
  connectMs: number; writes: number; serverCpuMsPerEvent: number; writeAckMs: { p50: number; p99: number };
  fromAck: { p50: number; p99: number; max: number }; fromSent: { p50: number; p99: number; max: number };
  events: number; expectedEvents: number; lost: number; duplicated: number; outOfOrder: number; unexpected: number; errors: number; endedEarly: number; firstError?: string;
}

async function openWatchers(ctx: Ctx, clients: Child[], side: Side, watchers: number): Promise<void> {
  const t0 = nowMs();
  const per = Math.ceil(watchers / clients.length);
  await Promise.all(clients.map((c, i) => c.call('open', {
    group: side.name, port: side.server.info.port, path: side.watchPath, caFile: join(ctx.certDir, 'ca.crt'), count: Math.min(per, watchers - i * per),
    headers: { authorization: `Bearer ${ctx.token}`, accept: 'application/json', 'user-agent': 'farm-bench' },
  })));
  for (let i = 0; i < 100 && (await side.server.call<number>('watchers')) < watchers; i++) await sleep(50);
  const registered = await side.server.call<number>('watchers');
  if (registered < watchers) throw new Error(`${side.name}: only ${registered}/${watchers} watchers registered`);
  side.connectMs = nowMs() - t0;
}

async function segment(side: Side, offset: number, count: number, rate: number): Promise<void> {
  const c0 = await side.server.call<number>('cpu');
  const { written } = await steadyWrites(count, rate, (i, sentMs) => side.write(offset + i, sentMs));
  side.cpuMs += (await side.server.call<number>('cpu')) - c0;
  side.written.push(...written);
}

async function score(clients: Child[], side: Side, watchers: number): Promise<FanoutResult> {
  const got = await Promise.all(clients.map((c) => c.call<Collected>('collect', { group: side.name, written: side.written, timeoutMs: 15_000 })));
  const fromAck = Float64Array.from(got.flatMap((g) => g.fromAck)).sort();
  const fromSent = Float64Array.from(got.flatMap((g) => g.fromSent)).sort();
  const ack = Float64Array.from(side.written.map((w) => w.ackMs - w.sentMs)).sort();
  const sum = (k: keyof Collected) => got.reduce((a, g) => a + (g[k] as number), 0);
  const writes = side.written.length;
  return {
    connectMs: side.connectMs, writes,
    serverCpuMsPerEvent: side.cpuMs / writes,
    writeAckMs: { p50: percentile(ack, 50), p99: percentile(ack, 99) },
    fromAck: { p50: percentile(fromAck, 50), p99: percentile(fromAck, 99), max: fromAck[fromAck.length - 1] },
    fromSent: { p50: percentile(fromSent, 50), p99: percentile(fromSent, 99), max: fromSent[fromSent.length - 1] },
    events: sum('events'), expectedEvents: writes * watchers,
    lost: sum('lost'), duplicated: sum('duplicated'), outOfOrder: sum('outOfOrder'), unexpected: sum('unexpected'),
    errors: sum('errors'), endedEarly: sum('endedEarly'), firstError: got.find((g) => g.firstError)?.firstError,
  };
}

/**
 * Both servers run side by side with their watchers connected; the writes alternate between them in
 * segments (ours, peer, peer, ours, …) so that both see the same background noise.
 */
export async function watchSuite(ctx: Ctx): Promise<SuiteResult> {
  const watchers = ctx.quick ? 300 : 1000;
  const clientProcs = 2;
  // 10 updates/s × 1000 watchers = 10,000 event lines/s: the server stays below saturation on 2 cores.
  const rate = 10;
  const segments = ctx.quick ? 1 : 4;
  const perSegment = ctx.quick ? 30 : 50;
  const ca = readFileSync(join(ctx.certDir, 'ca.crt'));
  const auth = { authorization: `Bearer ${ctx.token}`, 'user-agent': 'farm-bench' };

  const farm = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir], { tree: ctx.ours });
  const plain = await Child.start('procs/plainBroadcast.ts', [ctx.certDir]);
  const farmBase = ctx.baseline ? await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir], { tree: ctx.baseline }).catch(async (e) => { await farm.stop(); await plain.stop(); throw e; }) : undefined;
  const clients: Child[] = [];
  const agents = [0, 1, 2].map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    // Ours: merge-PATCH one llama; the event carries the send time in an annotation.
    let template: Record<string, any> = {};
    const patcher = (server: Child, agent: Agent, keepTemplate: boolean) => async (_i: number, sentMs: number) => {
      const body = JSON.stringify({ metadata: { annotations: { 'bench/sent': sentMs.toFixed(3) } } });
      const r = await call(agent, ca, server.info.port, 'PATCH', LLAMA, { ...auth, 'content-type': 'application/merge-patch+json', accept: 'application/json' }, body);
      if (r.status !== 200) throw new Error(`PATCH: ${r.status} ${r.body.slice(0, 300)}`);
      const obj = JSON.parse(r.body);
      if (keepTemplate) template = obj;
      return Number(obj.metadata.resourceVersion);
    };
    const rv0 = await farm.call<number>('seed', { namespace: 'bench-watch', count: 1 });
    const patch = patcher(farm, agents[0], true);
    await patch(0, nowMs()); // warms the write path and gives the peer its bytes; watches start after it
    // Peer: the same line (the PATCHed object with this write's rv and send time), POSTed to the broadcaster.
    let peerRv = 1000;
    const publish = async (_i: number, sentMs: number) => {
      const rv = ++peerRv;
      const obj = { ...template, metadata: { ...template.metadata, resourceVersion: String(rv), annotations: { ...template.metadata.annotations, 'bench/sent': sentMs.toFixed(3) } } };
      const r = await call(agents[1], ca, plain.info.port, 'POST', '/publish', { ...auth, 'content-type': 'application/json' }, `{"type":"MODIFIED","object":${JSON.stringify(obj)}}\n`);
      if (r.status !== 200) throw new Error(`publish: ${r.status}`);
      return rv;
    };
    const ours: Side = { name: 'ours', server: farm, watchPath: `${API}/namespaces/bench-watch/llamas?watch=1&resourceVersion=${rv0 + 1}`, write: patch, written: [], cpuMs: 0, connectMs: 0 };
    const peer: Side = { name: 'peer', server: plain, watchPath: '/watch', write: publish, written: [], cpuMs: 0, connectMs: 0 };
    let base: Side | undefined;
    if (farmBase) {
      const rvBase = await farmBase.call<number>('seed', { namespace: 'bench-watch', count: 1 });
      const patchBase = patcher(farmBase, agents[2], false);
      await patchBase(0, nowMs());
      base = { name: 'baseline', server: farmBase, watchPath: `${API}/namespaces/bench-watch/llamas?watch=1&resourceVersion=${rvBase + 1}`, write: patchBase, written: [], cpuMs: 0, connectMs: 0 };
    }
    const sides = base ? [ours, peer, base] : [ours, peer];

    clients.push(...await Promise.all(Array.from({ length: clientProcs }, () => Child.start('procs/watchClients.ts'))));
    ctx.log(`watch fan-out: ${watchers} watchers on each server, ${segments * perSegment} updates each at ${rate}/s in ${segments * sides.length} alternating segments${base ? ` (third server: ours at ${ctx.baseline!.label})` : ''}`);
    for (const side of sides) await openWatchers(ctx, clients, side, watchers);
    // Warm-up writes on every side (JIT, TLS buffers), then the clients forget them.
    for (const side of sides) {
      await steadyWrites(10, 20, (i, sentMs) => side.write(i, sentMs));
      await sleep(300);
      await Promise.all(clients.map((c) => c.call('reset', { group: side.name })));
    }
    for (let s = 0; s < segments; s++) {
      const order = s % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        await segment(side, side.written.length, perSegment, rate);
        await sleep(200); // let the fan-out drain before the other server writes
      }
      ctx.log(`  segment ${s + 1}/${segments} done`);
    }
    const o = await score(clients, ours, watchers);
    const p = await score(clients, peer, watchers);
    const b = base ? await score(clients, base, watchers) : undefined;
    return report(watchers, clientProcs, rate, o, p, b);
  } finally {
    for (const a of agents) a.destroy();
    await Promise.all(clients.map(async (c) => { await c.call('close').catch(() => {}); await c.stop(); }));
    await farm.stop();
    await plain.stop();
    await farmBase?.stop();
  }
}

function report(watchers: number, clientProcs: number, rate: number, ours: FanoutResult, peer: FanoutResult, base?: FanoutResult): SuiteResult {
  const bench = `Watch fan-out, ${watchers} watchers`;
  const note = `${ours.writes} updates at ${rate}/s; events received ${ours.events}/${ours.expectedEvents} vs ${peer.events}/${peer.expectedEvents}; lost/dup/out-of-order ours ${ours.lost}/${ours.duplicated}/${ours.outOfOrder}, peer ${peer.lost}/${peer.duplicated}/${peer.outOfOrder}`;
  const rows: Row[] = [
    { bench, metric: 'p50 latency, write ack → event received', unit: 'ms', ours: ours.fromAck.p50, peer: peer.fromAck.p50, ratio: ours.fromAck.p50 / peer.fromAck.p50, reading: 'ours/plain; higher is slower', note },
    { bench, metric: 'p99 latency, write ack → event received', unit: 'ms', ours: ours.fromAck.p99, peer: peer.fromAck.p99, ratio: ours.fromAck.p99 / peer.fromAck.p99, reading: 'ours/plain; higher is slower' },
    { bench, metric: 'p50 latency, write sent → event received', unit: 'ms', ours: ours.fromSent.p50, peer: peer.fromSent.p50, ratio: ours.fromSent.p50 / peer.fromSent.p50, reading: 'ours/plain; higher is slower' },
    { bench, metric: 'p99 latency, write sent → event received', unit: 'ms', ours: ours.fromSent.p99, peer: peer.fromSent.p99, ratio: ours.fromSent.p99 / peer.fromSent.p99, reading: 'ours/plain; higher is slower' },
    { bench, metric: 'server CPU per update (all watchers)', unit: 'ms', ours: ours.serverCpuMsPerEvent, peer: peer.serverCpuMsPerEvent, ratio: ours.serverCpuMsPerEvent / peer.serverCpuMsPerEvent, reading: 'ours/plain; higher is costlier', note: 'ours includes serving the PATCH itself' },
  ];
  if (base) {
    // Latency and CPU: lower is better. One run, so the ratio is of the run's values.
    const of = [(f: FanoutResult) => f.fromAck.p50, (f: FanoutResult) => f.fromAck.p99, (f: FanoutResult) => f.fromSent.p50, (f: FanoutResult) => f.fromSent.p99, (f: FanoutResult) => f.serverCpuMsPerEvent];
    rows.forEach((r, i) => { r.baseline = { value: of[i](base), ratio: of[i](ours) / of[i](base), better: 'lower' }; });
  }
  const bad = ['lost', 'duplicated', 'outOfOrder', 'unexpected', 'errors', 'endedEarly'] as const;
  const failures = bad.filter((k) => ours[k] !== 0 || peer[k] !== 0).map((k) => `${k}: ours ${ours[k]}, peer ${peer[k]}`);
  if (ours.events !== ours.expectedEvents) failures.push(`ours: ${ours.events}/${ours.expectedEvents} events scored`);
  if (peer.events !== peer.expectedEvents) failures.push(`peer: ${peer.events}/${peer.expectedEvents} events scored`);
  if (base) {
    failures.push(...bad.filter((k) => base[k] !== 0).map((k) => `${k}: baseline ${base[k]}`));
    if (base.events !== base.expectedEvents) failures.push(`baseline: ${base.events}/${base.expectedEvents} events scored`);
    rows[0].note += `; baseline ${base.events}/${base.expectedEvents} received, lost/dup/out-of-order ${base.lost}/${base.duplicated}/${base.outOfOrder}`;
  }
  return { rows, detail: { watchers, clientProcesses: clientProcs, rate, ours, peer, ...(base && { baseline: base }), failures } };
}
