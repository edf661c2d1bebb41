// Loop stall under a watch fan-out (issue 30, item 2): watchers that read nothing, each with a ~30 KiB
// label selector of `!key` terms, and creates of ~1 MiB objects carrying ~14,000 labels. The cost is
// watchers × labels × selector terms per event; the goal is that /livez and an unrelated GET (each on its
// own connection, polled every ~10 ms) answer within 100 ms p99 during it, and that the server's RSS returns
// within 20 % of its pre-attack level once the watchers are gone. The pre-attack level is a control run: the same
// creates on a fresh server with no watcher (the stored objects stay, so RSS before the creates is no measure).
// FANOUT_SETTLE_MS: how long after the watchers closed RSS is read (default 2 s); FANOUT_EXEC_ARGV: extra node
// flags for the server (e.g. --trace-gc).
import { readFileSync } from 'node:fs';
import { connect, type TLSSocket } from 'node:tls';
import { Agent, request as httpsRequest } from 'node:https';
import { Child, percentile, sleep } from '../lib/common.js';
import type { Tree } from '../lib/trees.js';
import type { Ctx, Row } from './types.js';

const NS = 'fanout';
const COLL = `/apis/farm.example.com/v1alpha/namespaces/${NS}/llamas`;
const MiB = 1024 * 1024;

export interface FanoutShape { watchers: number; selectorBytes: number; creates: number; labels: number }
export const FANOUT_FULL: FanoutShape = { watchers: 500, selectorBytes: 30 * 1024, creates: 50, labels: 14_000 };
export const FANOUT_QUICK: FanoutShape = { watchers: 200, selectorBytes: 30 * 1024, creates: 20, labels: 14_000 };

export interface FanoutResult {
  shape: FanoutShape;
  livez: { p50Ms: number; p99Ms: number; maxMs: number; polls: number };
  get: { p50Ms: number; p99Ms: number; maxMs: number; polls: number };
  maxLoopMs: number;
  /** Server CPU over the creates, and per create. */
  cpuMs: number;
  createsMs: number;
  rss: { beforeMiB: number; peakMiB: number; afterMiB: number };
  /** The server's heap, external and ArrayBuffer bytes (MiB) at the peak and after the watchers closed. */
  heap: { peak: Memory; after: Memory };
}
type Memory = { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
const inMiB = (m: Memory): Memory => ({ rss: m.rss / MiB, heapTotal: m.heapTotal / MiB, heapUsed: m.heapUsed / MiB, external: m.external / MiB, arrayBuffers: m.arrayBuffers / MiB });

/** The resident set of a process (VmRSS), in MiB. */
function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** A selector of `!k<i>-<salt>` terms: distinct per watcher, so nothing can share one match. */
function selector(bytes: number, salt: number): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) { const t = `!k${i}-${salt}`; parts.push(t); n += t.length + 1; }
  return parts.join(',');
}

function bigLlama(name: string, labels: number): string {
  const l: Record<string, string> = {};
  for (let i = 0; i < labels; i++) l[`label-${i.toString(36)}.example.com/key-${i}`] = `value-${i}-${'x'.repeat(20)}`;
  return JSON.stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels: l }, spec: { weight: 100, height: 1.5 } });
}

