// Child process: many concurrent watch streams (one TLS connection each). Every event line is
// stamped with its arrival time; at the end the parent hands over what was written (rv, sent, ack)
// and gets back latencies and lost / duplicated / out-of-order counts.
import { readFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { request } from 'node:https';
import { LineReader } from '../../src/apimachinery/ndjson.js';
import { nowMs, serveIpc, sleep } from '../lib/common.js';

interface Stream { req: ClientRequest; lines: LineReader; rvs: number[]; at: number[]; errors: number; ended: boolean; lastRv: number }

const groups = new Map<string, Stream[]>();
let firstError: string | undefined;
const rvRe = /"resourceVersion":"(\d+)"/;

function onLine(s: Stream, line: string, at: number): void {
  if (line === '') return;
  if (line.startsWith('{"type":"BOOKMARK"')) return;
  if (line.startsWith('{"type":"ERROR"')) { s.errors++; firstError ??= line.slice(0, 300); return; }
  const m = rvRe.exec(line);
  if (!m) { s.errors++; firstError ??= `no resourceVersion: ${line.slice(0, 200)}`; return; }
  const rv = Number(m[1]);
  s.rvs.push(rv);
  s.at.push(at);
  s.lastRv = rv;
}

function open(streams: Stream[], port: number, path: string, headers: Record<string, string>, ca: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const s: Stream = { req: undefined as never, lines: new LineReader(), rvs: [], at: [], errors: 0, ended: false, lastRv: 0 };
    s.req = request({ host: '127.0.0.1', port, path, headers, ca, servername: 'localhost', agent: false }, (res) => {
      if (res.statusCode !== 200) { reject(new Error(`watch ${path}: status ${res.statusCode}`)); res.resume(); return; }
      res.on('data', (chunk: Buffer) => {
        const at = nowMs();
        for (const line of s.lines.push(chunk)) onLine(s, line, at);
      });
      res.on('end', () => { s.ended = true; });
      res.on('close', () => { s.ended = true; });
      streams.push(s);
      resolve();
    });
    s.req.on('error', (e: Error) => { s.ended = true; firstError ??= e.message; reject(e); });
    s.req.end();
  });
}

interface Written { rv: number; sentMs: number; ackMs: number }

serveIpc({
  /** Opens `count` streams of the named group, `batch` handshakes at a time. */
  async open({ group, port, path, headers, count, caFile, batch = 50 }: { group: string; port: number; path: string; headers: Record<string, string>; count: number; caFile: string; batch?: number }) {
    const ca = readFileSync(caFile);
    const streams = groups.get(group) ?? [];
    groups.set(group, streams);
    for (let i = 0; i < count; i += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, count - i) }, () => open(streams, port, path, headers, ca)));
    }
    return streams.length;
  },
  /** Waits until every stream saw `lastRv` (or the timeout), then scores what arrived against `written`. */
  async collect({ group, written, timeoutMs }: { group: string; written: Written[]; timeoutMs: number }) {
    const streams = groups.get(group) ?? [];
    const lastRv = written[written.length - 1]?.rv ?? 0;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && streams.some((s) => !s.ended && s.lastRv < lastRv)) await sleep(20);
    const byRv = new Map(written.map((w) => [w.rv, w]));
    const fromAck: number[] = [];
    const fromSent: number[] = [];
    let lost = 0, duplicated = 0, outOfOrder = 0, unexpected = 0, errors = 0, endedEarly = 0;
    for (const s of streams) {
      const seen = new Set<number>();
      let prev = -Infinity;
      for (let i = 0; i < s.rvs.length; i++) {
        const rv = s.rvs[i];
        if (seen.has(rv)) duplicated++;
        else if (rv < prev) outOfOrder++;
        seen.add(rv);
        prev = Math.max(prev, rv);
        const w = byRv.get(rv);
        if (!w) { unexpected++; continue; }
        fromAck.push(s.at[i] - w.ackMs);
        fromSent.push(s.at[i] - w.sentMs);
      }
      for (const w of written) if (!seen.has(w.rv)) lost++;
      errors += s.errors;
      if (s.ended) endedEarly++;
    }
    return { streams: streams.length, events: fromAck.length, lost, duplicated, outOfOrder, unexpected, errors, endedEarly, firstError, fromAck, fromSent };
  },
  /** Forgets what the group's streams received so far (after warm-up writes). */
  reset({ group }: { group: string }) {
    for (const s of groups.get(group) ?? []) { s.rvs = []; s.at = []; s.lastRv = 0; }
    return true;
  },
  close() {
    for (const streams of groups.values()) for (const s of streams.splice(0)) s.req.destroy();
    return true;
  },
});
