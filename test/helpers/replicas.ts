// Replicas of our real server process (src/main.ts, standalone) on one etcd: each on its own loopback
// port, all sharing one cert dir (so one token and CA), each killable (SIGTERM or SIGKILL) and
// restartable on the same port, as a rollout or a crash would do to a pod.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { request as httpsRequest, Agent } from 'node:https';
import { join, resolve } from 'node:path';
import { ensureDevCerts, ensureToken } from '../../src/certs/devCerts.js';
import { freePort } from '../cluster/controlPlane.js';
import { startEtcd, type TestEtcd } from './etcd.js';
import { lineStream } from './lineStream.js';
import type { Response, Stream } from './testServer.js';

const ROOT = resolve(import.meta.dirname, '../..');
const READY_TIMEOUT_MS = 60_000;

export interface Replica {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly log: string;
  /** One request with the shared token, on this replica's keep-alive connections. */
  request(method: string, path: string, body?: unknown, opts?: { headers?: Record<string, string>; timeoutMs?: number; contentType?: string; fresh?: boolean }): Promise<Response>;
  /** A streaming GET (watch), read line by line. */
  stream(path: string): Promise<Stream>;
  /** Sends the signal and waits for the exit (SIGKILL: a crash; SIGTERM: a graceful stop); its exit code. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
  /** Starts the process again on the same port; resolves once /readyz is 200. */
  start(): Promise<void>;
  readonly running: boolean;
}

export interface ReplicaSetOptions {
  dir: string;
  etcdUrl: string;
  /** Extra flags for every replica (e.g. --watch-history 50). */
  args?: string[];
}

export interface ReplicaSet {
  token: string;
  caPem: string;
  certDir: string;
  /** A new replica (started; resolves once it is ready). */
  add(name: string, args?: string[]): Promise<Replica>;
  /** SIGKILLs every replica still running. */
  stopAll(): Promise<void>;
}

const all = new Set<ChildProcess>();
process.on('exit', () => { for (const c of all) c.kill('SIGKILL'); });

export async function replicaSet(opts: ReplicaSetOptions): Promise<ReplicaSet> {
  const certDir = join(opts.dir, 'certs');
  await ensureDevCerts(certDir);
  const token = await ensureToken(certDir);
  const caPem = readFileSync(join(certDir, 'ca.crt'), 'utf8');
  const replicas: Replica[] = [];

  const add = async (name: string, args: string[] = []): Promise<Replica> => {
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const log = join(opts.dir, `${name}.log`);
    let child: ChildProcess | undefined;
    let exited: Promise<number | null> = Promise.resolve(null);
    // Reused connections: a TLS handshake per request would cost more than the request.
    let agent = new Agent({ keepAlive: true, maxSockets: 16 });

    const request: Replica['request'] = (method, path, body, o = {}) => new Promise((res, rej) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...o.headers };
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      if (payload !== undefined) headers['content-type'] = o.contentType ?? 'application/json';
      const req = httpsRequest(`${url}${path}`, { method, headers, ca: caPem, agent: o.fresh ? false : agent, timeout: o.timeoutMs ?? 30_000 }, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          res({ status: r.statusCode ?? 0, headers: r.headers, body: text, json: () => JSON.parse(text) });
        });
        r.on('error', rej);
      });
      req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${url}${path}`)));
      req.on('error', rej);
      req.end(payload);
    });

    const stream: Replica['stream'] = (path) => new Promise((res, rej) => {
      // Its own connection: a watch holds it for as long as it runs.
      const req = httpsRequest(`${url}${path}`, { method: 'GET', headers: { authorization: `Bearer ${token}` }, ca: caPem, agent: false }, (r) => {
        res(lineStream(r, r.statusCode ?? 0, () => req.destroy()));
      });
      req.on('error', (e) => { if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') rej(e); });
      req.end();
    });

    const start = async () => {
      agent.destroy();
      agent = new Agent({ keepAlive: true, maxSockets: 16 });
      const fd = openSync(log, 'a');
      const c = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/main.ts'),
        '--port', String(port), '--cert-dir', certDir, '--log-level', 'info',
        '--storage-backend', 'etcd3', '--etcd-servers', opts.etcdUrl, ...(opts.args ?? []), ...args],
      { cwd: ROOT, stdio: ['ignore', fd, fd], env: { PATH: process.env.PATH ?? '', HOME: opts.dir } });
      closeSync(fd);
      child = c;
      all.add(c);
      exited = new Promise((r) => c.once('exit', (code) => { all.delete(c); r(code); }));
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (Date.now() < deadline) {
        if (c.exitCode !== null || c.signalCode !== null) break;
        const ready = await request('GET', '/readyz', undefined, { timeoutMs: 2_000 }).then((r) => r.status === 200, () => false);
        if (ready) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      c.kill('SIGKILL');
      throw new Error(`replica ${name} not ready within ${READY_TIMEOUT_MS} ms; its log:\n${readFileSync(log, 'utf8').slice(-3000)}`);
    };

    const replica: Replica = {
      name, port, url, log, request, stream, start,
      get running() { return child !== undefined && child.exitCode === null && child.signalCode === null; },
      async kill(signal) {
        const c = child;
        child = undefined;
        agent.destroy();
        if (c && c.exitCode === null && c.signalCode === null) c.kill(signal);
        return exited;
      },
    };
    await start();
    replicas.push(replica);
    return replica;
  };

  return {
    token, caPem, certDir, add,
    async stopAll() { await Promise.all(replicas.map((r) => r.kill('SIGKILL'))); },
  };
}

/** A replica set on an etcd of its own, in a temp dir: what each replica suite starts with. */
export interface EtcdReplicas { dir: string; etcd: TestEtcd; set: ReplicaSet; close(): Promise<void> }

export async function etcdReplicas(name: string, args: string[] = []): Promise<EtcdReplicas> {
  const dir = await mkdtemp(join(tmpdir(), `farm-${name}-`));
  const etcd = await startEtcd();
  const set = await replicaSet({ dir, etcdUrl: etcd.url, args });
  return {
    dir, etcd, set,
    async close() {
      await set.stopAll();
      await etcd.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
