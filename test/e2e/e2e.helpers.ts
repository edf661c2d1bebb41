// Shared helpers for the real-cluster e2e tests (aggregator.test.ts, auth.test.ts): raw HTTPS calls,
// polling, throw-away CAs/client certs, a streaming kubectl child, and reading our server's log.
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request, type Agent } from 'node:https';

export interface HttpsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The client side's port of the connection the answer came on (tells a reused connection apart). */
  localPort?: number;
  /** JSON.parse(body), or undefined when the body is not JSON */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface HttpsCall {
  url: string;
  method?: string;
  /** PEM text or a file path (anything not starting with "-----BEGIN" is read as a file) */
  ca?: string;
  cert?: string;
  key?: string;
  headers?: Record<string, string | string[]>;
  body?: unknown;
  timeoutMs?: number;
  /** A keep-alive agent to reuse connections; default: a fresh connection per call. */
  agent?: Agent;
}

const pem = (v: string | undefined) => (v === undefined ? undefined : v.startsWith('-----BEGIN') ? v : readFileSync(v, 'utf8'));

/** One HTTPS request with node:https (own TLS client cert, no connection reuse). */
export function https(c: HttpsCall): Promise<HttpsResult> {
  return new Promise((res, rej) => {
    const body = c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
    const headers: Record<string, string | string[]> = { ...(c.headers ?? {}) };
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
    const req = request(c.url, {
      method: c.method ?? 'GET', headers, agent: c.agent ?? false,
      ca: pem(c.ca), cert: pem(c.cert), key: pem(c.key),
      timeout: c.timeoutMs ?? 15_000,
    }, (r) => {
      // Read while the socket is open: once a response ends its socket may be closed (port undefined).
      const localPort = r.socket?.localPort;
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d: string) => (text += d));
      r.on('end', () => {
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        res({ status: r.statusCode ?? 0, headers: r.headers, body: text, json, localPort });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${c.method ?? 'GET'} ${c.url}`)));
    req.on('error', rej);
    req.end(body);
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value other than undefined/false; throws with `what` and the last value on timeout. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined | false>, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await sleep(intervalMs);
  }
}

export { makeCa, makeClientCert, type Pem } from '../helpers/pki.js';

/** A long-running kubectl (e.g. `get -w`) whose stdout is collected as it arrives. */
export interface StreamingKubectl {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with stdout once `re` matches stdout or stderr; rejects after timeoutMs or if kubectl exits first. */
  waitFor(re: RegExp, timeoutMs: number): Promise<string>;
  stop(): Promise<void>;
}

export function spawnKubectl(args: string[], opts: { kubeconfig: string; home: string }): StreamingKubectl {
  const child = spawn('kubectl', ['--kubeconfig', opts.kubeconfig, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: opts.home }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; for (const l of listeners) l(); });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; for (const l of listeners) l(); });
  const exited = new Promise<void>((r) => child.once('exit', () => { for (const l of listeners) l(); r(); }));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitFor(re, timeoutMs) {
      return new Promise((res, rej) => {
        const check = () => {
          if (re.test(out) || re.test(err)) { done(); res(out); } else if (child.exitCode !== null || child.signalCode !== null) {
            done(); rej(new Error(`kubectl ${args.join(' ')} exited (${child.exitCode ?? child.signalCode}) before ${re}; stdout:\n${out}\nstderr:\n${err}`));
          }
        };
        const timer = setTimeout(() => { done(); rej(new Error(`kubectl ${args.join(' ')}: no ${re} within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`)); }, timeoutMs);
        const done = () => { clearTimeout(timer); listeners.delete(check); };
        listeners.add(check);
        check();
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(3000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

export interface LoggedUser { username: string; uid?: string; groups: string[]; extra: Record<string, string[]> }

/**
 * The identities our server authenticated for requests whose URL matches `url`, from its pino log at
 * debug level (src/server/server.ts logs `{user}` with msg "authenticated" per request; lines share their `auditID`, fastify's request id).
 */
export function authenticatedUsers(logFile: string, url: RegExp): AuthenticatedRequest[] {
  const lines = readFileSync(logFile, 'utf8').split('\n').flatMap((l) => {
    try { return [JSON.parse(l) as { auditID?: string; msg?: string; req?: { url?: string; remotePort?: number }; user?: LoggedUser; httpVersion?: string }]; } catch { return []; }
  });
  const reqs = new Map<string, { url: string; remotePort?: number }>();
  for (const l of lines) if (l.auditID && l.msg === 'incoming request' && l.req?.url) reqs.set(l.auditID, { url: l.req.url, remotePort: l.req.remotePort });
  const out: AuthenticatedRequest[] = [];
  for (const l of lines) {
    if (l.msg !== 'authenticated' || !l.auditID || !l.user) continue;
    const r = reqs.get(l.auditID);
    if (r !== undefined && url.test(r.url)) out.push({ auditID: l.auditID, url: r.url, user: l.user, httpVersion: l.httpVersion, remotePort: r.remotePort });
  }
  return out;
}

export interface AuthenticatedRequest { auditID: string; url: string; user: LoggedUser; httpVersion?: string; remotePort?: number }

/** A Llama manifest. */
export function llama(name: string, namespace: string, extra: { labels?: Record<string, string>; finalizers?: string[]; ownerReferences?: unknown[]; spec?: Record<string, unknown> } = {}) {
  return {
    apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
    metadata: {
      name, namespace,
      ...(extra.labels ? { labels: extra.labels } : {}),
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
      ...(extra.ownerReferences ? { ownerReferences: extra.ownerReferences } : {}),
    },
    spec: { weight: 120, height: 1.7, ...(extra.spec ?? {}) },
  };
}

/** SHA-256 fingerprints of the certificates in a PEM bundle (PEM text differs in line endings between encoders). */
export function fingerprints(bundle: string): string[] {
  return (bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((b) => new X509Certificate(b).fingerprint256);
}
