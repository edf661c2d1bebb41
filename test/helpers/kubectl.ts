// Runs the REAL server (src/main.ts) as a child process and the REAL kubectl against it, with an
// isolated HOME (discovery/OpenAPI cache) and an explicit --kubeconfig: the user's config is never read.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const KUBECTL_BIN = process.env.KUBECTL ?? '/usr/bin/kubectl';

export interface KubectlResult { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

export interface KubectlOptions {
  /** Written to stdin (then closed). */
  input?: string;
  /** Extra environment (merged over the minimal isolated one). */
  env?: Record<string, string>;
  /** Kill the process after this long (default 20 s); the result then has signal SIGKILL. */
  timeoutMs?: number;
  /** Passed as --kubeconfig (and KUBECONFIG). Defaults to the last server started by startFarmServer. */
  kubeconfig?: string;
  /** HOME for kubectl (its ~/.kube cache). Defaults to the last server's home. */
  home?: string;
}

let defaults: { kubeconfig: string; home: string } | undefined;

function kubectlEnv(opts: KubectlOptions): { env: NodeJS.ProcessEnv; kubeconfig: string } {
  const kubeconfig = opts.kubeconfig ?? defaults?.kubeconfig;
  const home = opts.home ?? defaults?.home;
  if (!kubeconfig || !home) throw new Error('kubectl(): no kubeconfig/home (start a server first or pass them)');
  // A minimal environment: nothing from the user's kube/gcloud setup, no proxies.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    KUBECONFIG: kubeconfig,
    LANG: 'C.UTF-8',
    TMPDIR: process.env.TMPDIR ?? tmpdir(),
    ...opts.env,
  };
  return { env, kubeconfig };
}

/** Runs kubectl to completion. Never rejects on a non-zero exit: inspect code/stdout/stderr. */
export function kubectl(args: string[], opts: KubectlOptions = {}): Promise<KubectlResult> {
  const { env, kubeconfig } = kubectlEnv(opts);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(KUBECTL_BIN, ['--kubeconfig', kubeconfig, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolvePromise({ code, signal, stdout, stderr }); });
    child.stdin.on('error', () => { /* kubectl may exit before reading stdin */ });
    child.stdin.end(opts.input ?? '');
  });
}

export interface KubectlStream {
  child: ChildProcess;
  /** Everything written so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the full stdout once it matches (polled as data arrives); rejects after timeoutMs or on exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves when the process has exited. */
  exited: Promise<KubectlResult>;
  /** SIGTERM to this child only; resolves on exit. */
  stop(): Promise<KubectlResult>;
}

