// Watch fan-out of the peer benchmark: `watchers` watch streams on each server (token, direct), in 2
// client processes on the client core; a writer merge-PATCHes one object at a fixed pace, alternating
// servers by segment (in order, then reversed, …). Latency: event line received − PATCH sent (end to end);
// also − PATCH response received, and the PATCH's own, which a fan-out on the same thread can delay.
import { Agent } from 'node:https';
import { Child, nowMs, percentile, sleep } from '../lib/common.js';
import { call, fixed, type Server, type Who } from './peerServer.js';
import { pin, procCpuMs } from './procStat.js';

interface Written { rv: number; sentMs: number; ackMs: number }
interface Collected { streams: number; events: number; lost: number; duplicated: number; outOfOrder: number; unexpected: number; errors: number; endedEarly: number; firstError?: string; fromAck: number[]; fromSent: number[] }

export interface WatchConfig { watchers: number; watchSegments: number; writesPerSegment: number; watchRate: number }

export interface WatchResult {
  /** Write sent → event received (end to end), and write ack → event received. */
  sentP50: number; sentP99: number; ackP50: number; ackP99: number;
  /** The writer's own latency while the fan-out runs: write sent → its response received. */
  writeP50: number; writeP99: number;
  /** Server process CPU over the segments ÷ updates (the PATCH included). */
  cpuMsPerUpdate: number;
  /** The same for the helper processes (etcd). */
  helperCpuMsPerUpdate: number;
  events: number; expected: number; lost: number; duplicated: number; outOfOrder: number; errors: number; updates: number;
}

