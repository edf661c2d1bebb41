// --workers N: N server processes on one port (node:cluster; the primary accepts connections and
// hands them out round-robin), so a pod uses N cores. Each worker is a whole server with its own
// watch cache, as a replica is; that is why more than one needs the etcd3 backend. The primary
// serves nothing: it prepares what the workers share, keeps N of them running, and on SIGTERM
// passes the signal on and exits once they have.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';

/** A worker that dies is replaced, but not faster than this (a crash loop must not spin the CPU). */
const RESTART_DELAY_MS = 1_000;

export const isWorker = () => cluster.isWorker;

/** The worker's number (1..N) in a --workers run; 0 in a single process. */
export const workerId = () => cluster.worker?.id ?? 0;

export function runPrimary(n: number, log: Logger): void {
  let stopping = false;
  const live = new Set<Worker>();
  const fork = () => {
    const w = cluster.fork();
    let listening = false;
    live.add(w);
    w.once('listening', () => { listening = true; });
    w.once('exit', (code, signal) => {
      live.delete(w);
      if (stopping) {
        if (live.size === 0) process.exit(process.exitCode ?? 0);
        return;
      }
      if (!listening) {
        // A worker that never served failed to start (it printed why): the server as a whole failed to start.
        stopping = true;
        for (const other of live) other.process.kill('SIGTERM');
        process.exitCode = 1;
        if (live.size === 0) process.exit(1);
        return;
      }
      log.warn({ worker: w.id, pid: w.process.pid, code, signal }, 'worker exited; starting another');
      setTimeout(() => { if (!stopping) fork(); }, RESTART_DELAY_MS).unref();
    });
  };
  for (let i = 0; i < n; i++) fork();
  log.info({ workers: n }, 'started workers sharing the port');
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping workers');
    for (const w of live) w.process.kill(signal);
    if (live.size === 0) process.exit(0);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGTERM'));
}
