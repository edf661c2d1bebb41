// Shared helpers for the benchmark processes: child processes with an IPC request/response channel,
// a cross-process clock, percentiles and free ports.
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const REPO_DIR = join(BENCH_DIR, '..');

/** Milliseconds on CLOCK_MONOTONIC: the same clock in every process of the machine (Linux). */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export { freePort } from '../../scripts/freePort.js';

interface Reply { id: number; result?: unknown; error?: string }

/** A benchmark child process (run through tsx) that answers `call(cmd, args)` over IPC. */
export class Child {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private readonly exited: Promise<number | null>;
  readonly events: { type: string; [k: string]: unknown }[] = [];
  /** The child's {type:'ready'} message. */
  info: Record<string, any> = {};
  private eventWaiters: (() => void)[] = [];

  private constructor(readonly name: string, readonly proc: ChildProcess) {
    proc.on('message', (m: any) => {
      if (m && typeof m.id === 'number') {
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        if ((m as Reply).error) p.reject(new Error(`${name}: ${(m as Reply).error}`));
        else p.resolve((m as Reply).result);
      } else if (m && typeof m.type === 'string') {
        this.events.push(m);
        const ws = this.eventWaiters;
        this.eventWaiters = [];
        for (const w of ws) w();
      }
    });
    this.exited = new Promise((resolve) => proc.on('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`${name} exited (${code})`));
      this.pending.clear();
      const ws = this.eventWaiters;
      this.eventWaiters = [];
      for (const w of ws) w();
      resolve(code);
    }));
  }

  /**
   * Forks <bench>/<script> with tsx and waits for its {type:'ready'} message. `tree` (bench/lib/trees.ts)
   * runs another checkout's copy of the script, from that checkout's root; default: this one.
   */
  static async start(script: string, args: string[] = [], opts: { execArgv?: string[]; silent?: boolean; tree?: { label: string; root: string; benchDir: string } } = {}): Promise<Child> {
    // BENCH_CPU_PROF=<dir>: CPU profiles of the server processes (read them with Chrome DevTools).
    const prof = process.env.BENCH_CPU_PROF && script === 'procs/farmServer.ts' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const proc = fork(join(opts.tree?.benchDir ?? BENCH_DIR, script), args, {
      execArgv: ['--import', 'tsx', ...prof, ...(opts.execArgv ?? [])],
      cwd: opts.tree?.root ?? REPO_DIR,
      stdio: ['ignore', opts.silent ? 'ignore' : 'inherit', 'inherit', 'ipc'],
    });
    const child = new Child(opts.tree && opts.tree.root !== REPO_DIR ? `${script} @${opts.tree.label}` : script, proc);
    child.info = await child.waitFor('ready');
    return child;
  }

  async waitFor(type: string, timeoutMs = 60_000): Promise<{ type: string; [k: string]: unknown }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.events.findIndex((e) => e.type === type);
      if (i >= 0) return this.events.splice(i, 1)[0];
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) throw new Error(`${this.name} exited before '${type}'`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.name}: no '${type}' within ${timeoutMs} ms`);
      await new Promise<void>((r) => { this.eventWaiters.push(r); setTimeout(r, Math.min(left, 1000)).unref(); });
    }
  }

  call<T = any>(cmd: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.send({ id, cmd, args });
    });
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(t);
  }
}

type Handler = (args: any) => unknown | Promise<unknown>;

/** Child side: answer the parent's calls, then announce readiness. */
export function serveIpc(handlers: Record<string, Handler>, ready: Record<string, unknown> = {}): void {
  process.on('message', async (m: any) => {
    if (!m || typeof m.id !== 'number') return;
    const h = handlers[m.cmd];
    try {
      if (!h) throw new Error(`unknown command ${m.cmd}`);
      process.send!({ id: m.id, result: await h(m.args) });
    } catch (e) {
      process.send!({ id: m.id, error: e instanceof Error ? e.stack ?? e.message : String(e) });
    }
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ type: 'ready', ...ready });
}

/** CPU time (user+system, ms) this process has used so far. */
export function cpuTotalMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