/** A watch over HTTP/1.1 whose client reads nothing after sending the request (the socket is paused). */
function silentWatch(port: number, ca: string, token: string, labelSelector: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca, ALPNProtocols: ['http/1.1'] }, () => {
      s.write(`GET ${COLL}?watch=1&labelSelector=${encodeURIComponent(labelSelector)} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      s.pause();
      resolve(s);
    });
    s.on('error', reject);
  });
}

/** Polls `path` every ~10 ms on a keep-alive connection of its own until stopped; latencies in ms. */
function poll(port: number, ca: string, token: string, path: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running && i < 100_000; i++) {
      const t0 = performance.now();
      await new Promise<void>((resolve) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path, ca, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
          res.resume();
          res.on('end', () => { if (res.statusCode === 200) latencies.push(performance.now() - t0); resolve(); });
          res.on('error', () => resolve());
        });
        req.setTimeout(60_000, () => req.destroy());
        req.on('error', () => resolve());
        req.end();
      });
      await sleep(10);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      agent.destroy();
      const s = [...latencies].sort((a, b) => a - b);
      return { p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s.length ? s[s.length - 1] : NaN, polls: s.length };
    },
  };
}

function post(port: number, ca: string, token: string, body: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: COLL, method: 'POST', ca, agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(120_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/** Runs the attack once against a fresh server of `tree`. */
export async function watchFanout(ctx: Ctx, tree: Tree, ca: string, shape: FanoutShape): Promise<FanoutResult> {
  const srv = await Child.start('procs/farmServer.ts', ['--cert-dir', ctx.certDir], { tree, execArgv: ['--expose-gc', ...(process.env.FANOUT_EXEC_ARGV?.split(' ') ?? [])] });
  const port = srv.info.port as number;
  const sockets: TLSSocket[] = [];
  try {
    await srv.call('seed', { namespace: 'other', count: 1 });
    // The heap after a full collection where the server's tree answers `memory` (an older baseline may not);
    // RSS from /proc, so it reads the same for any tree.
    const memory = async (): Promise<Memory> => {
      const heap = await srv.call<Memory>('memory').then(inMiB, () => ({ rss: NaN, heapTotal: NaN, heapUsed: NaN, external: NaN, arrayBuffers: NaN }));
      return { ...heap, rss: rssMiB(srv.proc.pid!) };
    };
    const mem = async () => (await memory()).rss;
    const beforeMiB = await mem();
    for (let i = 0; i < shape.watchers; i++) sockets.push(await silentWatch(port, ca, ctx.token, selector(shape.selectorBytes, i)));
    for (let i = 0; i < 500 && (await srv.call<number>('watchers')) < shape.watchers; i++) await sleep(20);
    const bodies = Array.from({ length: shape.creates }, (_, i) => bigLlama(`big-${i}`, shape.labels));
    let peakMiB = await mem();
    await srv.call('loopReset');
    const cpu0 = await srv.call<number>('cpu');
    const livez = poll(port, ca, ctx.token, '/livez');
    const get = poll(port, ca, ctx.token, '/apis/farm.example.com/v1alpha/namespaces/other/llamas/llama-000000');
    await sleep(100);
    const t0 = performance.now();
    for (const b of bodies) {
      const status = await post(port, ca, ctx.token, b);
      if (status !== 201) throw new Error(`create → ${status}`);
    }
    const createsMs = performance.now() - t0;
    await sleep(500);
    const [livezR, getR] = await Promise.all([livez.stop(), get.stop()]);
    const cpuMs = (await srv.call<number>('cpu')) - cpu0;
    const loop = await srv.call<{ maxMs: number }>('loopStats');
    const peak = await memory();
    peakMiB = Math.max(peakMiB, peak.rss);
    for (const s of sockets.splice(0)) s.destroy();
    for (let i = 0; i < 500 && (await srv.call<number>('watchers')) > 0; i++) await sleep(20);
    await sleep(Number(process.env.FANOUT_SETTLE_MS ?? 2000));
    const after = await memory();
    return { shape, livez: livezR, get: getR, maxLoopMs: loop.maxMs, cpuMs, createsMs, rss: { beforeMiB, peakMiB, afterMiB: after.rss }, heap: { peak, after } };
  } finally {
    for (const s of sockets) s.destroy();
    await srv.stop();
  }
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(x >= 100 ? 0 : 1) : '—');

/**
 * The loop-stall rows of the attack: /livez p99 against the same creates with no watcher (the control, a
 * fresh server), and RSS after the watchers closed against the control's. With a baseline tree, the
 * attack runs on it too and each row carries its value.
 */
export async function watchFanoutRows(ctx: Ctx, ca: string): Promise<{ rows: Row[]; detail: Record<string, unknown> }> {
  const shape = ctx.quick ? FANOUT_QUICK : FANOUT_FULL;
  const control = await watchFanout(ctx, ctx.ours, ca, { ...shape, watchers: 0 });
  const attack = await watchFanout(ctx, ctx.ours, ca, shape);
  const base = ctx.baseline ? await watchFanout(ctx, ctx.baseline, ca, shape) : undefined;
  const what = `${shape.watchers} silent watchers × ${shape.selectorBytes >> 10} KiB selectors, ${shape.creates} creates × ${shape.labels} labels`;
  for (const [label, r] of [['control (no watcher)', control], ['attack', attack], ...(base ? [[`attack at ${ctx.baseline!.label}`, base] as const] : [])] as const) {
    ctx.log(`  watch fan-out, ${label}: /livez p50 ${f1(r.livez.p50Ms)} p99 ${f1(r.livez.p99Ms)} max ${f1(r.livez.maxMs)} ms (${r.livez.polls} polls); GET p99 ${f1(r.get.p99Ms)} ms; `
      + `max loop block ${f1(r.maxLoopMs)} ms; server CPU ${f1(r.cpuMs)} ms (${f1(r.cpuMs / shape.creates)} per create); RSS ${f1(r.rss.beforeMiB)} → peak ${f1(r.rss.peakMiB)} → ${f1(r.rss.afterMiB)} MiB after`);
  }
  const cell = (ours: number, b: number | undefined) => (b === undefined ? {} : { baseline: { value: b, ratio: ours / b, better: 'lower' as const } });
  const rows: Row[] = [
    {
      bench: `loop stall: watch fan-out (${what})`, metric: '/livez p99 during the creates', unit: 'ms',
      ours: attack.livez.p99Ms, peer: control.livez.p99Ms, ratio: attack.livez.p99Ms / control.livez.p99Ms,
      reading: 'vs the same creates with no watcher; goal ≤ 100 ms',
      note: `max ${f1(attack.livez.maxMs)} ms; unrelated GET p99 ${f1(attack.get.p99Ms)} ms; max loop block ${f1(attack.maxLoopMs)} ms; server CPU ${f1(attack.cpuMs / shape.creates)} ms per create (control ${f1(control.cpuMs / shape.creates)})`,
      ...cell(attack.livez.p99Ms, base?.livez.p99Ms),
    },
    {
      bench: `watch fan-out memory (${what})`, metric: 'RSS after the watchers closed', unit: 'MiB',
      ours: attack.rss.afterMiB, peer: control.rss.afterMiB, ratio: attack.rss.afterMiB / control.rss.afterMiB,
      reading: 'vs the same creates with no watcher; goal ≤ 1.2',
      note: `peak ${f1(attack.rss.peakMiB)} MiB (control ${f1(control.rss.peakMiB)}); before ${f1(attack.rss.beforeMiB)} MiB`,
      ...cell(attack.rss.afterMiB, base?.rss.afterMiB),
    },
  ];
  return { rows, detail: { shape, control, attack, ...(base && { baseline: base }) } };
}