export async function watchFanout(o: {
  cfg: WatchConfig; servers: Server[]; token: string; log(m: string): void; failures: string[];
  /** Where the watch client processes go (they are stopped by the caller with the rest). */
  children: Child[]; knownPids: number[]; clientCpu?: string;
}): Promise<Partial<Record<Who, WatchResult>>> {
  const { cfg, servers } = o;
  const clients = await Promise.all([0, 1].map(() => Child.start('procs/watchClients.ts')));
  o.children.push(...clients);
  for (const c of clients) {
    o.knownPids.push(c.proc.pid!);
    if (o.clientCpu) pin(c.proc.pid!, o.clientCpu);
  }
  const headers = { authorization: `Bearer ${o.token}`, accept: 'application/json', 'user-agent': 'farm-bench' };
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const written = new Map<Server, Written[]>(servers.map((s) => [s, []]));
  const cpuMs = new Map<Server, number>(servers.map((s) => [s, 0]));
  const helperMs = new Map<Server, number>(servers.map((s) => [s, 0]));
  const helperCpu = (s: Server) => s.helperPids.reduce((a, p) => a + procCpuMs(p), 0);
  try {
    const writer = new Map<Server, (sentMs: number) => Promise<number>>();
    for (const s of servers) {
      const created = await call(s.port, s.caFile, 'POST', s.coll('bench-watch'), { headers, body: fixed(s.body('bench-watch', { name: 'watched' })) });
      if (created.status !== 201) throw new Error(`${s.label}: create watched: ${created.status} ${created.body.slice(0, 300)}`);
      const rv0 = (JSON.parse(created.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
      writer.set(s, async (sentMs) => {
        const r = await call(s.port, s.caFile, 'PATCH', `${s.coll('bench-watch')}/watched`, { agent, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ metadata: { annotations: { 'bench/sent': sentMs.toFixed(3) } } }) });
        if (r.status !== 200) throw new Error(`${s.label}: PATCH: ${r.status} ${r.body.slice(0, 300)}`);
        return Number((JSON.parse(r.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
      });
      const per = Math.ceil(cfg.watchers / clients.length);
      await Promise.all(clients.map((c, i) => c.call('open', {
        group: s.who, port: s.port, caFile: s.caFile, headers, count: Math.min(per, cfg.watchers - i * per),
        path: `${s.coll('bench-watch')}?watch=1&resourceVersion=${rv0}`,
      })));
      // Warm-up writes; every stream must see them (registration check), then they are forgotten.
      const warm: Written[] = [];
      for (let i = 0; i < 5; i++) { const sentMs = nowMs(); const rv = await writer.get(s)!(sentMs); warm.push({ rv, sentMs, ackMs: nowMs() }); await sleep(50); }
      const seen = await Promise.all(clients.map((c) => c.call<Collected>('collect', { group: s.who, written: warm, timeoutMs: 10_000 })));
      const lost = seen.reduce((a, g) => a + g.lost, 0);
      if (lost) throw new Error(`${s.label}: ${lost} warm-up events not delivered to ${cfg.watchers} watchers (${seen.find((g) => g.firstError)?.firstError ?? ''})`);
      await Promise.all(clients.map((c) => c.call('reset', { group: s.who })));
    }
    o.log(`watch fan-out: ${cfg.watchers} watchers each, ${cfg.watchSegments * cfg.writesPerSegment} updates per server at ${cfg.watchRate}/s`);
    for (let seg = 0; seg < cfg.watchSegments; seg++) {
      for (const s of seg % 2 === 0 ? servers : [...servers].reverse()) {
        const c0 = procCpuMs(s.pid);
        const h0 = helperCpu(s);
        const start = nowMs() + 20;
        for (let i = 0; i < cfg.writesPerSegment; i++) {
          const wait = start + (i * 1000) / cfg.watchRate - nowMs();
          if (wait > 1) await sleep(wait);
          const sentMs = nowMs();
          const rv = await writer.get(s)!(sentMs);
          written.get(s)!.push({ rv, sentMs, ackMs: nowMs() });
        }
        cpuMs.set(s, cpuMs.get(s)! + procCpuMs(s.pid) - c0);
        helperMs.set(s, helperMs.get(s)! + helperCpu(s) - h0);
        await sleep(300);
      }
    }
    const result: Partial<Record<Who, WatchResult>> = {};
    for (const s of servers) {
      const w = written.get(s)!;
      const got = await Promise.all(clients.map((c) => c.call<Collected>('collect', { group: s.who, written: w, timeoutMs: 15_000 })));
      const fromAck = Float64Array.from(got.flatMap((g) => g.fromAck)).sort();
      const fromSent = Float64Array.from(got.flatMap((g) => g.fromSent)).sort();
      const writeMs = Float64Array.from(w.map((x) => x.ackMs - x.sentMs)).sort();
      const sum = (k: 'lost' | 'duplicated' | 'outOfOrder' | 'errors' | 'events' | 'unexpected' | 'endedEarly') => got.reduce((a, g) => a + g[k], 0);
      const r: WatchResult = {
        sentP50: percentile(fromSent, 50), sentP99: percentile(fromSent, 99), ackP50: percentile(fromAck, 50), ackP99: percentile(fromAck, 99),
        writeP50: percentile(writeMs, 50), writeP99: percentile(writeMs, 99),
        cpuMsPerUpdate: cpuMs.get(s)! / w.length, helperCpuMsPerUpdate: helperMs.get(s)! / w.length,
        events: sum('events'), expected: w.length * cfg.watchers, updates: w.length,
        lost: sum('lost'), duplicated: sum('duplicated'), outOfOrder: sum('outOfOrder'), errors: sum('errors') + sum('unexpected') + sum('endedEarly'),
      };
      result[s.who] = r;
      if (r.lost || r.duplicated || r.outOfOrder || r.errors || r.events !== r.expected) o.failures.push(`watch ${s.label}: ${r.events}/${r.expected} events, lost ${r.lost}, dup ${r.duplicated}, out of order ${r.outOfOrder}, errors ${r.errors}`);
    }
    return result;
  } finally {
    agent.destroy();
    await Promise.all(clients.map((c) => c.call('close').catch(() => undefined)));
  }
}
