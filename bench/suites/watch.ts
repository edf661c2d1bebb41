// Benchmark 3: watch fan-out. N watchers (spread over client processes) on one namespace; a writer
// updates one llama U times at a steady rate, stamping its send time in an annotation; every
// watcher records when each event line arrives. Peer: a plain node:https server broadcasting the
// same lines to the same number of streams.
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

interface FanoutResult {
  connectMs: number; writes: number; achievedRate: number; serverCpuMsPerEvent: number; writeAckMs: { p50: number; p99: number };
  fromAck: { p50: number; p99: number; max: number }; fromSent: { p50: number; p99: number; max: number };
  events: number; expectedEvents: number; lost: number; duplicated: number; outOfOrder: number; unexpected: number; errors: number; endedEarly: number; firstError?: string;
}

async function fanout(ctx: Ctx, server: Child, watchPath: string, watchers: number, procs: number, writes: number, rate: number,
  write: (i: number, sentMs: number) => Promise<number>): Promise<FanoutResult> {
  const clients = await Promise.all(Array.from({ length: procs }, () => Child.start('procs/watchClients.ts')));
  try {
    const t0 = nowMs();
    const per = Math.ceil(watchers / procs);
    await Promise.all(clients.map((c, i) => c.call('open', {
      port: server.info.port, path: watchPath, caFile: join(ctx.certDir, 'ca.crt'), count: Math.min(per, watchers - i * per),
      headers: { authorization: `Bearer ${ctx.token}`, accept: 'application/json', 'user-agent': 'farm-bench' },
    })));
    for (let i = 0; i < 100 && (await server.call<number>('watchers')) < watchers; i++) await sleep(50);
    const registered = await server.call<number>('watchers');
    if (registered < watchers) throw new Error(`only ${registered}/${watchers} watchers registered`);
    const connectMs = nowMs() - t0;
    await sleep(200);
    const c0 = await server.call<number>('cpu');
    const { written, achievedRate } = await steadyWrites(writes, rate, write);
    const got = await Promise.all(clients.map((c) => c.call<Collected>('collect', { written, timeoutMs: 15_000 })));
    const c1 = await server.call<number>('cpu');
    const fromAck = Float64Array.from(got.flatMap((g) => g.fromAck)).sort();
    const fromSent = Float64Array.from(got.flatMap((g) => g.fromSent)).sort();
    const ack = Float64Array.from(written.map((w) => w.ackMs - w.sentMs)).sort();
    const sum = (k: keyof Collected) => got.reduce((a, g) => a + (g[k] as number), 0);
    return {
      connectMs, writes, achievedRate,
      serverCpuMsPerEvent: (c1 - c0) / writes,
      writeAckMs: { p50: percentile(ack, 50), p99: percentile(ack, 99) },
      fromAck: { p50: percentile(fromAck, 50), p99: percentile(fromAck, 99), max: fromAck[fromAck.length - 1] },
      fromSent: { p50: percentile(fromSent, 50), p99: percentile(fromSent, 99), max: fromSent[fromSent.length - 1] },
      events: sum('events'), expectedEvents: writes * watchers,
      lost: sum('lost'), duplicated: sum('duplicated'), outOfOrder: sum('outOfOrder'), unexpected: sum('unexpected'),
      errors: sum('errors'), endedEarly: sum('endedEarly'), firstError: got.find((g) => g.firstError)?.firstError,
    };
  } finally {
    await Promise.all(clients.map(async (c) => { await c.call('close').catch(() => {}); await c.stop(); }));
  }
}

