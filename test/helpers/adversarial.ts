// Shared pieces of the adversarial suite: a client that keeps raw headers and bounds every request in
// time, the invariants every answer must satisfy, and namespace snapshots to prove "nothing changed".
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import type { TestServer } from './testServer.js';

export const GROUP_VERSION = '/apis/farm.example.com/v1alpha';
export const llamasOf = (ns: string) => `${GROUP_VERSION}/namespaces/${ns}/llamas`;

/** Fixed seeds: the suite is deterministic; a failure prints its seed and shrunk counterexample. */
export const SEED = 20_240_601;

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  /** Name/value pairs as received (repeated headers stay separate); values are the raw bytes as Latin-1. */
  rawHeaders: string[];
  body: string;
  ms: number;
}

export interface Outgoing {
  method: string;
  path: string;
  body?: string | Buffer;
  /** undefined: application/json when there is a body; null: no Content-Type header at all. */
  contentType?: string | null;
  headers?: Record<string, string>;
  /** A watch: resolve once the head (and the first bytes, if any come within 300 ms) arrived, then hang up. */
  stream?: boolean;
  timeoutMs?: number;
}

export interface Client {
  send(o: Outgoing): Promise<Reply>;
  close(): void;
}

/** Keep-alive HTTPS client; a request with no answer in time is an error naming the request. */
export function client(s: TestServer): Client {
  const agent = new Agent({ keepAlive: true, ca: s.caPem, maxSockets: 4 });
  const send = (o: Outgoing): Promise<Reply> => new Promise((resolve, reject) => {
    const started = Date.now();
    const headers: Record<string, string> = { authorization: `Bearer ${s.token}`, ...o.headers };
    if (o.body !== undefined) {
      if (o.contentType !== null) headers['content-type'] = o.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(o.body));
    }
    const timeoutMs = o.timeoutMs ?? 20_000;
    const what = `${o.method} ${o.path.slice(0, 300)}`;
    const req = httpsRequest(`${s.url}${o.path}`, { method: o.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      const finish = () => resolve({
        status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started,
      });
      res.on('data', (c: Buffer) => chunks.push(c));
      if (o.stream && res.statusCode === 200) {
        const t = setTimeout(() => { finish(); req.destroy(); }, 300);
        res.once('data', () => setTimeout(() => { clearTimeout(t); finish(); req.destroy(); }, 20));
        res.on('error', () => undefined);
        return;
      }
      res.on('end', finish);
      res.on('error', (e) => reject(new Error(`${what}: response broke off: ${e.message}`)));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${what}: no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => {
      if (o.stream && /socket hang up|aborted/.test(e.message) && req.destroyed) return;
      reject(new Error(`${what}: ${e.message}`));
    });
    req.end(o.body);
  });
  return { send, close: () => agent.destroy() };
}

/** One request on a fresh TLS socket with exactly the bytes given (what Node's client refuses to send). */
export function rawExchange(s: TestServer, bytes: Buffer, timeoutMs = 10_000): Promise<{ head: string; status: number; body: string }> {
  const { port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const sock = tlsConnect({ host: '127.0.0.1', port: Number(port), ca: s.caPem, servername: 'localhost' }, () => sock.end(bytes));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`no answer within ${timeoutMs} ms to ${JSON.stringify(bytes.toString('latin1').slice(0, 120))}`)); }, timeoutMs);
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', () => undefined); // a reset after the answer is fine; no answer is caught below
    sock.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const head = end < 0 ? text : text.slice(0, end);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({ head, status: m ? Number(m[1]) : 0, body: end < 0 ? '' : text.slice(end + 4) });
    });
  });
}

export interface StatusBody { kind: string; apiVersion: string; status: string; code: number; reason?: string; message?: string; details?: { causes?: { reason?: string; message?: string; field?: string }[] } }

/** The rule for every answer: never 5xx for a client's mistake; anything not 2xx is a metav1.Status. */
export function assertWellFormed(r: { status: number; body: string }, context: string): void {
  assert.ok(r.status >= 200 && r.status < 500, `${context} → ${r.status} ${r.body.slice(0, 400)}`);
  if (r.status >= 300) assertStatus(r, r.status, context);
}

export function assertStatus(r: { status: number; body: string }, code: number, context: string, message?: RegExp): StatusBody {
  assert.equal(r.status, code, `${context} → ${r.status} ${r.body.slice(0, 400)}`);
  let st: StatusBody;
  try {
    st = JSON.parse(r.body) as StatusBody;
  } catch {
    assert.fail(`${context} → ${r.status} with a body that is not JSON: ${JSON.stringify(r.body.slice(0, 200))}`);
  }
  assert.equal(st.kind, 'Status', `${context}: ${r.body.slice(0, 300)}`);
  assert.equal(st.apiVersion, 'v1', `${context}: ${r.body.slice(0, 300)}`);
  assert.equal(st.code, r.status, `${context}: Status.code ${st.code} ≠ HTTP ${r.status}`);
  assert.equal(st.status, 'Failure', `${context}: ${r.body.slice(0, 300)}`);
  if (message) assert.match(st.message ?? '', message, `${context}: ${st.message?.slice(0, 300)}`);
  return st;
}

/** The namespace's llamas as a list shows them, minus the list's own resourceVersion (which moves with other namespaces). */
export async function snapshot(c: Client, ns: string): Promise<string> {
  const r = await c.send({ method: 'GET', path: llamasOf(ns) });
  assert.equal(r.status, 200, `snapshot of ${ns}: ${r.body.slice(0, 300)}`);
  const list = JSON.parse(r.body) as { metadata: { resourceVersion?: string } };
  delete list.metadata.resourceVersion;
  return JSON.stringify(list);
}

/** The server answers its liveness check within the bound. */
export async function assertResponsive(c: Client, boundMs = 2_000): Promise<void> {
  const r = await c.send({ method: 'GET', path: '/livez', timeoutMs: boundMs });
  assert.equal(r.status, 200, `/livez → ${r.status} ${r.body.slice(0, 200)}`);
  assert.ok(r.ms <= boundMs, `/livez took ${r.ms} ms`);
}

/** Warning header values, one per header as sent, decoded from the UTF-8 bytes on the wire. */
export function warningHeaders(r: Reply): string[] {
  const out: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    if (r.rawHeaders[i].toLowerCase() === 'warning') out.push(Buffer.from(r.rawHeaders[i + 1], 'latin1').toString('utf8'));
  }
  return out;
}

export const llama = (name: string, spec: Record<string, unknown> = { weight: 80, height: 1.2 }) =>
  ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec });

/** Creates the llama if it is not there (a property may have deleted it). */
export async function ensureLlama(c: Client, ns: string, name: string): Promise<void> {
  const got = await c.send({ method: 'GET', path: `${llamasOf(ns)}/${name}` });
  if (got.status === 200) return;
  const r = await c.send({ method: 'POST', path: llamasOf(ns), body: JSON.stringify(llama(name)) });
  assert.equal(r.status, 201, `seeding ${ns}/${name}: ${r.body.slice(0, 300)}`);
}

/** fast-check parameters shared by the suite: fixed seed, bounded runs, bounded time (shrinking included). */
// includeErrorInReport: the failed assertion's message goes into the report next to the shrunk counterexample.
export function runs(numRuns: number, timeLimitMs = 15_000): { seed: number; numRuns: number; interruptAfterTimeLimit: number; markInterruptAsFailure: boolean; includeErrorInReport: boolean } {
  return { seed: SEED, numRuns, interruptAfterTimeLimit: timeLimitMs, markInterruptAsFailure: true, includeErrorInReport: true };
}
