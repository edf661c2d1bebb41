// The servers of the peer benchmark as its suite sees them, and a one-off HTTPS request to them.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';

/** ours = our server with the memory backend (the rows' names predate etcd3), etcd3 = ours on etcd, peer = sample-apiserver. */
export type Who = 'ours' | 'etcd3' | 'peer';

export const LABEL: Record<Who, string> = { ours: 'ours-memory', etcd3: 'ours-etcd3', peer: 'sample-apiserver' };

/** One server under test: where it listens, how to reach it, which processes' CPU it costs. */
export interface Server {
  who: Who; label: string; port: number; caFile: string; pid: number;
  /** Other processes the request costs (the etcd of sample-apiserver and of ours-etcd3), reported separately. */
  helperPids: number[];
  /** Path of the collection in namespace `ns`. */
  coll(ns: string): string;
  /** An object's JSON (loadgen templates allowed) with this metadata, in namespace `ns`. */
  body(ns: string, meta: Record<string, unknown>): string;
  created: number;
  /** Ours: can sit behind APIService v1alpha.farm.example.com (one of our instances at a time). */
  aggregated?: { oneUid: string };
}

/** A body outside the load generator: no templates left. */
export const fixed = (body: string) => body.replaceAll('{{seq}}', '0');

/** A one-off HTTPS request (setup, the watch writer). */
export function call(port: number, caFile: string, method: string, path: string, o: { headers?: Record<string, string>; body?: string; cert?: string; key?: string; agent?: Agent } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, method, path, servername: 'localhost', agent: o.agent ?? false, timeout: 30_000,
      ca: readFileSync(caFile), cert: o.cert ? readFileSync(o.cert) : undefined, key: o.key ? readFileSync(o.key) : undefined,
      headers: { accept: 'application/json', ...(o.body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(o.body) } : {}), ...o.headers },
    }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.on('error', reject);
    req.end(o.body);
  });
}