export async function watchSuite(ctx: Ctx): Promise<SuiteResult> {
  const watchers = 1000;
  const procs = 2;
  const writes = ctx.quick ? 60 : 200;
  const rate = 20;
  const ca = readFileSync(join(ctx.certDir, 'ca.crt'));
  const auth = { authorization: `Bearer ${ctx.token}`, 'user-agent': 'farm-bench' };

  // Ours: PATCH (merge patch) one llama; the watch event carries the send time in an annotation.
  const farm = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir]);
  let ours: FanoutResult;
  let template: Record<string, any>;
  try {
    const rv0 = await farm.call<number>('seed', { namespace: 'bench-watch', count: 1 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const port = farm.info.port as number;
    const patch = async (_i: number, sentMs: number) => {
      const body = JSON.stringify({ metadata: { annotations: { 'bench/sent': sentMs.toFixed(3) } } });
      const r = await call(agent, ca, port, 'PATCH', LLAMA, { ...auth, 'content-type': 'application/merge-patch+json', accept: 'application/json' }, body);
      if (r.status !== 200) throw new Error(`PATCH: ${r.status} ${r.body.slice(0, 300)}`);
      template = JSON.parse(r.body);
      return Number(template.metadata.resourceVersion);
    };
    await patch(0, nowMs()); // warm the write path; watches start after it
    ctx.log(`watch fan-out (ours): ${watchers} watchers, ${writes} updates at ${rate}/s`);
    ours = await fanout(ctx, farm, `${API}/namespaces/bench-watch/llamas?watch=1&resourceVersion=${rv0 + 1}`, watchers, procs, writes, rate, patch);
    agent.destroy();
  } finally {
    await farm.stop();
  }

  // Peer: the same lines (the PATCHed object with this write's rv and send time) through a plain broadcaster.
  const plain = await Child.start('procs/plainBroadcast.ts', [ctx.certDir]);
  let peer: FanoutResult;
  try {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const port = plain.info.port as number;
    const publish = async (i: number, sentMs: number) => {
      const rv = 1000 + i;
      const obj = { ...template!, metadata: { ...template!.metadata, resourceVersion: String(rv), annotations: { ...template!.metadata.annotations, 'bench/sent': sentMs.toFixed(3) } } };
      const r = await call(agent, ca, port, 'POST', '/publish', { ...auth, 'content-type': 'application/json' }, `{"type":"MODIFIED","object":${JSON.stringify(obj)}}\n`);
      if (r.status !== 200) throw new Error(`publish: ${r.status}`);
      return rv;
    };
    ctx.log(`watch fan-out (peer): plain node:https broadcaster`);
    peer = await fanout(ctx, plain, '/watch', watchers, procs, writes, rate, publish);
    agent.destroy();
  } finally {
    await plain.stop();
  }

  const bench = `Watch fan-out, ${watchers} watchers`;
  const note = `${writes} updates at ${rate}/s; lost/dup/out-of-order ours ${ours.lost}/${ours.duplicated}/${ours.outOfOrder}, peer ${peer.lost}/${peer.duplicated}/${peer.outOfOrder}`;
  const rows: Row[] = [
    { bench, metric: 'p50 latency, write ack → event received', unit: 'ms', ours: ours.fromAck.p50, peer: peer.fromAck.p50, ratio: ours.fromAck.p50 / peer.fromAck.p50, reading: 'ours/plain; higher is slower (can be < 0: events go out before the ack)', note },
    { bench, metric: 'p99 latency, write ack → event received', unit: 'ms', ours: ours.fromAck.p99, peer: peer.fromAck.p99, ratio: ours.fromAck.p99 / peer.fromAck.p99, reading: 'ours/plain; higher is slower' },
    { bench, metric: 'p50 latency, write sent → event received', unit: 'ms', ours: ours.fromSent.p50, peer: peer.fromSent.p50, ratio: ours.fromSent.p50 / peer.fromSent.p50, reading: 'ours/plain; higher is slower' },
    { bench, metric: 'p99 latency, write sent → event received', unit: 'ms', ours: ours.fromSent.p99, peer: peer.fromSent.p99, ratio: ours.fromSent.p99 / peer.fromSent.p99, reading: 'ours/plain; higher is slower' },
    { bench, metric: 'server CPU per update (all watchers)', unit: 'ms', ours: ours.serverCpuMsPerEvent, peer: peer.serverCpuMsPerEvent, ratio: ours.serverCpuMsPerEvent / peer.serverCpuMsPerEvent, reading: 'ours/plain; higher is costlier', note: 'ours includes handling the PATCH itself' },
  ];
  const bad = ['lost', 'duplicated', 'outOfOrder', 'unexpected', 'errors', 'endedEarly'] as const;
  const failures = bad.filter((k) => ours[k] !== 0 || peer[k] !== 0).map((k) => `${k}: ours ${ours[k]}, peer ${peer[k]}`);
  return { rows, detail: { watchers, clientProcesses: procs, writes, rate, ours, peer, failures } };
}
