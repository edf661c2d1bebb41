// Raw HTTPS access to the core kube-apiserver: credentials from a kubeconfig or in-cluster config
// (client-node loads them), bodies kept as raw JSON so no field of newer API versions is lost.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { readFile } from 'node:fs/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { LineReader } from '../apimachinery/ndjson.js';
import { outgoingCall } from '../apimachinery/tracing.js';

export interface UpstreamResponse<T> { status: number; body: T; text: string }

export class UpstreamError extends Error {
  constructor(readonly status: number, message: string, readonly body?: unknown) { super(message); }
}

export class Upstream {
  /** Counts every call made to kube-apiserver, by purpose; FarmPod requests must not add to it. */
  readonly calls = new Map<string, number>();

  private constructor(readonly kc: KubeConfig, readonly server: string, private readonly onCall?: (purpose: string) => void) {}

  /**
   * In-cluster config wins when we run in a pod (also under mirrord); otherwise the given kubeconfig.
   * `onCall` is told of every call as it is counted (e.g. to feed a metrics counter).
   */
  static async load(opts: { kubeconfig?: string; inCluster: boolean; onCall?: (purpose: string) => void }): Promise<Upstream> {
    // Loaded on demand: a standalone server never needs client-node.
    const { KubeConfig } = await import('./kubeConfig.js');
    const kc = new KubeConfig();
    if (opts.inCluster) kc.loadFromCluster();
    else if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
    else throw new Error('no kubeconfig and not running in a cluster');
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    if (!/^https?:\/\//.test(cluster.server) || !URL.canParse(cluster.server)) {
      throw new Error(`the server of cluster ${JSON.stringify(cluster.name)} is not an http(s) URL: ${JSON.stringify(cluster.server)}`);
    }
    // client-node reads these at the first request; like client-go, fail at start-up when one is unreadable.
    const user = kc.getCurrentUser();
    for (const file of [cluster.caFile, user?.certFile, user?.keyFile]) if (file) await readFile(file);
    return new Upstream(kc, cluster.server.replace(/\/$/, ''), opts.onCall);
  }

  private count(purpose: string): void {
    this.calls.set(purpose, (this.calls.get(purpose) ?? 0) + 1);
    this.onCall?.(purpose);
  }

  private async options(method: string, headers: Record<string, string>): Promise<RequestOptions> {
    const opts: RequestOptions = { method, headers: { accept: 'application/json', ...headers } };
    await this.kc.applyToHTTPSOptions(opts);
    return opts;
  }

  async request<T>(purpose: string, method: string, path: string, body?: unknown, timeoutMs = 10_000): Promise<UpstreamResponse<T>> {
    this.count(purpose);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const url = `${this.server}${path}`;
    // Within a traced request (TokenReview, SubjectAccessReview): a client span, and kube-apiserver joins the trace.
    const call = outgoingCall(method, new URL(url));
    const opts = await this.options(method, { ...(payload ? { 'content-type': 'application/json' } : {}), ...call?.headers });
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const response = new Promise<UpstreamResponse<T>>((resolve, reject) => {
      const req = send(url, { ...opts, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = undefined;
          try { parsed = text ? JSON.parse(text) : undefined; } catch { /* non-JSON error page */ }
          resolve({ status: res.statusCode ?? 0, body: parsed as T, text });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${path}`)));
      req.on('error', reject);
      req.end(payload);
    });
    if (!call) return response;
    return response.then((r) => { call.done(r.status); return r; }, (e: Error) => { call.done(undefined, e); throw e; });
  }

  /** A watch: newline-delimited events until the server ends the stream, an error, or abort. */
  async watch(purpose: string, path: string, onEvent: (type: string, object: Record<string, unknown>) => void, signal: AbortSignal): Promise<void> {
    this.count(purpose);
    const opts = await this.options('GET', {});
    const url = `${this.server}${path}`;
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, { ...opts, signal }, (res) => {
        if (res.statusCode !== 200) {
          let text = '';
          res.on('data', (c: Buffer) => { text += c.toString('utf8'); });
          res.on('end', () => reject(new UpstreamError(res.statusCode ?? 0, `watch ${path}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`)));
          return;
        }
        const lines = new LineReader();
        res.on('data', (chunk: Buffer) => {
          for (const raw of lines.push(chunk)) {
            const line = raw.trim();
            if (!line) continue;
            try {
              const ev = JSON.parse(line) as { type: string; object: Record<string, unknown> };
              onEvent(ev.type, ev.object);
            } catch (e) {
              req.destroy(e as Error);
              return; // nothing after a failed event may be applied
            }
          }
        });
        res.on('end', () => resolve());
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('watch aborted')));
      });
      req.on('error', (e) => (signal.aborted ? resolve() : reject(e)));
      req.end();
    });
  }
}