/** Starts a long-running kubectl (e.g. `get -w`) and exposes its output as it streams. */
export function spawnKubectl(args: string[], opts: KubectlOptions = {}): KubectlStream {
  const { env, kubeconfig } = kubectlEnv(opts);
  const child = spawn(KUBECTL_BIN, ['--kubeconfig', kubeconfig, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let done = false;
  const listeners = new Set<() => void>();
  const notify = () => { for (const l of [...listeners]) l(); };
  child.stdout!.setEncoding('utf8').on('data', (c: string) => { stdout += c; notify(); });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c; notify(); });
  const exited = new Promise<KubectlResult>((res) => {
    child.on('close', (code, signal) => { done = true; notify(); res({ code, signal, stdout, stderr }); });
    child.on('error', (e) => { done = true; stderr += String(e); notify(); res({ code: null, signal: null, stdout, stderr }); });
  });
  const hardTimer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  void exited.then(() => clearTimeout(hardTimer));
  return {
    child,
    get stdout() { return stdout; },
    get stderr() { return stderr; },
    exited,
    waitFor(pattern, timeoutMs = 10_000) {
      return new Promise((res, rej) => {
        const check = () => {
          if (pattern.test(stdout)) { cleanup(); res(stdout); } else if (done) {
            cleanup(); rej(new Error(`kubectl ${args.join(' ')} exited before ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup(); rej(new Error(`no ${pattern} within ${timeoutMs} ms from kubectl ${args.join(' ')}; stdout:\n${stdout}\nstderr:\n${stderr}`));
        }, timeoutMs);
        const cleanup = () => { clearTimeout(timer); listeners.delete(check); };
        listeners.add(check);
        check();
      });
    },
    async stop() {
      if (!done) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface FarmServer {
  dir: string;
  kubeconfig: string;
  port: number;
  /** kubectl's HOME (its discovery/OpenAPI cache lives in HOME/.kube). */
  home: string;
  /** Server stdout+stderr so far (for diagnostics). */
  readonly log: string;
  /** The child's exit, once it happens. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** kubectl bound to this server's kubeconfig and HOME. */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  spawnKubectl(args: string[], opts?: KubectlOptions): KubectlStream;
  /** SIGTERM the server and wait for its exit (idempotent). Does not remove dir: see cleanup(). */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stop() if still running, then remove the temp dir. */
  cleanup(): Promise<void>;
}

import { freePort } from '../cluster/controlPlane.js';

export { freePort };

function getStatus(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = httpsRequest(url, { ca, timeout: 2000 }, (r) => {
      let body = '';
      r.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `node --import tsx src/main.ts --cert-dir <tmp> --port <free>` and waits until the kubeconfig
 * is written and /readyz answers 200. Retries on a port race.
 */
export async function startFarmServer(opts: { startTimeoutMs?: number; extraArgs?: string[] } = {}): Promise<FarmServer> {
  const dir = await mkdtemp(join(tmpdir(), 'farm-kubectl-'));
  const home = join(dir, 'home');
  await mkdir(home);
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      const server = await launch(dir, home, port, opts);
      defaults = { kubeconfig: server.kubeconfig, home };
      return server;
    } catch (e) {
      lastError = e;
      if (!/EADDRINUSE/.test(String(e))) break;
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}

async function launch(dir: string, home: string, port: number, opts: { startTimeoutMs?: number; extraArgs?: string[] }): Promise<FarmServer> {
  const certDir = join(dir, 'certs');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--cert-dir', certDir, '--port', String(port), '--log-level', 'warn', ...(opts.extraArgs ?? [])], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: home, NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => { log += c; });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { log += c; });
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.on('exit', (code, signal) => { exitInfo = { code, signal }; res(exitInfo); });
  });
  const kubeconfig = join(certDir, 'kubeconfig');

  const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000);
  // main.ts prints "farm-apiserver is serving on …" after listen() and after writing the kubeconfig.
  while (!/is serving on https:/.test(log)) {
    if (exitInfo) throw new Error(`server exited early (${JSON.stringify(exitInfo)}):\n${log}`);
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`server did not start within the deadline:\n${log}`); }
    await sleep(50);
  }
  const ca = await readFile(join(certDir, 'ca.crt'), 'utf8');
  for (;;) {
    try {
      const r = await getStatus(`https://127.0.0.1:${port}/readyz`, ca);
      if (r.status === 200) break;
    } catch { /* not yet */ }
    if (exitInfo) throw new Error(`server exited early (${JSON.stringify(exitInfo)}):\n${log}`);
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`/readyz never answered 200:\n${log}`); }
    await sleep(100);
  }

  let stopping: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  const server: FarmServer = {
    dir, kubeconfig, port, home, exited,
    get log() { return log; },
    kubectl: (args, o = {}) => kubectl(args, { kubeconfig, home, ...o }),
    spawnKubectl: (args, o = {}) => spawnKubectl(args, { kubeconfig, home, ...o }),
    stop() {
      stopping ??= (async () => {
        if (!exitInfo) child.kill('SIGTERM');
        return exited;
      })();
      return stopping;
    },
    async cleanup() {
      if (!exitInfo) {
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await server.stop();
        clearTimeout(t);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
  return server;
}
